package tui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"

	"looprig/internal/termrender"
)

// A full-screen program's screen in the events pane. While a turn's
// output has the alternate screen (termrender.Renderer.FullScreen: less,
// vim, htop), the bytes of that turn are also fed to a virtual terminal
// (charmbracelet/x/vt) the size of the turn's terminal, and the events
// pane draws its screen instead of the transcript. The transcript keeps
// the renderer's notice lines; the screen is gone when the program leaves
// the alternate screen or the turn ends. For a program that draws on the
// main screen (top), f opens a screen (screenfocus.go) that lasts until
// ctrl+] or the turn's end. Output is queued and fed once per batch of
// events, within bounds (flush).
//
// Safety: nothing of the emulator reaches the user's terminal directly.
// Each row is rebuilt from the emulator's cells (their text and style
// only: no hyperlinks, titles or other state) as plain text with SGR, and
// that goes through termrender like any output line, so the row holds
// printable text and SGR that looprig itself emits, mapped to the TUI's
// colour profile.
//
// The emulator answers a program's queries (device attributes, cursor
// position, colours) on its input pipe, a synchronous io.Pipe that would
// block Update until read. looprig does not relay them, so the pipe is
// closed at once: an answer fails at once and is dropped, as if the
// terminal did not support the query (programs time out and go on).

// turnScreen is the virtual terminal of one turn's full-screen program.
type turnScreen struct {
	turnID string
	emu    *vt.Emulator
	// rows caches the rendered screen; nil after a write or resize.
	rows   []string
	prof   termrender.Profile
	cursor bool // rows were rendered with the cursor drawn
	// appCursor: the program asked for application cursor keys (DECCKM),
	// so arrows are sent as ESC O A rather than ESC [ A; bracketedPaste:
	// it asked for pastes between ESC [ 200 ~ and ESC [ 201 ~.
	appCursor, bracketedPaste bool
	// opened: f opened it for a turn with no alternate screen (top and
	// watch draw with cursor addressing on the main screen); it lasts
	// until the turn ends or ctrl+] closes it.
	opened bool
	// pending: output written since the last flush, its control strings
	// taken out (strs).
	pending []byte
	strs    termrender.StringFilter
}

// screenFeedBudget bounds the bytes one flush feeds a screen's emulator,
// which absorbs about 10 MB/s of cursor-addressed output
// (BenchmarkScreen): about 25 ms of an Update at most. Of more, only the
// last screenFeedBudget bytes are fed (and the screen switches before
// them); the screen is wrong until the program draws again, which a
// program flooding its screen does at once.
const screenFeedBudget = 256 << 10

// newTurnScreen returns a screen of cols×rows for turn turnID, or nil if
// the emulator's answers could not be switched off (an emulator whose
// input pipe is not closable would block the TUI on the first query).
func newTurnScreen(turnID string, cols, rows int) *turnScreen {
	s := &turnScreen{turnID: turnID}
	if s.emu = s.newEmulator(cols, rows); s.emu == nil {
		return nil
	}
	return s
}

// newEmulator returns the virtual terminal of s, cols×rows, that reports
// the modes of keys to s.
func (s *turnScreen) newEmulator(cols, rows int) *vt.Emulator {
	emu := termrender.NewScreen(cols, rows)
	if emu == nil {
		return nil
	}
	emu.SetCallbacks(vt.Callbacks{
		EnableMode:  func(m ansi.Mode) { s.setMode(m, true) },
		DisableMode: func(m ansi.Mode) { s.setMode(m, false) },
	})
	return emu
}

// setMode follows the modes that change what keys send.
func (s *turnScreen) setMode(m ansi.Mode, on bool) {
	switch m {
	case ansi.ModeCursorKeys:
		s.appCursor = on
	case ansi.ModeBracketedPaste:
		s.bracketedPaste = on
	}
}

// write queues output for the emulator; flush feeds it. The fold writes
// chunk by chunk and the model flushes once per batch of events
// (transcript.flushScreen), so a flood costs one bounded feed per Update,
// not one per chunk.
func (s *turnScreen) write(p string) {
	s.pending = append(s.pending, s.strs.Strip([]byte(p), termrender.DefaultMaxStringBytes)...)
	if len(s.pending) > 4*screenFeedBudget { // a long replay: bound the memory
		cut := len(s.pending) - screenFeedBudget
		s.pending = []byte(keepModes(string(s.pending[cut:]), string(s.pending[:cut])))
	}
}

// flush feeds the queued output to the emulator.
//
// The shell engine's terminal has ONLCR off (rig/engine: a turn's "\n"
// is journaled as written), which full-screen programs see and allow for:
// they move the cursor themselves. A program that draws on the main
// screen with plain lines (top, watch) does not, and on a terminal with
// ONLCR its "\n" returns the carriage too; on a screen opened with f and
// not on the alternate screen, a "\n" is fed as "\r\n", as that terminal
// would show it.
func (s *turnScreen) flush() {
	if len(s.pending) == 0 {
		return
	}
	p := trimScroll(string(s.pending), s.emu.Height())
	s.pending = s.pending[:0]
	if cut := len(p) - screenFeedBudget; cut > 0 {
		p = keepModes(p[cut:], p[:cut])
	}
	if s.opened && !s.emu.IsAltScreen() {
		p = strings.ReplaceAll(p, "\n", "\r\n")
	}
	s.rows = nil
	if termrender.WriteScreen(s.emu, []byte(p)) == nil {
		return
	}
	// The emulator failed on this output and its state is unknown: a
	// blank screen of the same size, on the alternate screen if it was,
	// until the program draws again.
	alt := s.emu.IsAltScreen()
	emu := s.newEmulator(s.emu.Width(), s.emu.Height())
	if emu == nil {
		return // keep the old one: it is no worse than none
	}
	s.emu, s.appCursor, s.bracketedPaste = emu, false, false
	if alt {
		termrender.WriteScreen(emu, []byte("\x1b[?1049h"))
	}
}

// trimScroll bounds the work of output that scrolls the screen many
// times (yes, a build log on a screen opened with f). The emulator moves
// the whole screen for each line scrolled off (about 17 µs at 120×40), so
// of output with more than 4 screenfuls of line feeds only the last
// screenful of lines is fed, after the alternate-screen switch the
// dropped part ended with, if any. What a program drew with cursor
// addressing in the dropped part is lost until it draws again; a screen
// only ever shows its last screenful of a scroll.
func trimScroll(p string, rows int) string {
	if strings.Count(p, "\n") <= 4*rows {
		return p
	}
	cut, n := len(p), 0
	for cut > 0 && n <= rows {
		cut = strings.LastIndexByte(p[:cut], '\n')
		n++
	}
	return keepModes(p[cut+1:], p[:cut+1])
}

// keepModes returns kept after the alternate-screen switch that dropped
// ends with, if any: skipped output must not leave the emulator on the
// wrong screen.
func keepModes(kept, dropped string) string {
	enter := max(strings.LastIndex(dropped, "\x1b[?1049h"), strings.LastIndex(dropped, "\x1b[?1047h"), strings.LastIndex(dropped, "\x1b[?47h"))
	leave := max(strings.LastIndex(dropped, "\x1b[?1049l"), strings.LastIndex(dropped, "\x1b[?1047l"), strings.LastIndex(dropped, "\x1b[?47l"))
	switch {
	case enter > leave:
		return "\x1b[?1049h" + kept
	case leave > enter:
		return "\x1b[?1049l" + kept
	}
	return kept
}

// resize follows the turn's terminal size.
func (s *turnScreen) resize(cols, rows int) {
	cols, rows = max(1, cols), max(1, rows)
	if cols == s.emu.Width() && rows == s.emu.Height() {
		return
	}
	s.emu.Resize(cols, rows)
	s.rows = nil
}

// active says whether the screen is still wanted: the program has the
// alternate screen, or f opened it.
func (s *turnScreen) active() bool { return s.opened || s.emu.IsAltScreen() }

// lines returns the screen's rows rendered for profile p, the cursor
// drawn in reverse video when cursor is set and the program shows it.
func (s *turnScreen) lines(p termrender.Profile, cursor bool) []string {
	if s.rows != nil && s.prof == p && s.cursor == cursor {
		return s.rows
	}
	rows := termrender.ScreenRows(s.emu, p, cursor)
	s.rows, s.prof, s.cursor = rows, p, cursor
	return rows
}
