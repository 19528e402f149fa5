package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// Default terminal size of a Console (NewConsole with zero values).
const (
	DefaultCols = 120
	DefaultRows = 40
)

// maxTermSize bounds a terminal dimension (the kernel stores 16 bits).
const maxTermSize = 0xffff

// interruptWriteWait bounds how long Interrupt waits to write the VINTR
// character before it signals the foreground process group directly.
const interruptWriteWait = 250 * time.Millisecond

// ErrNoTerminal is returned by Console methods when there is no terminal to
// act on: the turn runs without a pty (Config.NoTTY, the demo engine, an
// engine without terminals), has not been started yet, or has ended.
var ErrNoTerminal = errors.New("engine: the turn has no terminal")

// InputTimeoutError is returned by Console.Write (and EOF, Interrupt) when
// ctx ended before all the input was written to the terminal: the turn does
// not read its input and the terminal's input buffer is full. The turn is
// not affected; the first Written bytes of the input did reach the terminal,
// the rest did not.
type InputTimeoutError struct {
	Written int   // bytes of the input written
	Len     int   // bytes asked to write
	Err     error // context.Cause of the ctx that ended (wraps ctx.Err())
}

func (e *InputTimeoutError) Error() string {
	return fmt.Sprintf("engine: terminal input not accepted in time (the turn is not reading it): wrote %d of %d bytes: %v",
		e.Written, e.Len, e.Err)
}

func (e *InputTimeoutError) Unwrap() error { return e.Err }

// Console is the terminal of one turn as the runtime sees it: the window
// size, the input side (what a user types) and ^C. The runtime creates one
// per turn with NewConsole, passes it in Turn.Console, and calls its methods
// from any goroutine while the turn runs. The engine attaches the turn's
// pseudo-terminal when the turn starts and detaches it when the turn ends;
// before and after, Resize and Size only remember the size, Write,
// Deliver, EOF and Interrupt return ErrNoTerminal and EchoOff reports
// false. A Console with no terminal ever attached (Config.NoTTY, the demo
// engine) behaves the same all along.
//
// All methods are safe for concurrent use. A Console serves one turn at a
// time; it can be reused for a later turn. The zero value is a Console of
// the default size.
type Console struct {
	mu         sync.Mutex
	cols, rows int
	wsem       chan struct{} // held by the Write in progress: writes go in one at a time, in order
	tty        *os.File      // pty master of the running turn, nil when detached
	pgid       int           // the turn's process group, 0 until started
	gone       *os.File      // the pty master detached last
	goneEcho   bool          // whether gone echoed when it was detached
}

// NewConsole returns a Console of cols×rows cells; values ≤ 0 mean the
// defaults (DefaultCols×DefaultRows), values above 65535 are capped.
func NewConsole(cols, rows int) *Console {
	c := &Console{}
	c.cols, c.rows = normSize(cols, DefaultCols), normSize(rows, DefaultRows)
	return c
}

func normSize(n, def int) int {
	switch {
	case n <= 0:
		return def
	case n > maxTermSize:
		return maxTermSize
	}
	return n
}

// Size returns the terminal size, as set by NewConsole or the last Resize.
func (c *Console) Size() (cols, rows int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sizeLocked()
}

func (c *Console) sizeLocked() (cols, rows int) {
	return normSize(c.cols, DefaultCols), normSize(c.rows, DefaultRows)
}

// Resize sets the terminal size. While the turn runs, the pty's window size
// changes at once (TIOCSWINSZ: the kernel sends SIGWINCH to the turn's
// foreground process group); otherwise the size is remembered and applied
// when the turn's pty is created. Sizes must be 1..65535.
func (c *Console) Resize(cols, rows int) error {
	if cols < 1 || rows < 1 || cols > maxTermSize || rows > maxTermSize {
		return fmt.Errorf("engine: invalid terminal size %dx%d", cols, rows)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cols, c.rows = cols, rows
	if c.tty == nil {
		return nil
	}
	if err := setWinsize(c.tty, cols, rows); err != nil {
		return fmt.Errorf("engine: resize terminal: %w", err)
	}
	return nil
}

// State reports whether the turn has a terminal now (it runs on a
// pseudo-terminal and has not ended) and whether that terminal's echo is
// off (a program reading a password). A terminal whose attributes cannot
// be read counts as echo off: what is typed into it may be a secret.
func (c *Console) State() (terminal, echoOff bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tty == nil {
		return false, false
	}
	return true, !echoes(c.tty)
}

// EchoOff reports whether the turn's terminal has echo off at this moment
// (a program reading a password), or attributes that cannot be read;
// false when there is no terminal.
func (c *Console) EchoOff() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tty != nil && !echoes(c.tty)
}

// echoes reports whether the terminal f echoes its input: its attributes
// can be read and say ECHO.
func echoes(f *os.File) bool {
	st, err := getTermState(f)
	return err == nil && st.echo
}

// Delivery is what Console.Deliver did with some input: the first
// Written of its bytes reached the terminal, and Hidden says that the
// terminal did not echo throughout: its echo was off, or its attributes
// could not be read, when the write began or when it ended (the turn may
// have read the input without echo, as a password). For a turn that ended
// right after the write, the terminal's echo when it ended counts.
type Delivery struct {
	Written int
	Hidden  bool
}

// Write writes p to the terminal's input, as if typed: the turn reads it
// from its stdin (in canonical mode, the usual one, line by line: end a line
// with "\n" or "\r"; a line longer than the kernel's 4095-byte line buffer
// is cut). While echo is on the terminal echoes the input into the turn's
// output. hidden reports that the terminal may have taken the input without
// echo (see Delivery: the turn reads a password), so that the caller masks
// it and keeps nothing of it.
//
// Write never blocks beyond ctx: when the turn does not read its input and
// the terminal's buffer is full, Write returns *InputTimeoutError once ctx
// ends, with the number of bytes that went in (with a ctx that never ends,
// Write waits until the turn reads or ends). Concurrent writes go in one
// at a time, in call order as far as the callers are ordered. Without a
// terminal (see Console), Write returns ErrNoTerminal; a turn ending during
// the write also yields ErrNoTerminal.
func (c *Console) Write(ctx context.Context, p []byte) (hidden bool, err error) {
	d, err := c.Deliver(ctx, p)
	return d.Hidden, err
}

// Deliver is Write, reporting how much of p went in and whether the
// terminal echoed it throughout (see Delivery), also when it fails. The
// echo state is read under the write's own turn, right before the bytes go
// to the terminal and right after, so that no other write comes between.
func (c *Console) Deliver(ctx context.Context, p []byte) (Delivery, error) {
	var d Delivery
	if !c.attached() {
		return d, ErrNoTerminal
	}
	sem := c.sem()
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return d, inputTimeout(ctx, 0, len(p))
	}
	defer func() { <-sem }()

	// Under mu: the terminal, its echo state, and the write deadline. The
	// deadline is set under mu so that a concurrent detach (which sets a
	// past deadline to abort this write) cannot be overridden.
	c.mu.Lock()
	f := c.tty
	if f == nil {
		c.mu.Unlock()
		return d, ErrNoTerminal
	}
	d.Hidden = !echoes(f)
	if dl, ok := ctx.Deadline(); ok {
		_ = f.SetWriteDeadline(dl)
	}
	c.mu.Unlock()
	if len(p) == 0 {
		return d, nil
	}

	// Echo off right after the write (or, if the turn ended meanwhile,
	// when it ended; unknown: off): hidden. Read at once, before anything
	// else can take time.
	echoedAfter := func() {
		c.mu.Lock()
		switch {
		case c.tty == f:
			d.Hidden = d.Hidden || !echoes(f)
		case c.gone == f:
			d.Hidden = d.Hidden || !c.goneEcho
		default:
			d.Hidden = true
		}
		c.mu.Unlock()
	}
	var n int
	var werr error
	if ctx.Done() == nil {
		n, werr = f.Write(p)
		echoedAfter()
	} else {
		// A cancel (rather than a deadline) aborts the write through a
		// deadline in the past.
		wrote, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			select {
			case <-ctx.Done():
				_ = f.SetWriteDeadline(time.Unix(1, 0))
			case <-wrote:
			}
		}()
		n, werr = f.Write(p)
		echoedAfter()
		close(wrote)
		<-stopped
	}

	c.mu.Lock()
	still := c.tty == f
	if still {
		_ = f.SetWriteDeadline(time.Time{})
	}
	c.mu.Unlock()
	d.Written = n
	switch {
	case werr == nil:
		return d, nil
	case !still || errors.Is(werr, os.ErrClosed) || errors.Is(werr, syscall.EIO):
		return d, fmt.Errorf("engine: terminal input: turn ended after %d of %d bytes: %w", n, len(p), ErrNoTerminal)
	case errors.Is(werr, os.ErrDeadlineExceeded):
		return d, inputTimeout(ctx, n, len(p))
	}
	return d, fmt.Errorf("engine: terminal input: after %d of %d bytes: %w", n, len(p), werr)
}

func inputTimeout(ctx context.Context, n, size int) error {
	cause := context.Cause(ctx)
	if cause == nil {
		// The write deadline (ctx's deadline) passed a moment before ctx's
		// own timer fired.
		cause = context.DeadlineExceeded
	}
	return &InputTimeoutError{Written: n, Len: size, Err: cause}
}

// EOF sends end-of-file the way a terminal does when ^D is pressed: it
// writes the terminal's VEOF character (normally ^D). In canonical mode
// (the usual one) VEOF at the start of a line makes the turn's read return
// 0 bytes, which programs take as end of input; after a partial line it
// only delivers that line without a newline, so a second EOF is needed (as
// a user presses ^D twice). In non-canonical (raw) mode the program reads
// the character itself and decides. Errors as for Write; an error also when
// the terminal has VEOF disabled.
func (c *Console) EOF(ctx context.Context) error {
	st, err := c.state()
	if err != nil {
		return err
	}
	if st.veof == vdisable {
		return errors.New("engine: the terminal has no EOF character (VEOF disabled)")
	}
	_, err = c.Write(ctx, []byte{st.veof})
	return err
}

// Interrupt does what ^C does in a terminal. When the terminal generates
// signals (ISIG on, the usual mode), it writes the VINTR character (normally
// ^C): the line discipline sends SIGINT to the foreground process group and
// discards pending input and output. When ISIG is off (a program in raw
// mode) or VINTR is disabled, or when the character cannot be written within
// 250 ms because the turn's input is full, Interrupt sends SIGINT to the
// terminal's foreground process group (TIOCGPGRP) itself.
//
// This is a request to the program, which may handle or ignore SIGINT. The
// runtime's interrupt (cancelling Run's ctx: SIGTERM, grace period, SIGKILL
// to the whole group) is separate and unchanged. Without a terminal,
// Interrupt returns ErrNoTerminal.
func (c *Console) Interrupt(ctx context.Context) error {
	st, err := c.state()
	if err != nil {
		return err
	}
	if st.isig && st.vintr != vdisable {
		wctx, cancel := context.WithTimeout(ctx, interruptWriteWait)
		_, err := c.Write(wctx, []byte{st.vintr})
		cancel()
		var te *InputTimeoutError
		if err == nil || !errors.As(err, &te) || ctx.Err() != nil {
			return err
		}
		// The input queue is full: the character would wait behind it.
	}
	return c.signalForeground(syscall.SIGINT)
}

// signalForeground sends sig to the terminal's foreground process group, or
// to the turn's process group when the terminal reports none. It holds mu,
// so the turn's leader (unreaped until detach) keeps its pgid from reuse.
func (c *Console) signalForeground(sig syscall.Signal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tty == nil {
		return ErrNoTerminal
	}
	pg, err := foregroundPgrp(c.tty)
	if err != nil || pg <= 0 {
		pg = c.pgid
	}
	if pg <= 0 {
		return ErrNoTerminal // not started yet
	}
	if err := killGroup(pg, sig); err != nil {
		return fmt.Errorf("engine: interrupt: %w", err)
	}
	return nil
}

func (c *Console) attached() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tty != nil
}

func (c *Console) sem() chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wsem == nil {
		c.wsem = make(chan struct{}, 1)
	}
	return c.wsem
}

func (c *Console) state() (termState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tty == nil {
		return termState{}, ErrNoTerminal
	}
	st, err := getTermState(c.tty)
	if err != nil {
		return termState{}, fmt.Errorf("engine: terminal attributes: %w", err)
	}
	return st, nil
}

// attach makes tty (a pty master) the Console's terminal and gives it the
// Console's size. The engine calls it before starting the turn's process,
// so that the process starts with the right size and no Resize is lost.
func (c *Console) attach(tty *os.File) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tty != nil {
		return errors.New("engine: the console is in use by another turn")
	}
	if err := setWinsize(tty, normSize(c.cols, DefaultCols), normSize(c.rows, DefaultRows)); err != nil {
		return fmt.Errorf("engine: terminal size: %w", err)
	}
	c.tty, c.pgid = tty, 0
	return nil
}

// started records the turn's process group (for Interrupt).
func (c *Console) started(pgid int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pgid = pgid
}

// detach ends the Console's use of tty (a no-op when tty is not attached):
// later calls find no terminal, and a Write in progress is aborted. The
// engine calls it once the turn's leader exited and before reaping it; it
// closes the master later.
func (c *Console) detach(tty *os.File) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tty != tty || tty == nil {
		return
	}
	_ = tty.SetWriteDeadline(time.Unix(1, 0))
	c.gone, c.goneEcho = tty, echoes(tty) // for a write that just ended (Deliver)
	c.tty, c.pgid = nil, 0
}
