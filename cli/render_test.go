package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/creack/pty"

	"looprig/internal/termrender"
)

// The streaming printer, fed a byte at a time: a line is printed once it
// is final, a "\r" progress bar as its last state, multi-line progress
// (cursor up, erase line) as its successive states, colours as SGR for
// the profile, and nothing else of the turn's escape sequences.
func TestOutputPrinter(t *testing.T) {
	raw := "progress 10%\rprogress 100%\n" +
		"\x1b[31mred\x1b[0m plain\n" +
		"a\x1b]52;c;ZXZpbA==\x07b\x1b[H\x1b[2Jc\n" +
		"x 1\ny 1\n\x1b[2A\x1b[Kx 2\n\x1b[Ky 2\n" +
		"open"
	for _, tt := range []struct {
		prof termrender.Profile
		red  string
	}{
		{termrender.NoColor, "red plain"},
		{termrender.ANSI, "\x1b[31mred\x1b[0m plain"},
		{termrender.TrueColor, "\x1b[31mred\x1b[0m plain"},
	} {
		var out bytes.Buffer
		p := newOutputPrinter(&out, tt.prof)
		for i := range len(raw) {
			before := out.Len()
			if err := p.write(raw[i : i+1]); err != nil {
				t.Fatal(err)
			}
			if out.Len() != before && raw[i] != '\n' && raw[i] != 'J' {
				t.Fatalf("profile %d: printed %q at byte %d (%q), not at a line's end nor a clear", tt.prof, out.String()[before:], i, raw[i])
			}
		}
		want := "progress 100%\n" + tt.red + "\nab\nc\nx 1\ny 1\nx 2\ny 2\n"
		if out.String() != want {
			t.Errorf("profile %d: streamed %q, want %q", tt.prof, out.String(), want)
		}
		if err := p.flush(); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(out.String(), "\nopen\n") || p.open {
			t.Errorf("profile %d: flushed to %q (open %v), want the last line ended", tt.prof, out.String(), p.open)
		}
	}

	// run's printer leaves a last line the turn did not end open.
	var out bytes.Buffer
	p := newOutputPrinter(&out, termrender.NoColor)
	p.leaveOpen = true
	p.write("a\nb\r")
	p.flush()
	if out.String() != "a\nb" || !p.open {
		t.Errorf("leaveOpen: %q, open %v; want \"a\\nb\", open", out.String(), p.open)
	}
	out.Reset()
	p = newOutputPrinter(&out, termrender.NoColor)
	p.leaveOpen = true
	p.write("a\n\x1b[0m")
	p.flush()
	if out.String() != "a\n" || p.open {
		t.Errorf("leaveOpen after a final newline: %q, open %v", out.String(), p.open)
	}
}

// The profile: none unless stdout is a terminal, NO_COLOR is empty and
// TERM is not dumb; else the terminal's, from TERM and COLORTERM.
func TestOutputProfile(t *testing.T) {
	m, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer m.Close()
	defer tty.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	for _, tt := range []struct {
		noColor, term, colorTerm string
		want                     termrender.Profile
	}{
		{"", "xterm-256color", "", termrender.ANSI256},
		{"", "xterm-256color", "truecolor", termrender.TrueColor},
		{"", "xterm", "", termrender.ANSI},
		{"", "dumb", "", termrender.NoColor},
		{"", "dumb", "truecolor", termrender.NoColor},
		{"1", "xterm-256color", "truecolor", termrender.NoColor},
	} {
		t.Setenv("NO_COLOR", tt.noColor)
		t.Setenv("TERM", tt.term)
		t.Setenv("COLORTERM", tt.colorTerm)
		t.Setenv("CI", "true") // termenv alone would say "no terminal"
		if got := outputProfile(tty); got != tt.want {
			t.Errorf("NO_COLOR=%q TERM=%q COLORTERM=%q: profile %d, want %d", tt.noColor, tt.term, tt.colorTerm, got, tt.want)
		}
		if got := outputProfile(&bytes.Buffer{}); got != termrender.NoColor {
			t.Errorf("not a file: profile %d", got)
		}
		if got := outputProfile(pw); got != termrender.NoColor {
			t.Errorf("a pipe: profile %d", got)
		}
		if got := outputProfile(m); tt.want != termrender.NoColor && got != tt.want {
			t.Errorf("the master side is a terminal too: profile %d", got)
		}
	}
}
