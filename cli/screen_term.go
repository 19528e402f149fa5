package cli

import (
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"looprig/internal/termrender"
)

// A full-screen program's screen on our terminal. run and attach on a
// terminal pass the screen of a program on the alternate screen (less,
// vim, htop, Claude Code's interface) through, as tmux would: while the
// turn's output has it, our terminal is on its own alternate screen and
// shows the program's screen, and what is typed goes to the program key
// by key (screen_input.go). The transcript's line output goes on beside it
// as before: the renderer's notice lines mark where the screen started and
// ended, and the lines after it resume on the main screen.
//
// The screen is the turn renderer's virtual terminal of the alternate
// screen (termrender.Renderer.Screen), the size of our window (which is
// the turn's: run_input.go gives it ours). Its rows are rebuilt from the
// emulator's cells (text and SGR only, termrender.ScreenRows) and drawn
// with cursor addressing looprig emits itself (termrender.Frame), only the
// rows that changed; nothing else of the program's output reaches our
// terminal (no title, hyperlink, clipboard, DCS; no bell either). Frames
// are coalesced: a change that comes after a quiet spell of the output
// (screenQuiet: a program's answer), or the first change after keys were
// sent to the program (typed: their echo), is drawn at once; while the
// output goes on without either (a flood), at most one frame every
// screenFrameEvery is drawn, the last state always, so a flood costs a
// bounded number of frames (a person typing into it adds at most one
// frame per read of their keys).
//
// A key's echo is not left to the quiet spell: keys typed quickly (fast
// typing, a key right after the echo of the one before) have echoes less
// than screenQuiet apart, and the later one waited for the frame timer,
// up to screenFrameEvery. In BenchmarkAttachEchoVsTmux/fullscreen
// (internal/benchmarks), where a line is typed as soon as the one before
// shows, 10 echoes of 400 waited so, about 9 ms each: they were its p99.
//
// looprig's own lines (a note, an event's summary in attach, a gate's
// question) are written on the main screen: our terminal leaves its
// alternate screen for them and comes back, redrawn; a question (a
// gate's approve? [y/N]) keeps the main screen, and the keys in line
// mode, until it is answered.
//
// Whatever way it ends (the program leaves its screen, the turn ends,
// detach, an error, SIGINT or SIGTERM), our terminal leaves its alternate
// screen with the cursor shown, no SGR and no key mode set (close, which
// run and attach defer).

// screenFrameEvery is the least time between two frames of output that
// goes on; screenQuiet is the quiet before a change that makes it drawn
// at once whatever the time since the last frame. (A frame of a 120×40
// screen, every row changed, costs about 0.5 ms: a program changing its
// screen just often enough to be drawn at every change, once every
// screenQuiet, costs about an eighth of a core in frames.)
const (
	screenFrameEvery = 12 * time.Millisecond
	screenQuiet      = 4 * time.Millisecond
	// maxEchoes bounds the changes drawn at once as the echoes of sends of
	// keys that have not shown yet (screenTerm.typed).
	maxEchoes = 4
)

// Our own sequences; screenEnter is the program's switch to its screen,
// for a renderer that begins on it.
const (
	screenEnter    = "\x1b[?1049h"
	seqEnterScreen = "\x1b[?1049h\x1b[H\x1b[2J"
	seqLeaveScreen = "\x1b[0m\x1b[?25h\x1b[?1049l"
)

// screenTerm is our terminal as the screen of a turn's full-screen
// program. Its methods may be called from several goroutines (the event
// loop, the input forwarder, a frame's timer); a nil *screenTerm is no
// screen: what is given to it runs as it is.
type screenTerm struct {
	out  io.Writer
	prof termrender.Profile

	mu      sync.Mutex
	r       *termrender.Renderer // whose screen shows, or is to show; nil: none
	shown   bool                 // our terminal is on its alternate screen, drawn from r
	held    bool                 // a question of looprig's has the main screen
	started bool                 // frames may be drawn (attach: once its replay is over)
	closed  bool
	frame   termrender.Frame
	keys    termrender.ScreenKeys // the key modes set on our terminal
	last    time.Time             // the last frame's
	changed time.Time             // the last change's (want)
	// testFrames replaces screenFrameEvery and screenQuiet in a test
	// (testScreenFrames); 0: none.
	testFrames time.Duration
	echoes     int         // sends of keys whose echo is yet to come (typed), at most maxEchoes
	timer      *time.Timer // the next frame's, nil when none is due
	cols, rows int         // our window
	buf        []byte
	// raw switches the input forwarder between line mode and keys (nil:
	// stdin is not this terminal).
	raw func(on bool)
}

// newScreenTerm returns the screen of f, a terminal; started: it draws
// from the first change on.
func newScreenTerm(f *os.File, prof termrender.Profile, started bool) *screenTerm {
	s := &screenTerm{out: f, prof: prof, started: started, cols: termrender.DefaultScreenCols, rows: termrender.DefaultScreenRows}
	if testScreenFrames != nil {
		s.testFrames = max(testScreenFrames(), 0)
	}
	if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 && ws.Row > 0 {
		s.cols, s.rows = int(ws.Col), int(ws.Row)
	}
	return s
}

// with runs f holding the screen's lock: what touches a renderer the
// screen may draw from.
func (s *screenTerm) with(f func()) {
	if s == nil {
		f()
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

// fit gives renderer r the screen's size (a.mu held or r not shared yet).
func (s *screenTerm) fit(r *termrender.Renderer) {
	if s != nil {
		s.with(func() { r.ResizeScreen(s.cols, s.rows) })
	}
}

// setInput makes raw the input forwarder's switch between line mode and
// keys.
func (s *screenTerm) setInput(raw func(on bool)) {
	s.with(func() { s.raw = raw })
}

// want: r's output has the alternate screen; a frame will show it.
func (s *screenTerm) want(r *termrender.Renderer) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.r = r
	now := time.Now()
	quiet := now.Sub(s.changed) >= s.gap(screenQuiet) || s.echoes > 0 // a key's echo: drawn at once
	s.changed, s.echoes = now, max(s.echoes-1, 0)
	if quiet && s.timer != nil && s.timer.Stop() { // a frame is due later: draw it now
		s.timer = nil
	}
	s.schedule(quiet)
}

// gap is d, screenFrameEvery or screenQuiet, unless a test has its own.
func (s *screenTerm) gap(d time.Duration) time.Duration {
	if s.testFrames > 0 {
		return s.testFrames
	}
	return d
}

// typed: keys are being sent to the program; a change to come, their
// echo, is drawn at once whatever the time since the last one. Each send
// makes one change drawn at once: a second send can go before the echo
// of the first came back, and both echoes come less than screenQuiet
// apart. The keys the program shows nothing for are not counted past
// maxEchoes, so that a flood gets no more than maxEchoes frames at once
// from keys typed long before it.
func (s *screenTerm) typed() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.echoes = min(s.echoes+1, maxEchoes)
}

// start lets frames be drawn (attach: its replay is over); it reports
// whether a program's screen is to show.
func (s *screenTerm) start() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = true
	if s.closed || s.r == nil || s.r.Screen() == nil {
		return false
	}
	s.schedule(false)
	return true
}

// schedule draws a frame now, or when the last one is screenFrameEvery
// old, unless now (a change after a quiet spell) (s.mu held).
func (s *screenTerm) schedule(now bool) {
	if s.timer != nil || !s.started || s.held {
		return
	}
	if wait := s.gap(screenFrameEvery) - time.Since(s.last); wait > 0 && s.shown && !now {
		s.timer = time.AfterFunc(wait, s.tick)
		return
	}
	s.draw()
}

func (s *screenTerm) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timer = nil
	s.draw()
}

// draw draws a frame of r's screen, entering our alternate screen first
// (s.mu held).
func (s *screenTerm) draw() {
	if s.closed || s.held || !s.started || s.r == nil {
		return
	}
	emu := s.r.Screen()
	if emu == nil {
		return
	}
	s.buf = s.buf[:0]
	if !s.shown {
		s.shown = true
		s.frame.Invalidate()
		s.buf = append(s.buf, seqEnterScreen...)
		if s.raw != nil {
			s.raw(true)
		}
	}
	s.buf = s.setKeys(s.buf, s.r.Keys())
	cur := emu.CursorPosition()
	rows := termrender.ScreenRows(emu, s.prof, false)
	s.buf = s.frame.Draw(s.buf, rows, cur.X, cur.Y, !emu.CursorHidden(), s.cols, s.rows)
	s.last = time.Now()
	if len(s.buf) > 0 {
		s.out.Write(s.buf)
	}
}

// setKeys appends what sets our terminal's key modes to k.
func (s *screenTerm) setKeys(buf []byte, k termrender.ScreenKeys) []byte {
	if k.AppCursor != s.keys.AppCursor {
		buf = append(buf, modeSeq(1, k.AppCursor)...)
	}
	if k.BracketedPaste != s.keys.BracketedPaste {
		buf = append(buf, modeSeq(2004, k.BracketedPaste)...)
	}
	s.keys = k
	return buf
}

func modeSeq(mode int, on bool) string {
	c := "l"
	if on {
		c = "h"
	}
	if mode == 1 {
		return "\x1b[?1" + c
	}
	return "\x1b[?2004" + c
}

// leaveScreen takes our terminal back to its main screen, as it was
// (s.mu held); the input goes back to lines unless keep.
func (s *screenTerm) leaveScreen() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if !s.shown {
		return
	}
	s.shown = false
	buf := s.setKeys(nil, termrender.ScreenKeys{})
	buf = append(buf, seqLeaveScreen...)
	s.out.Write(buf)
	if s.raw != nil {
		s.raw(false)
	}
}

// done: renderer r's output left the alternate screen, or r is done
// with (s.mu held): our terminal leaves the screen if it shows r's.
func (s *screenTerm) done(r *termrender.Renderer) {
	if s == nil || s.r != r {
		return
	}
	s.leaveScreen()
	s.r = nil
}

// aside writes a message of looprig's (write) on the main screen: our
// terminal leaves the program's screen for it and comes back, redrawn,
// unless the message is a question, which keeps the main screen (and
// the keys in line mode) until resume.
func (s *screenTerm) aside(question bool, write func() (int, error)) (int, error) {
	if s == nil {
		return write()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	back := s.shown
	s.leaveScreen()
	n, err := write()
	if question {
		s.held = true
	} else if back {
		s.draw()
	}
	return n, err
}

// resume: looprig's question was answered; the program's screen shows
// again.
func (s *screenTerm) resume() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held {
		s.held = false
		s.schedule(false)
	}
}

// resize follows our window's size: the screen's emulator takes it (the
// turn's terminal takes it too, run_input.go) and the screen is drawn
// again whole.
func (s *screenTerm) resize(cols, rows int) {
	if s == nil || cols < 1 || rows < 1 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cols, s.rows = cols, rows
	if s.r == nil {
		return
	}
	s.r.ResizeScreen(cols, rows)
	if s.shown {
		s.frame.Invalidate()
		s.out.Write([]byte("\x1b[H\x1b[2J"))
		s.draw()
	}
}

// size is our window's size, as the screen knows it.
func (s *screenTerm) size() (cols, rows int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cols, s.rows
}

// close takes our terminal back to its main screen for good (deferred by
// run and attach; also attach's detach).
func (s *screenTerm) close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.leaveScreen()
	s.r = nil
}
