package textsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSanitize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "hello, world", "hello, world"},
		{"newline and tab kept", "a\tb\nc\n", "a\tb\nc\n"},
		{"unicode kept", "naïve 日本語 🙂", "naïve 日本語 🙂"},
		{"empty", "", ""},
		{"OSC 52 clipboard", "\x1b]52;c;ZXZpbA==\x07", "^[]52;c;ZXZpbA==^G"},
		{"OSC 52 with ST", "\x1b]52;c;ZXZpbA==\x1b\\", "^[]52;c;ZXZpbA==^[\\"},
		{"CSI clear screen", "\x1b[2J\x1b[H", "^[[2J^[[H"},
		{"OSC title", "\x1b]0;pwned\x07", "^[]0;pwned^G"},
		{"DCS", "\x1bPq#0;2;0;0;0\x1b\\", "^[Pq#0;2;0;0;0^[\\"},
		{"carriage return", "progress 10%\rprogress 20%", "progress 10%^Mprogress 20%"},
		{"NUL and BEL", "a\x00b\x07", "a^@b^G"},
		{"backspace", "x\by", "x^Hy"},
		{"DEL", "a\x7fb", "a^?b"},
		{"C1 CSI", "\u009b2J", "<U+009B>2J"},
		{"C1 NEL and OSC", "\u0085\u009d", "<U+0085><U+009D>"},
		{"bidi override", "user\u202Etxt.exe", "user<U+202E>txt.exe"},
		{"bidi isolates", "\u2066a\u2069\u2067b\u2068", "<U+2066>a<U+2069><U+2067>b<U+2068>"},
		{"bidi marks", "\u200e\u200f\u061c", "<U+200E><U+200F><U+061C>"},
		{"line separator", "a\u2028b\u2029", "a<U+2028>b<U+2029>"},
		{"invalid utf8", "a\xffb\xc3", "a\uFFFDb\uFFFD"},
		{"raw C1 byte is invalid utf8", "\x9b2J", "\uFFFD2J"},
		{"overlong encoding", "\xc0\xaf", "\uFFFD\uFFFD"},
		{"literal replacement char kept", "\uFFFD", "\uFFFD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Sanitize(tt.in); got != tt.want {
				t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if got := Safe(tt.in); got != (tt.in == tt.want) {
				t.Errorf("Safe(%q) = %v", tt.in, got)
			}
		})
	}
}

func TestLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"title", "title"},
		{"two\nlines", "two^Jlines"},
		{"tab\there", "tab^Ihere"},
		{"crlf\r\n", "crlf^M^J"},
		{"\x1b[31mred\x1b[0m", "^[[31mred^[[0m"},
		{"\u202Eevil", "<U+202E>evil"},
	}
	for _, tt := range tests {
		if got := Line(tt.in); got != tt.want {
			t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// check fails when out contains anything a terminal would interpret.
func check(t *testing.T, in, out string, oneLine bool) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("output of %q is not valid UTF-8: %q", in, out)
	}
	for i := 0; i < len(out); i++ {
		c := out[i]
		if c < 0x20 && !(!oneLine && (c == '\n' || c == '\t')) {
			t.Fatalf("output of %q has control byte %#x: %q", in, c, out)
		}
		if c == 0x7f {
			t.Fatalf("output of %q has DEL: %q", in, out)
		}
	}
	for _, r := range out {
		if hidden(r) {
			t.Fatalf("output of %q has %U: %q", in, r, out)
		}
	}
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{
		"", "plain", "\x1b]52;c;ZXZpbA==\x07", "\x1b[2J", "\u009b31m", "\u202Eabc",
		"\xff\xfe", "a\r\nb", "\x00\x7f", "\u2066\u2069", "\xc2\x9b", "\xe2\x80\xae",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Sanitize(in)
		check(t, in, out, false)
		if Sanitize(out) != out {
			t.Fatalf("Sanitize is not idempotent on %q", in)
		}
		if !Safe(out) {
			t.Fatalf("Safe(Sanitize(%q)) is false", in)
		}
		line := Line(in)
		check(t, in, line, true)
		if strings.ContainsAny(line, "\n\t") {
			t.Fatalf("Line(%q) = %q keeps a newline or tab", in, line)
		}
	})
}
