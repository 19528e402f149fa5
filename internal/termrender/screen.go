package termrender

import (
	"bytes"
	"strings"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/vt"
)

// A full-screen program's screen. While the output has the alternate
// screen, a Renderer keeps a notice line in its place (its screen is not
// line output) and also feeds the same bytes to a virtual terminal
// (charmbracelet/x/vt). When the output ends on that screen (the turn
// ended, or a journal record was cut there), the screen's text is the
// last thing the program showed: Flush and String render its rows below
// a notice, so a program that never leaves its screen does not hide what
// it drew. The rows are rebuilt from the emulator's cells (text and style
// only) and rendered like any output line: only printable text and SGR
// that looprig emits reach a terminal.

// AltSnapshot is the notice above a full-screen program's screen rendered
// when the output ended on it.
const AltSnapshot = "[full-screen program: its screen when the output ended]"

// DefaultScreenCols and DefaultScreenRows are the size of the virtual
// terminal when Options give none: the runtime's default turn terminal.
const (
	DefaultScreenCols = 120
	DefaultScreenRows = 40
)

// screenFeedMax bounds what one Write feeds the virtual terminal, which
// absorbs about 10 MB/s of cursor-addressed output: of a longer chunk,
// only its last screenFeedMax bytes (a program flooding its screen draws
// it again at once).
const screenFeedMax = 256 << 10

// ScreenRows renders the rows of emu for profile p, the cursor drawn in
// reverse video when cursor is set and the program shows it.
func ScreenRows(emu *vt.Emulator, p Profile, cursor bool) []string {
	w, h := emu.Width(), emu.Height()
	cur := emu.CursorPosition()
	showCursor := cursor && !emu.CursorHidden()
	rows := make([]string, h)
	var b strings.Builder
	for y := range h {
		b.Reset()
		var pen uv.Style
		for x := 0; x < w; x++ {
			c := emu.CellAt(x, y)
			content, st, width := " ", uv.Style{}, 1
			if c != nil {
				if c.Width == 0 && c.Content == "" {
					continue // the second column of a wide character
				}
				st, width = c.Style, max(1, c.Width)
				if c.Content != "" {
					content = c.Content
				}
			}
			if showCursor && x == cur.X && y == cur.Y {
				st.Attrs ^= uv.AttrReverse
			}
			if !st.Equal(&pen) {
				b.WriteString(uv.StyleDiff(&pen, &st))
				pen = st
			}
			b.WriteString(content)
			x += width - 1
		}
		// The row is output like any other: text and SGR kept, colours
		// mapped to the profile, anything else dropped.
		rows[y] = strings.TrimRight(String(b.String(), p), "\n")
	}
	return rows
}

// feedScreen feeds p to the virtual terminal of the alternate screen,
// making one when the output has just entered it.
func (r *Renderer) feedScreen(p []byte) {
	if r.scr == nil {
		if r.scr = NewScreen(r.scrCols, r.scrRows); r.scr == nil {
			return
		}
		r.followKeys(r.scr)
		r.strs = StringFilter{out: r.strs.out[:0]}
	}
	p = r.strs.Strip(p, r.maxStr)
	if len(p) > screenFeedMax {
		p = p[len(p)-screenFeedMax:]
	}
	if WriteScreen(r.scr, p) != nil {
		// Its state is unknown: a blank screen of the same size, still
		// the alternate one, until the program draws again.
		if r.scr = NewScreen(r.scrCols, r.scrRows); r.scr != nil {
			r.followKeys(r.scr)
			WriteScreen(r.scr, []byte(enterAltScreen))
		}
	}
}

// StringFilter takes the control strings (OSC, DCS, SOS, PM and APC: ESC ]
// P X ^ _, up to BEL or ST) out of what a virtual terminal is fed (the
// Renderer's, the TUI's), across writes. Nothing of them is drawn on a
// screen looprig shows
// (no title, hyperlink, clipboard; a query's answer goes nowhere), and
// the emulator's parser reads the UTF-8 in them as bytes: one whose
// continuation byte is 0x9C (C1 ST) ends the string there and prints the
// rest as text (Claude Code's title "✳ Claude Code", U+2733 being E2 9C
// B3, printed " Claude Code" where its cursor was). A string longer than
// max is read as text again from there, as the renderer does.
type StringFilter struct {
	state uint8 // fGround, fEsc (an ESC held back: the next byte says what it starts), fStr, fStrEsc
	n     int   // bytes of the string so far
	out   []byte
}

const (
	fGround = iota
	fEsc
	fStr
	fStrEsc
)

// Strip returns p without its control strings, valid until the next
// call.
func (f *StringFilter) Strip(p []byte, max int) []byte {
	f.out = f.out[:0]
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch f.state {
		case fGround:
			j := bytes.IndexByte(p[i:], esc)
			if j < 0 {
				return append(f.out, p[i:]...)
			}
			f.out = append(f.out, p[i:i+j]...)
			i += j
			f.state = fEsc
		case fEsc:
			switch b {
			case ']', 'P', 'X', '^', '_':
				f.state, f.n = fStr, 0
			case esc:
				f.out = append(f.out, esc) // the first ESC starts nothing; the second is held
			default:
				f.out = append(f.out, esc, b)
				f.state = fGround
			}
		case fStr:
			switch {
			case b == bel || b == can || b == sub:
				f.state = fGround
			case b == esc:
				f.state = fStrEsc
			case f.n >= max:
				f.state = fGround // never terminated: read as text again
				i--
			default:
				f.n++
			}
		case fStrEsc:
			f.state = fGround
			if b != '\\' { // the ESC ends the string and starts a sequence
				f.state = fEsc
				i--
			}
		}
	}
	return f.out
}

// screenLines returns the notice and the rows of the alternate screen
// the output ended on (trailing blank rows left out), and forgets the
// screen; none when the output is not on it.
func (r *Renderer) screenLines() []string {
	scr := r.scr
	r.scr = nil
	if !r.alt || scr == nil {
		return nil
	}
	return Snapshot(ScreenRows(scr, r.prof, false))
}

// Snapshot returns the lines that stand for a screen whose rendered rows
// are rows when the output ends on it: AltSnapshot, then the rows without
// their trailing blanks, the trailing blank rows left out; none for a
// blank screen.
func Snapshot(rows []string) []string {
	out := make([]string, 0, len(rows)+1)
	out = append(out, AltSnapshot)
	for _, row := range rows {
		out = append(out, strings.TrimRight(row, " "))
	}
	for len(out) > 1 && strings.TrimSpace(out[len(out)-1]) == "" {
		out = out[:len(out)-1]
	}
	if len(out) == 1 {
		return nil
	}
	return out
}

// IsNotice reports whether a rendered line is one of the notices the
// renderer writes in place of a full-screen program's screen (looprig's
// words, not the program's output).
func IsNotice(line string) bool {
	return line == altEnter || line == altLeave || line == AltSnapshot
}
