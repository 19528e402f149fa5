package tui

import (
	"fmt"
	"strings"
	"testing"

	"looprig/internal/termrender"
)

// topFrames is output as top writes it: a whole screen of coloured rows
// drawn with cursor addressing, n times.
func topFrames(n, cols, rows int) string {
	var b strings.Builder
	for f := range n {
		b.WriteString("\x1b[H")
		for r := range rows {
			fmt.Fprintf(&b, "\x1b[%d;1H\x1b[1m%6d\x1b[0m root  20   0 \x1b[31m%5.1f\x1b[0m %s\x1b[K", r+1, f*rows+r, float64(r%100), strings.Repeat("x", cols-30))
		}
	}
	return b.String()
}

// BenchmarkScreen: a full-screen program's output fed to its screen and
// rendered once per 16 KiB (the TUI feeds and draws once per batch of
// output, up to 64 chunks), against the transcript's renderer on the same bytes, the
// baseline of the same run. Both report MB/s of output absorbed.
func BenchmarkScreen(b *testing.B) {
	const cols, rows = 120, 40
	alt := "\x1b[?1049h" + topFrames(200, cols, rows)
	lines := strings.Repeat("y\n", 500_000) // `yes` on a screen opened with f
	for _, c := range []struct{ name, in string }{{"top", alt}, {"lines", lines}} {
		b.Run(c.name+"/screen", func(b *testing.B) {
			b.SetBytes(int64(len(c.in)))
			for b.Loop() {
				s := newTurnScreen("t", cols, rows)
				s.opened = c.name == "lines"
				for i := 0; i < len(c.in); i += 16 << 10 {
					feed(s, c.in[i:min(len(c.in), i+16<<10)])
					s.lines(termrender.ANSI256, false)
				}
			}
		})
		b.Run(c.name+"/termrender", func(b *testing.B) {
			b.SetBytes(int64(len(c.in)))
			for b.Loop() {
				r := termrender.New(termrender.Options{Profile: termrender.ANSI256, MaxLineCells: maxLineCells})
				for i := 0; i < len(c.in); i += 16 << 10 {
					r.WriteString(c.in[i:min(len(c.in), i+16<<10)])
					r.Final()
				}
			}
		})
	}
}
