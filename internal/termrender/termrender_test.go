package termrender

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"looprig/internal/textsafe"
)

const big = 70000 // more than DefaultMaxStringBytes

func TestString(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		// Text.
		{"empty", "", ""},
		{"plain", "hello, world", "hello, world"},
		{"lines", "a\nb\n", "a\nb\n"},
		{"blank lines kept", "a\n\n\nb", "a\n\n\nb"},
		{"unicode", "naïve 日本語 🙂", "naïve 日本語 🙂"},
		{"trailing spaces kept", "a  \n", "a  \n"},

		// CR, BS, TAB.
		{"progress bar", "progress 10%\rprogress 100%\n", "progress 100%\n"},
		{"CR shorter text overwrites the start", "abcdef\rXY", "XYcdef"},
		{"CRLF", "a\r\nb\r\n", "a\nb\n"},
		{"CR keeps the line", "a\r", "a"},
		{"BS", "abc\bX", "abX"},
		{"BS at column 0", "\bX", "X"},
		{"BS twice", "abc\b\bXY", "aXY"},
		{"TAB", "a\tb", "a       b"},
		{"TAB from column 8", "12345678\tx", "12345678        x"},
		{"TAB over text does not erase", "abcdefghij\rX\tY", "XbcdefghYj"},
		{"TAB at end leaves no spaces", "a\t\n", "a\n"},

		// Erase in line.
		{"EL0 default", "abcdef\r\x1b[3C\x1b[K", "abc"},
		{"EL0 explicit", "abcdef\r\x1b[3C\x1b[0K", "abc"},
		{"EL1", "abcdef\r\x1b[2C\x1b[1K", "   def"},
		{"EL2", "abcdef\x1b[2Kxy", "      xy"},
		{"EL2 then CR", "abcdef\x1b[2K\rxy", "xy"},
		{"EL unknown mode", "abc\r\x1b[5K", "abc"},

		// Cursor movement.
		{"CUF", "a\x1b[3Cb", "a   b"},
		{"CUF default", "a\x1b[Cb", "a b"},
		{"CUF zero is one", "a\x1b[0Cb", "a b"},
		{"CUB", "abcd\x1b[2DX", "abXd"},
		{"CUB default", "abc\x1b[DX", "abX"},
		{"CUB clamped", "ab\x1b[99DX", "Xb"},
		{"CHA", "abcdef\x1b[3GX", "abXdef"},
		{"CHA default", "abc\x1b[GX", "Xbc"},
		{"CUU", "l1\nl2\n\x1b[AX", "l1\nX2\n"},
		{"CUU clamped at the first line", "a\nb\n\x1b[99AX", "X\nb\n"},
		{"CUU keeps the column", "abc\nde\x1b[AX", "abX\nde"},
		{"CPL", "abc\ndef\x1b[FX", "Xbc\ndef"},
		{"CUD clamped at the last line", "a\x1b[5Bb", "ab"},
		{"CNL", "ab\ncd\x1b[A\x1b[EX", "ab\nXd"},
		{"LF after CUU moves down", "a\nb\nc\x1b[2A\nX", "a\nX\nc"}, // no new line

		// Multi-line progress (apt, docker).
		{"apt-style redraw",
			"Get:1 foo [10%]\nGet:2 bar [20%]\n\x1b[2A\x1b[KGet:1 foo [100%]\n\x1b[KGet:2 bar [100%]\n",
			"Get:1 foo [100%]\nGet:2 bar [100%]\n"},
		{"docker-style redraw",
			"l1: Waiting\nl2: Waiting\n" +
				"\x1b[2A\x1b[2K\rl1: Downloading\x1b[2B\r" +
				"\x1b[2A\x1b[2K\rl1: Pull complete\n\x1b[2K\rl2: Pull complete\n",
			"l1: Pull complete\nl2: Pull complete\n"},
		{"dpkg-style status line", "Progress: [ 10%]\r\x1b[KProgress: [ 60%]\r\x1b[Kdone\n", "done\n"},

		// SGR.
		{"red", "\x1b[31mred\x1b[0m plain", "\x1b[31mred\x1b[0m plain"},
		{"bold reset by 22", "\x1b[1mbold\x1b[22m x", "\x1b[1mbold\x1b[0m x"},
		{"bright fg", "\x1b[91mx", "\x1b[91mx\x1b[0m"},
		{"bg", "\x1b[44mx", "\x1b[44mx\x1b[0m"},
		{"bright bg", "\x1b[104mx", "\x1b[104mx\x1b[0m"},
		{"all flags", "\x1b[9;7;5;4;3;2;1mx", "\x1b[1;2;3;4;5;7;9mx\x1b[0m"},
		{"flag resets", "\x1b[1;3;4;5;7;9m\x1b[23;24;25;27;29mx", "\x1b[1mx\x1b[0m"},
		{"22 resets bold and faint", "\x1b[1;2m\x1b[22mx", "x"},
		{"rapid blink", "\x1b[6mx", "\x1b[5mx\x1b[0m"},
		{"double underline", "\x1b[21mx", "\x1b[4mx\x1b[0m"},
		{"underline style 4:3", "\x1b[4:3mx", "\x1b[4mx\x1b[0m"},
		{"underline off 4:0", "\x1b[4m\x1b[4:0mx", "x"},
		{"39 and 49", "\x1b[31;41m\x1b[39mx\x1b[49my", "\x1b[41mx\x1b[0my"},
		{"empty SGR resets", "\x1b[31m\x1b[mx", "x"},
		{"empty parameter resets", "\x1b[31;mx", "x"},
		{"attribute change", "\x1b[31ma\x1b[1mb", "\x1b[31ma\x1b[0;1;31mb\x1b[0m"},
		{"ignored codes", "\x1b[8;53;58;5;1;10mx", "x"},
		{"each line self-contained", "\x1b[31ma\nb\x1b[0m", "\x1b[31ma\x1b[0m\n\x1b[31mb\x1b[0m"},
		{"attributes carry over CR", "\x1b[32mok\r\x1b[0mOK", "OK"},
		{"256 colour 1 is 31", "\x1b[38;5;1mx", "\x1b[31mx\x1b[0m"},
		{"256 colour 9 is 91", "\x1b[38;5;9mx", "\x1b[91mx\x1b[0m"},
		{"256 downsampled to 16", "\x1b[38;5;196mx", "\x1b[91mx\x1b[0m"},
		{"truecolor downsampled to 16", "\x1b[38;2;255;0;0mx", "\x1b[91mx\x1b[0m"},
		{"256 bad index ignored", "\x1b[38;5;256mx", "x"},
		{"38 followed by flags", "\x1b[38;5;2;1mx", "\x1b[1;32mx\x1b[0m"},
		{"truncated 38", "\x1b[38;2;1mx", "x"},

		// Dropped sequences.
		{"clear screen and home", "\x1b[2J\x1b[Hx", "x"},
		{"cursor position", "ab\x1b[5;10fx\x1b[1;1Hy", "yb\n\n\n\n         x"},
		{"row", "ab\ncd\x1b[1dX", "abX\ncd"},
		{"erase below", "a\nb\nc\x1b[2;1H\x1b[J", "a\n\n"},
		{"erase above", "a\nb\nc\x1b[2;1H\x1b[1J", "\n\nc"},
		{"scrollback erase keeps the lines", "a\nb\x1b[3J", "a\nb"},
		{"clear keeps the text above the new screen", "a\nb\x1b[H\x1b[2Jc\x1b[Hd", "a\nb\nd"},
		{"clear from home", "a\nb\n\x1b[H\x1b[Jc", "a\nb\nc"},
		{"clear of a blank screen", "\x1b[H\x1b[2Jc", "c"},
		{"clear keeps the cursor's row", "a\nb\x1b[2Jc", "a\nb\n\n c"},
		{"scroll region", "\x1b[1;10rx", "x"},
		{"alternate screen", "before\x1b[?1049h\x1b[2J\x1b[Htop screen\r\n\x1b[?1049lafter", "before\n" + altEnter + "\n" + altLeave + "\nafter"},
		{"alternate screen left unterminated", "\x1b[?1049hvim", altEnter + "\n" + AltSnapshot + "\nvim"},
		{"alternate screen 47 and 1047", "\x1b[?47hx\x1b[?47l\x1b[?1047hy\x1b[?1047lz", altEnter + "\n" + altLeave + "\n" + altEnter + "\n" + altLeave + "\nz"},
		{"other private modes dropped", "\x1b[?25l\x1b[?2004hx\x1b[?25h", "x"},
		{"hide cursor", "\x1b[?25lx\x1b[?25h", "x"},
		{"private SGR (modifyOtherKeys)", "\x1b[>4;1mx", "x"},
		{"intermediate before m", "\x1b[1 mx", "x"},
		{"insert and delete", "abc\x1b[2@\x1b[P\x1b[Lx", "abcx"},
		{"ESC 7 8, RIS, index", "\x1b7a\x1b8\x1bc\x1bMb\x1bDc\x1bEd", "abcd"},
		{"charset designation", "\x1b(Bx\x1b)0y", "xy"},
		{"OSC 52 clipboard", "\x1b]52;c;SGVsbG8=\x07x", "x"},
		{"OSC 52 with ST", "\x1b]52;c;SGVsbG8=\x1b\\x", "x"},
		{"OSC title", "\x1b]0;pwned\x07x", "x"},
		{"OSC 8 hyperlink keeps the text", "\x1b]8;;http://e.x/\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"DCS", "\x1bPq#0;2;0;0;0\x1b\\x", "x"},
		{"APC", "\x1b_Gf=100;AAAA\x1b\\x", "x"},
		{"PM", "\x1b^private\x1b\\x", "x"},
		{"SOS", "\x1bXstring\x1b\\x", "x"},
		{"OSC cancelled by CAN", "\x1b]0;t\x18x", "x"},
		{"OSC ended by another sequence", "\x1b]0;t\x1b[31mx", "\x1b[31mx\x1b[0m"},
		{"OSC holding text and newlines", "\x1b]0;a\nb\x07x", "x"},
		{"unterminated OSC is bounded",
			"\x1b]52;c;" + strings.Repeat("A", big-5) + "tail\n",
			strings.Repeat("A", big-DefaultMaxStringBytes) + "tail\n"}, // "52;c;" is payload too
		{"unterminated OSC at the end", "x\x1b]0;never", "x"},
		{"unterminated CSI at the end", "x\x1b[31", "x"},
		{"lone ESC at the end", "x\x1b", "x"},

		// Controls.
		{"BEL dropped", "a\x07b", "ab"},
		{"C0 caret notation", "a\x00b\x01\x0b\x0c\x7f", "a^@b^A^K^L^?"},
		{"CAN and SUB in text", "\x18\x1a", "^X^Z"},
		{"C0 inside CSI is carried out", "a\x1b[3\n1mx", "a\n\x1b[31mx\x1b[0m"},
		{"CAN cancels CSI", "\x1b[31\x18mx", "mx"},
		{"DEL inside CSI ignored", "\x1b[3\x7f1mx", "\x1b[31mx\x1b[0m"},
		{"non-ASCII cancels CSI", "\x1b[31émx", "émx"},
		{"ESC restarts a sequence", "\x1b\x1b[31mx", "\x1b[31mx\x1b[0m"},
		{"C1 in UTF-8", "\u009b2J\u0085", "<U+009B>2J<U+0085>"},
		{"raw 8-bit CSI is invalid UTF-8", "\x9b2J", "\uFFFD2J"},
		{"bidi override", "user\u202Etxt.exe", "user<U+202E>txt.exe"},
		{"bidi isolates and marks", "\u2066a\u2069\u200e\u061c", "<U+2066>a<U+2069><U+200E><U+061C>"},
		{"line separators", "a\u2028b\u2029", "a<U+2028>b<U+2029>"},
		{"invalid UTF-8", "a\xffb\xc3", "a\uFFFDb\uFFFD"},
		{"overlong", "\xc0\xaf", "\uFFFD\uFFFD"},
		{"truncated rune at the end", "a\xe2\x82", "a\uFFFD\uFFFD"},

		// Wide and zero-width characters.
		{"wide overwritten on its left half", "中\rx", "x "},
		{"wide overwritten on its right half", "中\r\x1b[Cx", " x"},
		{"wide over two narrow", "abc\r中", "中c"},
		{"wide over wide shifted", "中文\r\x1b[C字", " 字 "},
		{"CUF counts cells of wide", "中\r\x1b[2Cx", "中x"},
		{"combining kept", "e\u0301!", "e\u0301!"},
		{"combining dropped when overwritten", "e\u0301\rx", "x"},
		{"combining at column 0", "\u0301a", "\u0301a"},
		{"ZWJ sequence", "👨\u200d👩\u200d👧", "👨\u200d👩\u200d👧"},
		{"combining after wide", "中\u0301", "中\u0301"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := String(tt.in, ANSI)
			if got != tt.want {
				t.Errorf("String(%q, ANSI)\n got %q\nwant %q", clip(tt.in), clip(got), clip(tt.want))
			}
			if err := validate(got, ANSI); err != nil {
				t.Errorf("invalid output: %v", err)
			}
			plain := String(tt.in, NoColor)
			if want := stripSGR(tt.want); plain != want {
				t.Errorf("String(%q, NoColor)\n got %q\nwant %q", clip(tt.in), clip(plain), clip(want))
			}
			if err := validate(plain, NoColor); err != nil {
				t.Errorf("invalid NoColor output: %v", err)
			}
			checkChunks(t, tt.in, ANSI)
		})
	}
}

// stripSGR removes the SGR sequences that String emits.
func stripSGR(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			i += strings.IndexByte(s[i:], 'm')
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func TestProfiles(t *testing.T) {
	tests := []struct {
		name, in                 string
		ansi, ansi256, truecolor string
	}{
		{"16 colours", "\x1b[31;102mx",
			"\x1b[31;102mx\x1b[0m", "\x1b[31;102mx\x1b[0m", "\x1b[31;102mx\x1b[0m"},
		{"256 colour", "\x1b[38;5;208mx",
			"\x1b[91mx\x1b[0m", "\x1b[38;5;208mx\x1b[0m", "\x1b[38;5;208mx\x1b[0m"},
		{"256 colour, colon form", "\x1b[38:5:208mx",
			"\x1b[91mx\x1b[0m", "\x1b[38;5;208mx\x1b[0m", "\x1b[38;5;208mx\x1b[0m"},
		{"256 background", "\x1b[48;5;21mx",
			"\x1b[104mx\x1b[0m", "\x1b[48;5;21mx\x1b[0m", "\x1b[48;5;21mx\x1b[0m"},
		{"truecolor", "\x1b[38;2;255;0;0mx",
			"\x1b[91mx\x1b[0m", "\x1b[38;5;196mx\x1b[0m", "\x1b[38;2;255;0;0mx\x1b[0m"},
		{"truecolor, colon form with colour space", "\x1b[38:2::255:0:0mx",
			"\x1b[91mx\x1b[0m", "\x1b[38;5;196mx\x1b[0m", "\x1b[38;2;255;0;0mx\x1b[0m"},
		{"truecolor, colon form without colour space", "\x1b[38:2:255:0:0mx",
			"\x1b[91mx\x1b[0m", "\x1b[38;5;196mx\x1b[0m", "\x1b[38;2;255;0;0mx\x1b[0m"},
		{"truecolor background", "\x1b[48;2;0;0;0mx",
			"\x1b[40mx\x1b[0m", "\x1b[48;5;16mx\x1b[0m", "\x1b[48;2;0;0;0mx\x1b[0m"},
		{"truecolor with flags", "\x1b[1;38;2;10;20;30;48:5:200mX\x1b[22mY",
			"\x1b[1;30;101mX\x1b[0;30;101mY\x1b[0m",
			"\x1b[1;38;5;233;48;5;200mX\x1b[0;38;5;233;48;5;200mY\x1b[0m",
			"\x1b[1;38;2;10;20;30;48;5;200mX\x1b[0;38;2;10;20;30;48;5;200mY\x1b[0m"},
		{"bad component ignored", "\x1b[38;2;256;0;0mx", "x", "x", "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []struct {
				p    Profile
				want string
			}{{NoColor, stripSGR(tt.ansi)}, {ANSI, tt.ansi}, {ANSI256, tt.ansi256}, {TrueColor, tt.truecolor}} {
				got := String(tt.in, c.p)
				if got != c.want {
					t.Errorf("profile %d: got %q, want %q", c.p, got, c.want)
				}
				if err := validate(got, c.p); err != nil {
					t.Errorf("profile %d: %v", c.p, err)
				}
			}
		})
	}
}

// render feeds chunks to a Renderer, draining Final after each Write and
// calling Pending on the way (which must not change anything), and returns
// every line.
func render(o Options, chunks ...[]byte) []string {
	r := New(o)
	var out []string
	for _, c := range chunks {
		r.Write(c)
		out = append(out, r.Final()...)
		r.Pending()
	}
	return append(out, r.Flush()...)
}

// checkChunks checks that every split of in into two chunks, and the
// split into single bytes, render as one Write does.
func checkChunks(t *testing.T, in string, p Profile) {
	t.Helper()
	if len(in) > 4096 {
		return
	}
	for _, o := range []Options{{Profile: p}, {Profile: p, MaxLineCells: 5, Window: 2, MaxStringBytes: 4}} {
		b := []byte(in)
		want := render(o, b)
		if o.MaxLineCells == 0 {
			if got, s := strings.Join(want, "\n"), strings.TrimSuffix(String(in, p), "\n"); got != s {
				t.Fatalf("lines %q do not join to String's %q", got, s)
			}
		}
		for k := 0; k <= len(b); k++ {
			if got := render(o, b[:k], b[k:]); !slices.Equal(got, want) {
				t.Fatalf("%+v: split at %d of %q:\n got %q\nwant %q", o, k, in, got, want)
			}
		}
		bytes := make([][]byte, len(b))
		for k := range b {
			bytes[k] = b[k : k+1]
		}
		if got := render(o, bytes...); !slices.Equal(got, want) {
			t.Fatalf("%+v: byte by byte %q:\n got %q\nwant %q", o, in, got, want)
		}
	}
}

func TestChunkBoundaries(t *testing.T) {
	for _, in := range []string{
		"progress 10%\rprogress 100%\n",
		"\x1b[1;38;2;10;20;30;48:5:200mX\x1b[22mY\x1b[0m\n",
		"Get:1 foo [10%]\nGet:2 bar [20%]\n\x1b[2A\x1b[KGet:1 foo [100%]\n\x1b[KGet:2 bar [100%]\n",
		"a\xe2\x82\xacb\xf0\x9f\x99\x82c\xe2\x28\xa1\xf0\x90\x41\xc3",
		"\x1b]8;;http://e.x/\x1b\\link\x1b]8;;\x1b\\\x1b]52;c;QUFB\x07\x1bPq\x1b\\ok",
		"中文字\r\x1b[C字e\u0301\u0302\n\ttab\b\bX\x1b[1K",
		"l1\nl2\nl3\nl4\n\x1b[3A\x1b[2Kx\x1b[2B\x1b[F\x1b[Ey\n",
		"\x1b]0;long title that outlives MaxStringBytes\x07after",
	} {
		for _, p := range []Profile{NoColor, ANSI, TrueColor} {
			checkChunks(t, in, p)
		}
	}
}

func TestStreaming(t *testing.T) {
	r := New(Options{Profile: NoColor, Window: 2})
	r.Write([]byte("a\nb\nc"))
	if got := r.Final(); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Final = %q, want [a]", got)
	}
	if got := r.Final(); got != nil {
		t.Errorf("Final again = %q, want none", got)
	}
	if got := r.Pending(); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("Pending = %q, want [b c]", got)
	}
	// Up is clamped at the oldest line held: "a" is final. The column
	// is kept.
	r.Write([]byte("\x1b[5AX"))
	if got := r.Pending(); !slices.Equal(got, []string{"bX", "c"}) {
		t.Errorf("Pending after CUU = %q, want [bX c]", got)
	}
	r.Write([]byte("\x1b[B\n"))
	if got := r.Pending(); !slices.Equal(got, []string{"c"}) {
		t.Errorf("Pending with an empty last line = %q, want [c]", got)
	}
	if got := r.Final(); !slices.Equal(got, []string{"bX"}) {
		t.Errorf("Final = %q, want [bX]", got)
	}
	if got := r.Flush(); !slices.Equal(got, []string{"c"}) {
		t.Errorf("Flush = %q, want [c]", got)
	}
	// A new turn.
	r.Write([]byte("\x1b]0;unterminated"))
	if got := r.Flush(); len(got) != 0 {
		t.Errorf("Flush of an unterminated OSC = %q, want none", got)
	}
	r.Write([]byte("new\n"))
	if got := r.Flush(); !slices.Equal(got, []string{"new"}) {
		t.Errorf("Flush after reset = %q, want [new]", got)
	}
}

func TestWindowOfOne(t *testing.T) {
	// Only the cursor's line is held: up cannot leave it.
	got := render(Options{Window: 1}, []byte("a\nb\n\x1b[Ac\nd\n"))
	if want := []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestWrap(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"abcdefghij", []string{"abcd", "efgh", "ij"}},
		{"abcd\n", []string{"abcd"}},
		{"abcde\n", []string{"abcd", "e"}},
		{"abc中", []string{"abc", "中"}},
		{"ab\x1b[9Cx", []string{"ab x"}},
		{"\x1b[9Gx", []string{"   x"}},
		{"a\t\tb", []string{"a  b"}},
		{"abcd\x1b[Kx", []string{"abc", "x"}},
	}
	for _, tt := range tests {
		got := render(Options{MaxLineCells: 4}, []byte(tt.in))
		if !slices.Equal(got, tt.want) {
			t.Errorf("%q: got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLongLine(t *testing.T) {
	in := strings.Repeat("0123456789", 100_000) // 1 MB, one line
	lines := strings.Split(String(in, ANSI), "\n")
	if len(lines) != (len(in)+DefaultMaxLineCells-1)/DefaultMaxLineCells {
		t.Fatalf("got %d lines", len(lines))
	}
	for _, l := range lines[:len(lines)-1] {
		if len(l) != DefaultMaxLineCells {
			t.Fatalf("line of %d bytes, want %d", len(l), DefaultMaxLineCells)
		}
	}
	if strings.Join(lines, "") != in {
		t.Fatal("text lost in wrapping")
	}
}

func TestHeldCellsBounded(t *testing.T) {
	r := New(Options{})
	long := []byte(strings.Repeat("x", DefaultMaxLineCells) + "\n")
	for range 100 {
		r.Write(long)
		r.Final()
		if r.held > r.budget+DefaultMaxLineCells {
			t.Fatalf("%d cells held, budget %d", r.held, r.budget)
		}
	}
	if r.n >= DefaultWindow {
		t.Fatalf("%d lines held", r.n)
	}
	if got := len(r.Flush()); got != 0 && r.n != 1 {
		t.Fatal("not reset")
	}
}

// SO and SI show nothing, as on a terminal: Claude Code's exit left "^O"
// on the main screen under run.
func TestShiftInOutShowNothing(t *testing.T) {
	got := render(Options{}, []byte("bye\x0f\n\x0eok\x0f\n"))
	if want := []string{"bye", "ok"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestUnterminatedStringRecovers(t *testing.T) {
	got := render(Options{MaxStringBytes: 8}, []byte("\x1b]52;c;AAAAAAAA visible\n\x1bPq12345678 dcs too\n"))
	if want := []string{"AAAAA visible", "8 dcs too"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestPlainTextAsTextsafe: text without escape sequences, CR, BS, TAB,
// BEL, SO or SI renders as textsafe.Sanitize shows it.
func TestPlainTextAsTextsafe(t *testing.T) {
	pieces := []string{"a", "Z", " ", "~", "\n", "\n\n", "é", "中", "🙂", "e\u0301", "\u200d",
		"\x00", "\x01", "\x0b", "\x0c", "\x18", "\x1a", "\x1f", "\x7f",
		"\u0085", "\u009b", "\u202e", "\u2066", "\u2028", "\xff", "\xc3", "\xe2\x82", "\xc0\xaf", "\uFFFD"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		in := b.String()
		for _, p := range []Profile{NoColor, ANSI, TrueColor} {
			if got, want := String(in, p), textsafe.Sanitize(in); got != want {
				t.Fatalf("String(%q, %d) = %q, textsafe.Sanitize = %q", in, p, got, want)
			}
		}
	}
}

// TestHiddenAsTextsafe: maybeHidden covers every rune textsafe shows as
// "<U+XXXX>".
func TestHiddenAsTextsafe(t *testing.T) {
	for r := rune(0x80); r <= 0x10ffff; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue
		}
		if !textsafe.Safe(string(r)) && !maybeHidden(r) {
			t.Fatalf("%U is hidden by textsafe but not by maybeHidden", r)
		}
	}
}

// A program that draws on the alternate screen and never leaves it: its
// screen's text is rendered when the output ends (Flush, String), below a
// notice, and nothing of it but text and our SGR; a program that left its
// screen leaves only the notices.
func TestAlternateScreenAtTheEnd(t *testing.T) {
	drawn := "before\n\x1b[?1049h\x1b[2J\x1b[H\x1b[31mtitle\x1b[0m\x1b[5;3Hdrawn on screen\x1b]52;c;c2VjcmV0\x07\x1b[6;1Hlast row"
	r := New(Options{ScreenCols: 40, ScreenRows: 8})
	r.WriteString(drawn)
	lines := append(r.Final(), r.Flush()...)
	got := strings.Join(lines, "\n")
	for _, want := range []string{"before", altEnter, AltSnapshot, "title", "  drawn on screen", "last row"} {
		if !strings.Contains(got, want) {
			t.Errorf("flushed output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "c2VjcmV0") || strings.ContainsAny(got, "\x1b\x07") {
		t.Errorf("the screen let an escape through:\n%q", got)
	}
	// In colour, the screen keeps its colours as our own SGR.
	if s := String(drawn, ANSI); !strings.Contains(s, "\x1b[31mtitle") || !strings.Contains(s, AltSnapshot) {
		t.Errorf("String in colour:\n%q", s)
	}
	// A program that left its screen: nothing of it after the notices.
	left := New(Options{})
	left.WriteString(drawn + "\x1b[?1049lafter\n")
	out := strings.Join(left.Flush(), "\n")
	if strings.Contains(out, "drawn on screen") || strings.Contains(out, AltSnapshot) || !strings.Contains(out, "after") {
		t.Errorf("a screen that was left is rendered:\n%s", out)
	}
	// Chunked as a stream delivers it (the switch itself split), the
	// same; and without a clear that would hide a stray byte.
	for _, d := range []string{drawn, strings.Replace(drawn, "\x1b[2J", "", 1)} {
		whole := New(Options{ScreenCols: 40, ScreenRows: 8})
		whole.WriteString(d)
		want := strings.Join(append(whole.Final(), whole.Flush()...), "\n")
		for size := 1; size <= 7; size++ {
			c := New(Options{ScreenCols: 40, ScreenRows: 8})
			for i := 0; i < len(d); i += size {
				c.WriteString(d[i:min(i+size, len(d))])
			}
			if out := strings.Join(append(c.Final(), c.Flush()...), "\n"); out != want {
				t.Errorf("in chunks of %d:\n%s\nwhole:\n%s", size, out, want)
			}
		}
	}
}
