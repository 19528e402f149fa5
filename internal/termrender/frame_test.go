package termrender

import (
	"fmt"
	"strings"
	"testing"
)

// A Frame draws only the rows that changed, each at its start with its
// own cursor addressing, and then places the cursor as the program has it.
func TestFrameDrawsChangedRows(t *testing.T) {
	var f Frame
	rows := []string{"one", "\x1b[31mtwo\x1b[0m", "three"}
	got := string(f.Draw(nil, rows, 2, 1, true, 10, 4))
	want := "\x1b[?25l" + "\x1b[1;1Hone\x1b[K" + "\x1b[2;1H\x1b[31mtwo\x1b[0m\x1b[K" + "\x1b[3;1Hthree\x1b[K" + "\x1b[4;1H\x1b[K" + "\x1b[2;3H\x1b[?25h"
	if got != want {
		t.Fatalf("first frame\n got %q\nwant %q", got, want)
	}
	if got := f.Draw(nil, rows, 2, 1, true, 10, 4); len(got) != 0 {
		t.Errorf("an unchanged frame wrote %q", got)
	}
	rows[1] = "\x1b[31mtwo!\x1b[0m"
	got = string(f.Draw(nil, rows, 4, 1, true, 10, 4))
	if want := "\x1b[?25l\x1b[2;1H\x1b[31mtwo!\x1b[0m\x1b[K\x1b[2;5H\x1b[?25h"; got != want {
		t.Errorf("one row changed\n got %q\nwant %q", got, want)
	}
	if got := string(f.Draw(nil, rows, 0, 2, true, 10, 4)); got != "\x1b[3;1H" {
		t.Errorf("the cursor moved: %q, want only its move", got)
	}
	if got := string(f.Draw(nil, rows, 0, 2, false, 10, 4)); got != "\x1b[?25l" {
		t.Errorf("the cursor hidden: %q", got)
	}
	if got := string(f.Draw(nil, rows, 0, 2, true, 10, 4)); got != "\x1b[?25h" {
		t.Errorf("the cursor shown again: %q", got)
	}
	f.Invalidate()
	got = string(f.Draw(nil, rows, 0, 2, true, 10, 4))
	for _, row := range []string{"\x1b[1;1Hone", "\x1b[2;1H\x1b[31mtwo!", "\x1b[3;1Hthree", "\x1b[4;1H\x1b[K"} {
		if !strings.Contains(got, row) {
			t.Errorf("after Invalidate, %q was not drawn: %q", row, got)
		}
	}
}

// Rows are cut to the terminal's width (a cut style is reset), a row that
// fills it is not erased after (EL there would erase its last cell), and
// rows below the terminal are left out.
func TestFrameClips(t *testing.T) {
	var f Frame
	got := string(f.Draw(nil, []string{"abcdefgh", "\x1b[1mbold text\x1b[0m", "abcd", "gone"}, 9, 9, false, 4, 3))
	for _, want := range []string{"\x1b[1;1Habcd\x1b[2;1H", "\x1b[2;1H\x1b[1mbold\x1b[0m\x1b[3;1H", "\x1b[3;1Habcd\x1b[3;4H"} {
		if !strings.Contains(got, want) {
			t.Errorf("frame %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "gone") || strings.Contains(got, "\x1b[K") {
		t.Errorf("frame %q drew below the terminal or erased a full row", got)
	}
}

// Through a Renderer: the alternate screen's virtual terminal is drawn,
// a keystroke's echo redraws one row, and nothing of an OSC, DCS or mode
// switch the program wrote is in a frame.
func TestFrameOfARenderersScreen(t *testing.T) {
	r := New(Options{Profile: ANSI256})
	r.ResizeScreen(20, 5)
	r.WriteString("\x1b[?1049h\x1b[H\x1b[2J\x1b]0;TITLE\a\x1b]52;c;Y2xpcA==\a\x1bPq#0\x1b\\\x1b[?1h\x1b[?1000h\x1b[1;1Hhead\x1b[3;1Htyped: ")
	emu := r.Screen()
	if emu == nil || !r.Keys().AppCursor {
		t.Fatalf("no screen (%v) or its cursor keys' mode not followed (%+v)", emu, r.Keys())
	}
	var f Frame
	cur := emu.CursorPosition()
	first := string(f.Draw(nil, ScreenRows(emu, ANSI256, false), cur.X, cur.Y, !emu.CursorHidden(), 20, 5))
	for _, bad := range []string{"TITLE", "Y2xp", "\x1b]", "\x1bP", "?1h", "?1000h"} {
		if strings.Contains(first, bad) {
			t.Errorf("frame %q holds %q", first, bad)
		}
	}
	r.WriteString("x")
	cur = emu.CursorPosition()
	got := string(f.Draw(nil, ScreenRows(emu, ANSI256, false), cur.X, cur.Y, !emu.CursorHidden(), 20, 5))
	if want := "\x1b[?25l\x1b[3;1Htyped: x\x1b[K\x1b[3;9H\x1b[?25h"; got != want {
		t.Errorf("a keystroke's echo\n got %q\nwant %q", got, want)
	}
	r.WriteString("\x1b[?1049l")
	if r.Screen() != nil || r.Keys().AppCursor {
		t.Error("the screen outlived the program's leaving it")
	}
}

// BenchmarkFrame is a frame of a 120×40 screen a program redrew whole
// (every row changed, coloured): ScreenRows and Draw, what run and attach
// spend per frame of a flood (at most one frame per 12 ms).
func BenchmarkFrame(b *testing.B) {
	r := New(Options{Profile: TrueColor})
	r.ResizeScreen(120, 40)
	r.WriteString("\x1b[?1049h")
	emu := r.Screen()
	var f Frame
	var buf []byte
	b.ReportAllocs()
	for i := range b.N {
		var sb strings.Builder
		for y := range 40 {
			fmt.Fprintf(&sb, "\x1b[%d;1H\x1b[3%dm%s\x1b[0m", y+1, (i+y)%8, strings.Repeat(string(rune('a'+(i+y)%26)), 118))
		}
		r.WriteString(sb.String())
		buf = f.Draw(buf[:0], ScreenRows(emu, TrueColor, false), 0, 0, true, 120, 40)
	}
	b.ReportMetric(float64(len(buf)), "bytes/frame")
}

// The control strings of a program on its screen (titles, hyperlinks,
// DCS), whatever UTF-8 they hold and wherever a Write cuts them, draw
// nothing on the screen: a title "✳ Claude Code" (U+2733 is E2 9C B3, and
// 0x9C is C1 ST to the emulator's parser) is not printed as " Claude
// Code"; an ESC that ends a string starts the next sequence, and one cut
// off at the end of a Write waits for the next.
func TestScreenControlStrings(t *testing.T) {
	out := "\x1b[?1049h\x1b[Hab\x1b]0;✳ Claude Code\acd\x1bP1$q✳m\x1b\\ef" +
		"\x1b]8;;http://x.example/✳\x1b\\link\x1b]8;;\x1b\\\x1b]2;✳ t\x1b[2;1Hnext\x1b_✳\x1b\\ row"
	want := []string{"abcdeflink", "next row"}
	for cut := range len(out) + 1 {
		for _, chunks := range [][]string{{out[:cut], out[cut:]}, bytesOf(out[:cut], out[cut:])} {
			r := New(Options{ScreenCols: 20, ScreenRows: 3})
			for _, c := range chunks {
				r.WriteString(c)
			}
			rows := ScreenRows(r.Screen(), NoColor, false)
			for i, w := range want {
				if got := strings.TrimRight(rows[i], " "); got != w {
					t.Fatalf("cut at %d (%d writes): row %d is %q, want %q", cut, len(chunks), i, got, w)
				}
			}
		}
	}
}

// bytesOf is a then b, a byte a Write.
func bytesOf(a, b string) []string {
	var w []string
	for i := range len(a) {
		w = append(w, a[i:i+1])
	}
	return append(w, b)
}
