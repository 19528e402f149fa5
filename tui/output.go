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
// replays and live streams go through this same path (transcript.apply).

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
func (t *transcript) output(turnID string, cls lineClass, text string) {
	if text == "" {
		return
	}
	if t.out != nil && (t.outTurn != turnID || t.outCls != cls) {
		t.flushPending()
	}
	if t.out == nil {
		// The transcript's screen (screen.go) is the renderer's: it is
		// shown live, and its text kept when the output ends on it.
		// A program drawing on the main screen (top) draws on a screen of
		// the turn's size.
		t.out = termrender.New(termrender.Options{Profile: t.prof, MaxLineCells: maxLineCells, NoScreen: true,
			ScreenCols: t.screenSize[0], ScreenRows: t.screenSize[1]})
		t.outTurn = turnID
		t.outCls = cls
	}
	wasFull := t.out.FullScreen()
	t.out.WriteString(text)
	t.pushOut(cls, t.out.Final())
	t.pendDirty = true
	t.feedScreen(turnID, text, wasFull || t.out.FullScreen())
}

// feedScreen feeds text to the screen of the turn's full-screen program
// (screen.go), starting one when the output has (or had, in this text)
// the alternate screen, and dropping it once the program left it.
func (t *transcript) feedScreen(turnID, text string, full bool) {
	if t.screen != nil && t.screen.turnID != turnID {
		t.screen = nil
	}
	if t.screen == nil {
		if !full {
			return
		}
		t.screen = newTurnScreen(turnID, t.screenSize[0], t.screenSize[1])
		if t.screen == nil {
			return
		}
	}
	t.screen.write(text)
}

// flushScreen feeds the screen what the events just folded wrote to it,
// once per batch (live.go, journal.go), and drops it when the program
// left the alternate screen.
func (t *transcript) flushScreen() {
	if t.screen == nil {
		return
	}
	t.screen.flush()
	if !t.screen.active() {
		t.screen = nil
	}
}

// interject makes way for a line said in the middle of a turn's output
// (a gate, a bell, the agent's conversation): the lines of output so far
// go before it. While a full-screen program shows its screen, nothing
// ends: the screen lasts for the program's whole alternate-screen span
// (or until ctrl+] closes a screen f opened), whatever is said meanwhile,
// and the line waits in the transcript below the output before the
// screen.
func (t *transcript) interject() {
	if t.screen != nil && t.screen.active() || t.out != nil && t.out.FullScreen() {
		return
	}
	t.flushPending()
}

// flushPending ends the output shown so far (the turn ended, or something
// else is said between its lines): the lines still pending become final
// and the renderer is dropped.
func (t *transcript) flushPending() {
	if t.out == nil {
		return
	}
	onScreen := t.out.FullScreen()
	t.pushOut(t.outCls, t.out.Flush())
	if s := t.screen; s != nil && onScreen && !s.opened {
		// The output ended on a full-screen program's screen: its text
		// stays in the transcript (what the program last showed).
		s.flush()
		t.pushOut(t.outCls, termrender.Snapshot(s.lines(t.prof, false)))
	}
	t.out = nil
	t.outTurn = ""
	t.pend, t.pendDirty = nil, false
	t.screen = nil
}

// pushOut pushes final output lines into the ring. Of more lines than the
// ring holds only the last are kept; all are counted.
func (t *transcript) pushOut(cls lineClass, lines []string) {
	n := len(lines)
	if n == 0 {
		return
	}
	t.outLines += uint64(n)
	t.added += n
	if n > ringCapacity {
		lines = lines[n-ringCapacity:]
	}
	for _, s := range lines {
		t.ring.push(evLine{cls: cls, text: "  " + capLine(s)})
	}
}

// pending returns the output lines that may still change, drawn after the
// ring. They are taken from the renderer when the frame needs them, not
// at every delta.
func (t *transcript) pending() []string {
	if t.pendDirty {
		t.pend = t.out.Pending()
		t.pendDirty = false
	}
	return t.pend
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
