package termrender

import (
	"fmt"
	"strings"
	"testing"
)

// topFrames is what top does without the alternate screen: home and clear
// once, then each frame drawn from the home position, rows ended with
// erase-in-line, the rest of the screen erased.
func topFrames(frames, rows int) string {
	var b strings.Builder
	b.WriteString("\x1b[H\x1b[2J")
	for f := range frames {
		b.WriteString("\x1b[H")
		for r := range rows {
			fmt.Fprintf(&b, "frame %d row %d\x1b[K", f, r)
			if r < rows-1 {
				b.WriteString("\r\n")
			}
		}
		b.WriteString("\x1b[J")
	}
	return b.String()
}

// A program that draws frames on the main screen leaves its last frame,
// not every frame, below the lines the turn printed before it (its clear
// keeps them, as a terminal's scrollback does).
func TestFramesOnTheMainScreen(t *testing.T) {
	const rows = 10
	before := ""
	for i := range 30 {
		before += fmt.Sprintf("line %d\n", i)
	}
	r := New(Options{ScreenRows: rows})
	r.WriteString(before + topFrames(200, rows))
	got := strings.Join(append(r.Final(), r.Flush()...), "\n")
	var want []string
	for i := range 30 {
		want = append(want, fmt.Sprintf("line %d", i))
	}
	for row := range rows {
		want = append(want, fmt.Sprintf("frame 199 row %d", row))
	}
	if got != strings.Join(want, "\n") {
		t.Errorf("got %d lines:\n%s\nwant %d lines:\n%s", strings.Count(got, "\n")+1, got, len(want), strings.Join(want, "\n"))
	}
}

// The screen is found from the turn's first line whatever the window: a
// renderer holding one line (the CLI's stream) does not add a line per
// cursor move, and prints at most a frame's rows per frame.
func TestFramesInAOneLineWindow(t *testing.T) {
	const rows, frames = 10, 50
	r := New(Options{ScreenRows: rows, Window: 1})
	r.WriteString(topFrames(frames, rows))
	lines := append(r.Final(), r.Flush()...)
	if len(lines) > rows*frames {
		t.Errorf("%d lines for %d frames of %d rows", len(lines), frames, rows)
	}
	if last := lines[len(lines)-1]; last != fmt.Sprintf("frame %d row %d", frames-1, rows-1) {
		t.Errorf("last line %q", last)
	}
}
