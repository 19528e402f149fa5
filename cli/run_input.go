package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"looprig/internal/textsafe"
	"looprig/rig"
)

// A run in a terminal is the turn's terminal too: the lines typed on
// stdin go to the turn (a line answers a gate instead while one is open;
// ^D at the start of a line sends an end of file), our terminal's echo is
// turned off while the turn's is (a password prompt: what is typed is not
// shown here either, and is journaled as hidden), and our window size is
// the turn's.

// echoPoll is how often the turn's terminal state is asked, to follow its
// echo.
const echoPoll = 150 * time.Millisecond

// lineTimeout bounds one line sent to the turn.
const lineTimeout = 10 * time.Second

// turnTerminal is the terminal of a session's running turn, as a
// termInput types into it (a turnSession; attach's hostTurn).
type turnTerminal interface {
	SendInput(ctx context.Context, text string) (hidden bool, err error)
	SendEOF(ctx context.Context) error
	TerminalState(ctx context.Context) (terminal, echoOff bool, err error)
	Resize(ctx context.Context, cols, rows int) error
	RespondGate(ctx context.Context, gateID string, approve bool) error
}

// inputOwner is the command a termInput reads for: run, or attach.
type inputOwner interface {
	// take is given each line read (err: its end, as readLine's) before it
	// goes to the turn; it reports whether it took the line instead (attach:
	// its keys, its prompt between turns).
	take(ctx context.Context, line string, err error) bool
	// ready waits until a line can go to the turn (run: until its submit
	// returned and, for the first line, until the turn has its terminal).
	ready(ctx context.Context, first bool)
}

// termInput forwards a terminal's lines to the running turn.
type termInput struct {
	s      turnTerminal
	owner  inputOwner
	in     *os.File
	size   *os.File // the terminal whose window size is the turn's; nil: none
	live   *liveLine
	stderr io.Writer     // looprig's messages (beside the live line)
	orig   *unix.Termios // our terminal's settings, restored at the end
	base   unix.Termios  // our settings while forwarding (attach's keys)
	keys   string        // bytes that end a line at once (attach's keys), handed to owner.take

	// echoed: what is typed is echoed where the live line is drawn (stdin
	// and stdout are one terminal).
	echoed bool
	// persist: forwarding goes on after a turn without a terminal (attach:
	// the next turn may have one, and its keys are read).
	persist bool

	// scr is the screen of a full-screen program on this terminal (nil:
	// none): it switches the input to keys (screen_input.go) and follows
	// the window's size.
	scr *screenTerm
	// The reader's (screen_input.go): what was read and not handed over
	// yet, its buffer, and the pipe a switch of mode wakes it with.
	pend         []byte
	rbuf         []byte
	wakeR, wakeW int

	mu      sync.Mutex
	gate    *rig.OpenGate // open gate the next line answers
	hidden  bool          // our terminal's echo is off (the turn's is)
	raw     bool          // a full-screen program has the keys: our terminal is raw
	stopped bool          // the terminal has its settings back: no more switches
	wg      sync.WaitGroup
}

// startInput starts forwarding when stdin is a terminal (and not --json;
// the window size follows only when stdout is one too); it returns a stop
// function that waits for its goroutines and restores the terminal.
func (t *turnRunner) startInput(ctx context.Context) (stop func()) {
	ti, stop := startTermInput(ctx, t.c.env, t.s, runInput{t}, t.live, t.stderr(), nil)
	t.input = ti
	return stop
}

// runInput is run's side of its termInput.
type runInput struct{ t *turnRunner }

func (runInput) take(context.Context, string, error) bool { return false }

func (r runInput) ready(ctx context.Context, first bool) {
	select { // typed while the submit waited (for a checkpoint): for the turn
	case <-r.t.submitted:
	case <-ctx.Done():
		return
	}
	if first && !r.t.exact {
		r.t.awaitTerminal(ctx) // a turn just started has its terminal a moment later
	}
}

// startTermInput starts forwarding the lines typed on e's stdin to s's
// running turn, when stdin is a terminal (and not --json); keys, when
// set, changes our terminal's settings while it forwards and returns the
// bytes that then end a line at once (attach's keys).
// It returns nil and a no-op when it does not forward; else its stop
// function waits for its goroutines and restores the terminal.
func startTermInput(ctx context.Context, e *env, s turnTerminal, owner inputOwner, live *liveLine, stderr io.Writer,
	keys func(*unix.Termios) string) (*termInput, func()) {
	in, ok := e.stdin.(*os.File)
	if e.json || !ok || !isTerminal(in) {
		return nil, func() {}
	}
	orig, err := unix.IoctlGetTermios(int(in.Fd()), termiosGet)
	if err != nil {
		return nil, func() {}
	}
	ti := &termInput{s: s, owner: owner, in: in, live: live, stderr: stderr, orig: orig, base: *orig}
	if out, ok := e.stdout.(*os.File); ok && isTerminal(out) {
		ti.size = out
		ti.echoed = live != nil && sameFile(in, out)
	}
	var err2 error
	if ti.wakeR, ti.wakeW, err2 = wakePipe(); err2 != nil {
		return nil, func() {}
	}
	if keys != nil {
		ti.keys = keys(&ti.base)
		unix.IoctlSetTermios(int(in.Fd()), termiosSet, &ti.base)
	}
	if ti.echoed && live.scr != nil {
		ti.scr = live.scr
		ti.scr.setInput(ti.setRaw)
	}
	ctx, cancel := context.WithCancel(ctx)
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	ti.resize(ctx) // before the turn starts: its terminal opens at our size
	ti.wg.Go(func() { ti.forward(ctx) })
	ti.wg.Go(func() { ti.followEcho(ctx) })
	ti.wg.Go(func() {
		defer signal.Stop(winch)
		ti.followSize(ctx, winch)
	})
	return ti, func() {
		ti.scr.close() // our terminal leaves a program's screen first
		cancel()
		ti.wg.Wait()
		ti.mu.Lock()
		ti.stopped = true
		ti.mu.Unlock()
		unix.IoctlSetTermios(int(in.Fd()), termiosSet, ti.orig)
		unix.Close(ti.wakeR)
		unix.Close(ti.wakeW)
	}
}

// terminalWait bounds how long input typed ahead of the turn waits for
// the turn's terminal, once the turn started.
const terminalWait = 2 * time.Second

// awaitTerminal waits until the running turn has its terminal, at most
// terminalWait (a turn without one, tty = false, never has it).
func (t *turnRunner) awaitTerminal(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, terminalWait)
	defer cancel()
	for {
		if terminal, _, err := t.s.TerminalState(ctx); err != nil || terminal {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// answerGate makes the next line typed the answer to g.
func (ti *termInput) answerGate(g rig.OpenGate) {
	ti.mu.Lock()
	ti.gate = &g
	ti.mu.Unlock()
}

// dropGate: gate id was answered elsewhere; the next line is not its
// answer.
func (ti *termInput) dropGate(id string) {
	ti.mu.Lock()
	if ti.gate != nil && ti.gate.ID == id {
		ti.gate = nil
	}
	ti.mu.Unlock()
}

// forward reads lines and sends each to the turn, or to an open gate;
// while a full-screen program has the keys, it sends them as they come.
func (ti *termInput) forward(ctx context.Context) {
	first := true
	for {
		line, raw, err := ti.read(ctx)
		if ctx.Err() != nil {
			return
		}
		if raw && err == nil {
			if !ti.sendKeys(ctx, line, first) {
				return
			}
			first = false
			continue
		}
		ti.mu.Lock()
		g, hidden := ti.gate, ti.hidden
		ti.gate = nil
		ti.mu.Unlock()
		if g != nil {
			if ti.live != nil {
				ti.live.resume(true) // our terminal went to the next line
			}
			answer := strings.ToLower(strings.TrimSpace(line))
			respondGate(ti.s, ti.stderr, *g, err == nil && (answer == "y" || answer == "yes"))
			if err != nil {
				return
			}
			continue
		}
		if ti.owner.take(ctx, line, err) {
			if err != nil && !errors.Is(err, io.EOF) {
				return
			}
			continue
		}
		ti.owner.ready(ctx, first)
		if ctx.Err() != nil {
			return
		}
		first = false
		if !ti.send(ctx, line, err, hidden) {
			return
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return
		}
	}
}

// send sends a line read (err: its end) to the turn; false: the turn has
// no terminal, and no more is sent.
func (ti *termInput) send(ctx context.Context, line string, err error, hidden bool) bool {
	s := ti.s
	sctx, cancel := context.WithTimeout(ctx, lineTimeout)
	defer cancel()
	live := ti.live
	if hidden || !ti.echoed {
		live = nil // the live line's terminal showed nothing of it
	}
	var serr error
	switch {
	case err == nil:
		if live != nil {
			live.typedLine(line) // our terminal echoed it: the turn's echo is on the screen already
		}
		_, serr = s.SendInput(sctx, line+"\n")
	case errors.Is(err, io.EOF) && line == "":
		serr = s.SendEOF(sctx)
	case errors.Is(err, io.EOF):
		if live != nil {
			live.typedPartial(line)
		}
		_, serr = s.SendInput(sctx, line) // ^D after text: what was typed, as a terminal does
	}
	if serr != nil && live != nil {
		live.forgetTyped() // the turn will not echo it
	}
	var noTerm *rig.NoTerminalError
	switch {
	case errors.As(serr, &noTerm):
		fmt.Fprintln(ti.stderr, "looprig: this turn has no terminal (its profile has tty = false): what you type is not sent")
		return ti.persist
	case serr != nil && ctx.Err() == nil:
		fmt.Fprintf(ti.stderr, "looprig: input not sent: %s\n", textsafe.Line(serr.Error()))
	}
	return true
}

// respondGate answers gate g of s, saying on stderr why it could not.
func respondGate(s turnTerminal, stderr io.Writer, g rig.OpenGate, approve bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.RespondGate(ctx, g.ID, approve); err != nil {
		var noGate *rig.NoGateError
		if !errors.As(err, &noGate) {
			fmt.Fprintf(stderr, "looprig: answer gate: %s\n", textsafe.Sanitize(err.Error()))
		}
	}
}

// sameFile says whether a and b are the same file (one terminal).
func sameFile(a, b *os.File) bool {
	var sa, sb unix.Stat_t
	if unix.Fstat(int(a.Fd()), &sa) != nil || unix.Fstat(int(b.Fd()), &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino && sa.Rdev == sb.Rdev
}

// followEcho turns our terminal's echo off while the turn's is off.
func (ti *termInput) followEcho(ctx context.Context) {
	hidden := false
	tick := time.NewTicker(echoPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		terminal, echoOff, err := ti.s.TerminalState(qctx)
		cancel()
		if err != nil {
			continue
		}
		off := terminal && echoOff
		if off == hidden {
			continue
		}
		ti.mu.Lock()
		ti.hidden = off
		if !ti.stopped && ti.applyTermios() == nil {
			hidden = off
		}
		ti.mu.Unlock()
	}
}

// followSize gives the turn our window size after each change (resize
// gave it the first, before the turn started).
func (ti *termInput) followSize(ctx context.Context, winch <-chan os.Signal) {
	if ti.size == nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-winch:
		}
		ti.resize(ctx)
	}
}

// resize gives the session our window size, when stdout is a terminal:
// the running turn's, else the next turn's (rig.Session.Resize).
func (ti *termInput) resize(ctx context.Context) {
	if ti.size == nil {
		return
	}
	if ws, err := unix.IoctlGetWinsize(int(ti.size.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 && ws.Row > 0 {
		ti.scr.resize(int(ws.Col), int(ws.Row))
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		ti.s.Resize(rctx, int(ws.Col), int(ws.Row))
		cancel()
	}
}

// wakePipe returns a non-blocking, close-on-exec pipe (read end, write
// end) that wakes the input reader's poll (screen_input.go). Pipe2 would
// set both flags at once, but macOS has no pipe2.
func wakePipe() (r, w int, err error) {
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		return -1, -1, err
	}
	for _, fd := range p {
		unix.CloseOnExec(fd)
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(p[0])
			unix.Close(p[1])
			return -1, -1, err
		}
	}
	return p[0], p[1], nil
}
