package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/sys/unix"

	"looprig/internal/textsafe"
	"looprig/rig"
)

// Keys for a full-screen program. While its screen shows on our terminal
// (screen_term.go), the terminal is raw (no line editing, no echo, no
// signals from Ctrl-C, Ctrl-Z or Ctrl-\, Enter as "\r", no flow control)
// and each read's bytes go to the turn at once, as a terminal sends keys
// to a program: Enter submits, Ctrl-C is 0x03 for the program to handle.
// attach keeps Ctrl-] (0x1d): the bytes before it go to the program, and
// attach detaches. run has no key of its own there: Ctrl-] goes to the
// program too. The turn's echo is off under a full-screen program, so the
// host journals each key as hidden input (its length only), as it does
// for the TUI's f.
//
// One goroutine reads stdin whatever the mode (termInput.read): in line
// mode it cuts lines from what it read, in raw mode it hands over each
// read; a switch wakes it (a pipe it polls beside stdin), so that it never
// waits for a line in raw mode nor hands over keys in line mode, and what
// was read and not handed over yet (a line being cut) is kept for the
// next mode. Bytes still in the terminal's queue are not lost either: a
// line being edited becomes readable when the terminal goes raw.

// setRaw switches our terminal, and the reader, between line mode (off)
// and keys (on); nothing once stopped.
func (ti *termInput) setRaw(on bool) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	if ti.stopped || ti.raw == on {
		return
	}
	ti.raw = on
	ti.applyTermios()
	unix.Write(ti.wakeW, []byte{0}) // a full pipe is woken already
}

// applyTermios sets our terminal's settings for the mode and the echo
// (ti.mu held): raw for a program's keys; else ours (attach's keys), with
// echo off while the turn's is.
func (ti *termInput) applyTermios() error {
	st := ti.base
	switch {
	case ti.raw:
		st.Iflag &^= unix.ICRNL | unix.INLCR | unix.IGNCR | unix.IXON | unix.ISTRIP | unix.BRKINT
		st.Lflag &^= unix.ICANON | unix.ECHO | unix.ISIG | unix.IEXTEN
		st.Cc[unix.VMIN], st.Cc[unix.VTIME] = 1, 0
	case ti.hidden:
		st.Lflag &^= unix.ECHO
	}
	return unix.IoctlSetTermios(int(ti.in.Fd()), termiosSet, &st)
}

// read returns what is typed next: in line mode a line (as readLineTo
// does: err is its end), in raw mode (raw) the bytes of one read.
func (ti *termInput) read(ctx context.Context) (text string, raw bool, err error) {
	for {
		ti.mu.Lock()
		raw = ti.raw
		ti.mu.Unlock()
		if raw && len(ti.pend) > 0 {
			text = string(ti.pend)
			ti.pend = ti.pend[:0]
			return text, true, nil
		}
		if !raw {
			if line, ok := ti.cutLine(); ok {
				return line, false, nil
			}
		}
		woke, err := ti.wait(ctx)
		if err != nil {
			return "", raw, err
		}
		if woke {
			continue // the mode changed
		}
		if ti.rbuf == nil {
			ti.rbuf = make([]byte, 4096)
		}
		n, err := ti.in.Read(ti.rbuf)
		ti.pend = append(ti.pend, ti.rbuf[:n]...)
		switch {
		case err != nil && !errors.Is(err, io.EOF):
			return "", raw, err
		case err != nil || n == 0:
			text = string(ti.pend)
			ti.pend = ti.pend[:0]
			return text, raw, io.EOF
		case raw:
			text = string(ti.pend)
			ti.pend = ti.pend[:0]
			return text, true, nil
		}
	}
}

// cutLine cuts the first line from what was read: up to "\n" (left out)
// or a key of ti.keys (kept), or 4096 bytes without either.
func (ti *termInput) cutLine() (string, bool) {
	for i, c := range ti.pend {
		if c == '\n' || strings.IndexByte(ti.keys, c) >= 0 {
			end := i
			if c != '\n' {
				end++
			}
			line := string(ti.pend[:end])
			ti.pend = append(ti.pend[:0], ti.pend[i+1:]...)
			return line, true
		}
	}
	if len(ti.pend) > 4096 {
		line := string(ti.pend)
		ti.pend = ti.pend[:0]
		return line, true
	}
	return "", false
}

// wait waits until stdin has something to read (or its end), or the mode
// changed (woke), polling so that ctx can stop it.
func (ti *termInput) wait(ctx context.Context) (woke bool, err error) {
	fds := []unix.PollFd{{Fd: int32(ti.in.Fd()), Events: unix.POLLIN}, {Fd: int32(ti.wakeR), Events: unix.POLLIN}}
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		n, err := unix.Poll(fds, 100)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, err
		}
		if n == 0 {
			continue
		}
		if fds[1].Revents != 0 {
			var b [64]byte
			for {
				if k, _ := unix.Read(ti.wakeR, b[:]); k < len(b) {
					break
				}
			}
			return true, nil
		}
		return false, nil
	}
}

// keyOwner is an inputOwner with keys of its own among a full-screen
// program's (attach's Ctrl-]).
type keyOwner interface {
	// keys is given each read's bytes; it returns the ones for the
	// program, and a line for take after they are sent ("" for none).
	keys(text string) (send, then string)
}

// sendKeys sends the bytes of one read to the program of the running
// turn; false: the turn has no terminal, and no more is sent.
func (ti *termInput) sendKeys(ctx context.Context, text string, first bool) bool {
	then := ""
	if k, ok := ti.owner.(keyOwner); ok {
		text, then = k.keys(text)
	}
	if text != "" {
		ti.owner.ready(ctx, first)
		if ctx.Err() != nil {
			return false
		}
		// Before the send: the echo may come back before its reply.
		ti.scr.typed()
		sctx, cancel := context.WithTimeout(ctx, lineTimeout)
		_, err := ti.s.SendInput(sctx, text)
		cancel()
		var noTerm *rig.NoTerminalError
		switch {
		case errors.As(err, &noTerm):
			fmt.Fprintln(ti.stderr, "looprig: this turn has no terminal (its profile has tty = false): what you type is not sent")
			return ti.persist
		case err != nil && ctx.Err() == nil:
			fmt.Fprintf(ti.stderr, "looprig: input not sent: %s\n", textsafe.Line(err.Error()))
		}
	}
	if then != "" {
		ti.owner.take(ctx, then, nil)
	}
	return true
}
