package rig

import (
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"looprig/internal/textsafe"
	"looprig/rig/event"
)

// signals reads out whole, in chunks cut at cuts, and returns every
// signal found.
func signals(out string, cuts ...int) []attentionSignal {
	var d attentionDetector
	var got []attentionSignal
	note := func(s attentionSignal) { got = append(got, s) }
	prev := 0
	for _, c := range cuts {
		d.each(out[prev:c], note)
		prev = c
	}
	d.each(out[prev:], note)
	return got
}

var (
	bell   = attentionSignal{reason: event.AttentionBell}
	osc9   = func(text string) attentionSignal { return attentionSignal{reason: event.AttentionOSC9, text: text} }
	osc777 = func(text string) attentionSignal { return attentionSignal{reason: event.AttentionOSC777, text: text} }
)

// detectorCases are outputs and the signals in them.
var detectorCases = []struct {
	name string
	out  string
	want []attentionSignal
}{
	{"plain text", "hello\nworld\n", nil},
	{"a bell", "done\a\n", []attentionSignal{bell}},
	{"two bells", "\a\a", []attentionSignal{bell, bell}},
	{"a bell right after ESC", "\x1b\a", []attentionSignal{bell}},
	{"a bell inside a CSI", "\x1b[3\a1m", []attentionSignal{bell}},
	{"BEL ends a title OSC", "\x1b]0;my title\a and text", nil},
	{"BEL ends a hyperlink OSC", "\x1b]8;;http://x\athe link\x1b]8;;\a", nil},
	{"BEL ends a DCS", "\x1bPq#0;2;0;0;0\a", nil},
	{"BEL ends an APC", "\x1b_Gf=100;AAAA\a", nil},
	{"a bell after a DCS ended by ST", "\x1bP1$r0m\x1b\\\a", []attentionSignal{bell}},
	{"OSC 9 ended by BEL", "\x1b]9;build done\a", []attentionSignal{osc9("build done")}},
	{"OSC 9 ended by ST", "\x1b]9;tests passed\x1b\\", []attentionSignal{osc9("tests passed")}},
	{"OSC 9 without text", "\x1b]9;\a", []attentionSignal{osc9("")}},
	{"OSC 9 without a semicolon", "\x1b]9\a", nil},
	{"OSC 9;4 progress", "\x1b]9;4;1;50\a\x1b]9;4;0\x1b\\", nil},
	{"OSC 9;9 working directory", "\x1b]9;9;/home/dev\a", nil},
	{"OSC 9;1 sleep", "\x1b]9;1\a", nil},
	{"OSC 9 text that starts with a number", "\x1b]9;3 tests failed\a", []attentionSignal{osc9("3 tests failed")}},
	{"OSC 99 is not 9", "\x1b]99;i=1;hello\a", nil},
	{"OSC 777 notify", "\x1b]777;notify;Claude;waits for you\a", []attentionSignal{osc777("Claude: waits for you")}},
	{"OSC 777 notify, title only", "\x1b]777;notify;Done\x1b\\", []attentionSignal{osc777("Done")}},
	{"OSC 777 notify, body only", "\x1b]777;notify;;the body\a", []attentionSignal{osc777("the body")}},
	{"OSC 777 notify, body with semicolons", "\x1b]777;notify;t;a;b\a", []attentionSignal{osc777("t: a;b")}},
	{"OSC 777 preexec", "\x1b]777;preexec\a\x1b]777;precmd\a", nil},
	{"CAN cancels an OSC", "\x1b]9;never\x18\a", []attentionSignal{bell}},
	{"SUB cancels an OSC", "\x1b]9;never\x1a", nil},
	{"an ESC that is not ST cancels an OSC", "\x1b]9;never\x1b[31mred\a", []attentionSignal{bell}},
	{"an ESC that is not ST starts an OSC", "\x1b]0;title\x1b]9;yes\a", []attentionSignal{osc9("yes")}},
	{"ESC ESC ]", "\x1b\x1b]9;twice\a", []attentionSignal{osc9("twice")}},
	{"controls inside an OSC are ignored", "\x1b]9;a\x01b\r\nc\a", []attentionSignal{osc9("abc")}},
	{"C1 bytes of UTF-8 text are text", "Ý\u009d\u0090\u009c", nil},
	{"notification text made printable", "\x1b]9;red \u202eevil\u200f\x7f end\a", []attentionSignal{osc9("red  evil   end")}},
	{"invalid UTF-8 in the text", "\x1b]9;bad \xff byte\a", []attentionSignal{osc9("bad \uFFFD byte")}},
	{"an OSC too long is dropped", "\x1b]9;" + strings.Repeat("x", maxOSC) + "\a\a", []attentionSignal{bell}},
	{"an OSC of maxOSC bytes is read", "\x1b]9;" + strings.Repeat("x", maxOSC-2) + "\a", []attentionSignal{osc9(strings.Repeat("x", event.MaxAttentionText))}},
	{"a long clipboard write is dropped", "\x1b]52;c;" + strings.Repeat("QUFB", 5000) + "\a", nil},
}

func TestAttentionDetector(t *testing.T) {
	for _, c := range detectorCases {
		t.Run(c.name, func(t *testing.T) {
			if got := signals(c.out); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("signals of %q:\n got %q\nwant %q", c.out, got, c.want)
			}
		})
	}
}

// A sequence split across chunks reads as it does whole: every case cut
// at every byte, and at every pair of bytes (the short ones).
func TestAttentionDetectorSplit(t *testing.T) {
	for _, c := range detectorCases {
		for i := 0; i <= len(c.out); i++ {
			if got := signals(c.out, i); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("%s cut at %d: %q, want %q", c.name, i, got, c.want)
			}
			if len(c.out) > 64 {
				continue
			}
			for j := i; j <= len(c.out); j++ {
				if got := signals(c.out, i, j); !reflect.DeepEqual(got, c.want) {
					t.Fatalf("%s cut at %d and %d: %q, want %q", c.name, i, j, got, c.want)
				}
			}
		}
	}
}

// scan picks one signal per chunk: the first, or words after a bell.
func TestAttentionScanPicks(t *testing.T) {
	var d attentionDetector
	if s, ok := d.scan("\a\x1b]9;words\a\a"); !ok || s != osc9("words") {
		t.Errorf("bell then words: %q %v", s, ok)
	}
	if s, ok := d.scan("\x1b]9;first\a\x1b]777;notify;second\a"); !ok || s != osc9("first") {
		t.Errorf("two notifications: %q %v", s, ok)
	}
	if _, ok := d.scan("nothing"); ok {
		t.Error("a signal in plain text")
	}
}

func TestAttentionText(t *testing.T) {
	long := strings.Repeat("é", event.MaxAttentionText) // 2 bytes each
	got := attentionText(long)
	if len(got) > event.MaxAttentionText || !utf8.ValidString(got) || got != strings.Repeat("é", event.MaxAttentionText/2) {
		t.Errorf("cut %d bytes (valid %v)", len(got), utf8.ValidString(got))
	}
	for _, s := range []string{"\x1b[2J\x1b]52;c;x\a", "a\u2028b\u0085c\u061c", "\xff\xfe", "  spaced\t"} {
		if got := attentionText(s); !textsafe.Safe(got) || strings.ContainsAny(got, "\n\t") {
			t.Errorf("attentionText(%q) = %q: not one safe line", s, got)
		}
	}
}

func TestEpisodes(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	e := episodes{quiet: AttentionQuiet}
	steps := []struct {
		after  time.Duration
		starts bool
	}{
		{0, true},
		{100 * time.Millisecond, false},
		{4 * time.Second, false},
		{8 * time.Second, false}, // 4 s after the previous signal: the same episode
		{8*time.Second + AttentionQuiet, true},
		{20 * time.Second, true},
	}
	for _, s := range steps {
		if got := e.starts(t0.Add(s.after)); got != s.starts {
			t.Errorf("a signal at +%s starts an episode: %v, want %v", s.after, got, s.starts)
		}
	}
}

// Any output, cut anywhere, never panics, keeps at most maxOSC bytes of a
// string, reads as it does whole, and gives journal-safe text.
func FuzzAttentionDetector(f *testing.F) {
	for _, c := range detectorCases {
		f.Add([]byte(c.out), uint16(len(c.out)/2))
	}
	f.Fuzz(func(t *testing.T, out []byte, cut uint16) {
		s := string(out)
		at := int(cut) % (len(s) + 1)
		var d attentionDetector
		var got []attentionSignal
		note := func(sig attentionSignal) { got = append(got, sig) }
		d.each(s[:at], note)
		if cap(d.osc) > maxOSC {
			t.Fatalf("the detector holds %d bytes", cap(d.osc))
		}
		d.each(s[at:], note)
		if cap(d.osc) > maxOSC {
			t.Fatalf("the detector holds %d bytes", cap(d.osc))
		}
		if whole := signals(s); !reflect.DeepEqual(got, whole) {
			t.Fatalf("cut at %d: %q, whole: %q", at, got, whole)
		}
		for _, sig := range got {
			if len(sig.text) > event.MaxAttentionText || !utf8.ValidString(sig.text) || !textsafe.Safe(sig.text) {
				t.Fatalf("signal text %q", sig.text)
			}
			if _, err := event.Marshal(event.Attention{TurnID: "t", Reason: sig.reason, Text: sig.text}); err != nil {
				t.Fatalf("the journal refuses %+v: %v", sig, err)
			}
		}
	})
}

// The detector reads every byte of every turn's output: text with
// colours and the odd title, in 32 KiB chunks.
func BenchmarkAttentionDetector(b *testing.B) {
	line := "\x1b[32mok\x1b[0m   github.com/example/project/pkg/thing   0.123s\n"
	out := strings.Repeat(line, 32<<10/len(line)) + "\x1b]0;title\a"
	b.SetBytes(int64(len(out)))
	var d attentionDetector
	for b.Loop() {
		d.scan(out)
	}
}
