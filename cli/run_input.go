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

// termInput forwards a terminal's lines to the running turn.
type termInput struct {
	t    *turnRunner
	in   *os.File
	orig *unix.Termios // our terminal's settings, restored at the end

	// echoed: what is typed is echoed where the live line is drawn (stdin
	// and stdout are one terminal).
	echoed bool

	mu     sync.Mutex
	gate   *rig.OpenGate // open gate the next line answers
	hidden bool          // our terminal's echo is off (the turn's is)
	wg     sync.WaitGroup
}

// startInput starts forwarding when stdin is a terminal (and not --json;
// the window size follows only when stdout is one too); it returns a stop
// function that waits for its goroutines and restores the terminal.
func (t *turnRunner) startInput(ctx context.Context) (stop func()) {
	e := t.c
	in, ok := e.stdin.(*os.File)
	if e.json || !ok || !isTerminal(in) {
		return func() {}
	}
	orig, err := unix.IoctlGetTermios(int(in.Fd()), termiosGet)
	if err != nil {
		return func() {}
	}
	ti := &termInput{t: t, in: in, orig: orig}
	if out, ok := e.stdout.(*os.File); ok && t.live != nil {
		ti.echoed = sameFile(in, out)
	}
	t.input = ti
	ctx, cancel := context.WithCancel(ctx)
	ti.wg.Go(func() { ti.forward(ctx) })
	ti.wg.Go(func() { ti.followEcho(ctx) })
	ti.wg.Go(func() { ti.followSize(ctx) })
	return func() {
		cancel()
		ti.wg.Wait()
		unix.IoctlSetTermios(int(in.Fd()), termiosSet, ti.orig)
	}
}

// answerGate makes the next line typed the answer to g.
func (ti *termInput) answerGate(g rig.OpenGate) {
	ti.mu.Lock()
	ti.gate = &g
	ti.mu.Unlock()
}

// forward reads lines and sends each to the turn, or to an open gate.
func (ti *termInput) forward(ctx context.Context) {
	s := ti.t.s
	for {
		line, err := readLine(ctx, ti.in)
		if ctx.Err() != nil {
			return
		}
		ti.mu.Lock()
		g, hidden := ti.gate, ti.hidden
		ti.gate = nil
		ti.mu.Unlock()
		if g != nil {
			ti.t.answered()
			answer := strings.ToLower(strings.TrimSpace(line))
			ti.t.respond(*g, err == nil && (answer == "y" || answer == "yes"))
			if err != nil {
				return
			}
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, lineTimeout)
		live := ti.t.live
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
		cancel()
		if serr != nil && live != nil {
			live.forgetTyped() // the turn will not echo it
		}
		var noTerm *rig.NoTerminalError
		switch {
		case errors.As(serr, &noTerm):
			fmt.Fprintln(ti.t.stderr(), "looprig: this turn has no terminal (its profile has tty = false): what you type is not sent")
			return
		case serr != nil && ctx.Err() == nil:
			fmt.Fprintf(ti.t.stderr(), "looprig: input not sent: %s\n", textsafe.Line(serr.Error()))
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return
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
	fd := int(ti.in.Fd())
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
		terminal, echoOff, err := ti.t.s.TerminalState(qctx)
		cancel()
		if err != nil {
			continue
		}
		off := terminal && echoOff
		if off == hidden {
			continue
		}
		st := *ti.orig
		if off {
			st.Lflag &^= unix.ECHO
		}
		if unix.IoctlSetTermios(fd, termiosSet, &st) == nil {
			hidden = off
			ti.mu.Lock()
			ti.hidden = off
			ti.mu.Unlock()
		}
	}
}

// followSize gives the turn our window size now and after each change.
func (ti *termInput) followSize(ctx context.Context) {
	out, ok := ti.t.c.stdout.(*os.File)
	if !ok || !isTerminal(out) {
		return
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	for {
		if ws, err := unix.IoctlGetWinsize(int(out.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 && ws.Row > 0 {
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			ti.t.s.Resize(rctx, int(ws.Col), int(ws.Row))
			cancel()
		}
		select {
		case <-ctx.Done():
			return
		case <-winch:
		}
	}
}
