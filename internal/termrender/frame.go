package termrender

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
)

// Passing a full-screen program's screen through to a terminal (run and
// attach do, as tmux would). The Renderer's virtual terminal of the
// alternate screen (Screen) is the program's screen; a Frame draws its
// rendered rows (ScreenRows: text and SGR that looprig emits) on the
// user's terminal with cursor addressing of its own, only the rows that
// changed since the frame before, and then places the cursor where the
// program has it. Nothing of the program's output reaches the terminal
// otherwise: no OSC (titles, hyperlinks, clipboard), DCS or mode switch
// but the few a Frame's owner emits itself (the alternate screen, the
// cursor keys' mode, bracketed paste).

// Screen returns the virtual terminal of the alternate screen while the
// output has it, nil otherwise. It is the Renderer's: it changes with
// each Write, and is not safe for concurrent use with one.
func (r *Renderer) Screen() *vt.Emulator {
	if !r.alt {
		return nil
	}
	return r.scr
}

// ResizeScreen sets the size of the terminal the program draws on: the
// virtual terminal of the alternate screen, now and when the output next
// enters it.
func (r *Renderer) ResizeScreen(cols, rows int) {
	r.scrCols, r.scrRows = max(1, cols), max(1, rows)
	if r.scr != nil && (r.scr.Width() != r.scrCols || r.scr.Height() != r.scrRows) {
		r.scr.Resize(r.scrCols, r.scrRows)
	}
}

// ScreenKeys are the modes of the alternate screen's program that change
// what the keys typed to it send: application cursor keys (DECCKM: arrows
// as ESC O A) and bracketed paste.
type ScreenKeys struct{ AppCursor, BracketedPaste bool }

// Keys returns the modes of ScreenKeys the program of the alternate
// screen set (none when the output is not on it).
func (r *Renderer) Keys() ScreenKeys {
	if r.Screen() == nil {
		return ScreenKeys{}
	}
	return r.keys
}

// followKeys makes emu report the modes of ScreenKeys to r.
func (r *Renderer) followKeys(emu *vt.Emulator) {
	r.keys = ScreenKeys{}
	set := func(m ansi.Mode, on bool) {
		switch m {
		case ansi.ModeCursorKeys:
			r.keys.AppCursor = on
		case ansi.ModeBracketedPaste:
			r.keys.BracketedPaste = on
		}
	}
	emu.SetCallbacks(vt.Callbacks{
		EnableMode:  func(m ansi.Mode) { set(m, true) },
		DisableMode: func(m ansi.Mode) { set(m, false) },
	})
}

// Frame is what a terminal shows of a screen drawn on it with Draw: the
// rows drawn, and the cursor. Its zero value has drawn nothing.
type Frame struct {
	rows    []string // drawn, as given to Draw (clipped); nil: nothing known
	height  int      // rows of the terminal blanked or drawn
	x, y    int      // the cursor, 0-based
	shown   bool     // the cursor is visible
	cursorK bool     // x, y and shown are known
}

// Invalidate forgets what the terminal shows (it was cleared, or resized,
// or something else wrote on it): the next Draw draws every row and the
// cursor.
func (f *Frame) Invalidate() { *f = Frame{} }

// Draw appends to buf what makes a terminal of cols×height that shows f
// show rows (rendered rows, each self-contained: ScreenRows) and the
// cursor at x, y (0-based), visible when shown, and records it in f.
// Only the rows that differ from the ones drawn before are drawn, each by
// moving to its start (CUP), writing it and erasing what follows it (EL)
// unless it fills the row; rows wider than cols are cut, rows below height
// are left out, and the terminal's rows below the screen are blank. The
// cursor is hidden while rows are drawn. Nothing that changed: nothing
// appended.
func (f *Frame) Draw(buf []byte, rows []string, x, y int, shown bool, cols, height int) []byte {
	if cols < 1 || height < 1 {
		return buf
	}
	drew := false
	hide := func() {
		if !drew {
			drew = true
			if !f.cursorK || f.shown {
				buf = append(buf, "\x1b[?25l"...)
			}
		}
	}
	known := f.rows != nil && f.height == height
	if !known {
		f.rows = make([]string, 0, height)
	}
	for i := range height {
		row := ""
		if i < len(rows) {
			row = clipRow(rows[i], cols)
		}
		if known && i < len(f.rows) && f.rows[i] == row {
			continue
		}
		hide()
		buf = append(buf, "\x1b["...)
		buf = strconv.AppendInt(buf, int64(i+1), 10)
		buf = append(buf, ";1H"...)
		buf = append(buf, row...)
		if ansi.StringWidth(row) < cols {
			buf = append(buf, "\x1b[K"...)
		}
		if i < len(f.rows) {
			f.rows[i] = row
		} else {
			f.rows = append(f.rows, row)
		}
	}
	f.height = height
	x, y = min(max(x, 0), cols-1), min(max(y, 0), height-1)
	if drew || !f.cursorK || f.x != x || f.y != y {
		buf = append(buf, "\x1b["...)
		buf = strconv.AppendInt(buf, int64(y+1), 10)
		buf = append(buf, ';')
		buf = strconv.AppendInt(buf, int64(x+1), 10)
		buf = append(buf, 'H')
	}
	switch {
	case shown && (drew || !f.cursorK || !f.shown):
		buf = append(buf, "\x1b[?25h"...)
	case !shown && !drew && (!f.cursorK || f.shown):
		buf = append(buf, "\x1b[?25l"...)
	}
	f.x, f.y, f.shown, f.cursorK = x, y, shown, true
	return buf
}

// clipRow is a rendered row without its trailing blank cells (unstyled
// spaces), cut to cols cells.
func clipRow(row string, cols int) string {
	row = strings.TrimRight(row, " ")
	if ansi.StringWidth(row) <= cols {
		return row
	}
	cut := ansi.Truncate(row, cols, "")
	if strings.Contains(cut, "\x1b[") && !strings.HasSuffix(cut, "\x1b[0m") {
		cut += "\x1b[0m" // the row's reset was cut off with its end
	}
	return cut
}
