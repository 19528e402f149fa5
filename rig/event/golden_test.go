package event

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// hardStrings need every kind of care a JSON string encoder takes:
// control characters, quotes and backslashes, HTML characters (never
// escaped), U+2028 and U+2029, invalid UTF-8 (a lone byte, a truncated
// sequence, a surrogate, past U+10FFFF), a literal U+FFFD and the text of
// its escape.
var hardStrings = []string{
	"", "plain-id_1", "\x00\x01\x07\x08\t\n\x0b\x0c\r\x1b\x1f", "\x7f", `quote " back \ slash \\"`,
	"<a href='x'>&amp;</a>", "é ü 日本 😀", "\u2028\u2029", "bad \xff \xc3 utf8 \xed\xa0\x80 \xf4\x90\x80\x80",
	"\uFFFD literal", `\ufffd text`, "\x1b[31mred\x1b[0m", "trunc \xe2\x82",
}

// goldenEvents are samples() and, for each hard string, events that carry
// it in the fields the fast encoder writes (TurnOutput) and in the fields
// encoding/json writes (strings, slices, map keys and values).
func goldenEvents() []Event {
	evs := samples()
	for _, s := range hardStrings {
		evs = append(evs,
			TurnOutput{TurnID: s, Text: s + "\n" + s, Elided: int64(len(s))},
			OutputDelta{TurnID: s, Stream: StreamStdout, Text: s},
			TurnStarted{TurnID: s, Index: 1, Input: s},
			SessionStarted{Title: s, Manifest: map[string]string{s: s, "k": s}, Root: s},
			RestoreDone{Epoch: 2, Interrupted: []string{s}, GatesClosed: []string{s, s}, Holder: s},
			GateOpened{GateID: s, TurnID: s, Prompt: s},
			Attention{TurnID: s, Reason: AttentionOSC9, Text: s},
		)
	}
	return evs
}

// checkGolden compares got with testdata/name, which -update rewrites.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := "testdata/" + name
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./rig/event -run %s -update writes it)", err, t.Name())
	}
	if bytes.Equal(got, want) {
		return
	}
	gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := range min(len(gl), len(wl)) {
		if !bytes.Equal(gl[i], wl[i]) {
			t.Fatalf("%s line %d:\n got %s\nwant %s", path, i+1, gl[i], wl[i])
		}
	}
	t.Fatalf("%s: %d lines, want %d", path, len(gl), len(wl))
}

// The journal's bytes of every event: testdata/marshal.golden was written
// by Marshal before the string encoder was shared with the envelope
// codec; the durable format must not change a byte.
func TestMarshalGolden(t *testing.T) {
	var out []byte
	for _, ev := range goldenEvents() {
		b, err := Marshal(ev)
		if err != nil {
			t.Fatalf("%#v: %v", ev, err)
		}
		out = append(append(out, b...), '\n')
	}
	checkGolden(t, "marshal.golden", out)
}
