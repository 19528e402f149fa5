package tui

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"looprig/internal/termrender"
)

// Turn output in the events pane. The output of the turn being shown is
// fed to a termrender.Renderer (internal/termrender/doc.go says what it
// keeps and drops): the lines it makes final go into the ring, the lines
// it still holds (a "\r" progress bar, a multi-line progress redrawn with
// cursor-up) are drawn after them and replaced as they change. The turn's
// end (flushPending) pushes them too and drops the renderer. Journal
// replays and live streams go through this same path (sessView.apply).

// maxLineCells is the widest line the renderer keeps; a longer line wraps
// onto the next, as a terminal's autowrap does.
const maxLineCells = 2048

// maxStoredLine bounds the bytes kept of one rendered output line in the
// ring (a line of 2048 cells, each with its own colours, is far more).
const maxStoredLine = 16 << 10

// outProfile is the colour profile turn output is rendered with: the one
// of the TUI's lipgloss renderer (Ascii, as under NO_COLOR, gives plain
// text).
func outProfile(r *lipgloss.Renderer) termrender.Profile {
	return termrender.ProfileOf(r.ColorProfile())
}

// output feeds text of turn turnID (stream class cls) to the turn's
// renderer, pushing the lines that became final into the ring. A renderer
// belongs to one turn and one class: output of another turn, or of the
// other stream, ends the lines of the previous one first.
func (v *sessView) output(turnID string, cls lineClass, text string) {
	if text == "" {
		return
	}
	if v.transcript.out != nil && (v.transcript.outTurn != turnID || v.transcript.outCls != cls) {
		v.flushPending()
	}
	if v.transcript.out == nil {
		v.transcript.out = termrender.New(termrender.Options{Profile: v.transcript.prof, MaxLineCells: maxLineCells})
		v.transcript.outTurn = turnID
		v.transcript.outCls = cls
	}
	wasFull := v.transcript.out.FullScreen()
	v.transcript.out.WriteString(text)
	v.pushOut(cls, v.transcript.out.Final())
	v.transcript.pendDirty = true
	v.feedScreen(turnID, text, wasFull || v.transcript.out.FullScreen())
}

// feedScreen feeds text to the screen of the turn's full-screen program
// (screen.go), starting one when the output has (or had, in this text)
// the alternate screen, and dropping it once the program left it.
func (v *sessView) feedScreen(turnID, text string, full bool) {
	if v.transcript.screen != nil && v.transcript.screen.turnID != turnID {
		v.transcript.screen = nil
	}
	if v.transcript.screen == nil {
		if !full {
			return
		}
		v.transcript.screen = newTurnScreen(turnID, v.transcript.screenSize[0], v.transcript.screenSize[1])
		if v.transcript.screen == nil {
			return
		}
	}
	v.transcript.screen.write(text)
}

// flushScreen feeds the screen what the events just folded wrote to it,
// once per batch (live.go, journal.go), and drops it when the program
// left the alternate screen.
func (v *sessView) flushScreen() {
	if v.transcript.screen == nil {
		return
	}
	v.transcript.screen.flush()
	if !v.transcript.screen.active() {
		v.transcript.screen = nil
	}
}

// flushPending ends the output shown so far (the turn ended, or something
// else is said between its lines): the lines still pending become final
// and the renderer is dropped.
func (v *sessView) flushPending() {
	if v.transcript.out == nil {
		return
	}
	v.pushOut(v.transcript.outCls, v.transcript.out.Flush())
	v.transcript.out = nil
	v.transcript.outTurn = ""
	v.transcript.pend, v.transcript.pendDirty = nil, false
	v.transcript.screen = nil
}

// pushOut pushes final output lines into the ring. Of more lines than the
// ring holds only the last are kept; all are counted.
func (v *sessView) pushOut(cls lineClass, lines []string) {
	n := len(lines)
	if n == 0 {
		return
	}
	v.transcript.outLines += uint64(n)
	v.transcript.added += n
	if n > ringCapacity {
		lines = lines[n-ringCapacity:]
	}
	for _, s := range lines {
		v.transcript.ring.push(evLine{cls: cls, text: "  " + capLine(s)})
	}
}

// pending returns the output lines that may still change, drawn after the
// ring. They are taken from the renderer when the frame needs them, not
// at every delta.
func (v *sessView) pending() []string {
	if v.transcript.pendDirty {
		v.transcript.pend = v.transcript.out.Pending()
		v.transcript.pendDirty = false
	}
	return v.transcript.pend
}

// capLine cuts a rendered line longer than maxStoredLine bytes, outside
// any escape sequence and UTF-8 character, ends it with a reset when it
// has SGR, and says how much was cut.
func capLine(s string) string {
	if len(s) <= maxStoredLine {
		return s
	}
	n := maxStoredLine
	// Back out of an SGR sequence (termrender emits only ESC [ … m).
	if i := strings.LastIndexByte(s[:n], '\x1b'); i >= 0 && strings.IndexByte(s[i:n], 'm') < 0 {
		n = i
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	out := s[:n]
	if strings.IndexByte(out, '\x1b') >= 0 {
		out += "\x1b[0m"
	}
	return out + " …(+" + strconv.Itoa(len(s)-n) + " bytes)"
}

// fitStyled is fit for a line that may carry its own SGR sequences (turn
// output): the width is measured and the line cut without splitting a
// sequence (ansi.Truncate keeps every sequence, the final reset
// included), and a cut line still ends with a reset.
func fitStyled(s string, w int) string {
	if strings.IndexByte(s, '\x1b') < 0 {
		return fit(s, w)
	}
	if w <= 0 {
		return ""
	}
	sw := ansi.StringWidth(s)
	if sw <= w {
		return s + spaces(w-sw)
	}
	t := ansi.Truncate(s, w, "…")
	if !strings.HasSuffix(t, "\x1b[0m") {
		t += "\x1b[0m"
	}
	return t + spaces(w-ansi.StringWidth(t))
}

// newSessView is newSessView for this TUI: its output is rendered with
// the TUI's colour profile.
func (m *model) newSessView(id string) *sessView {
	v := newSessView(id)
	v.transcript.prof = outProfile(m.renderer)
	cols, rows := m.turnSize()
	v.transcript.screenSize = [2]int{cols, rows}
	return v
}
