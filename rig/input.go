package rig

import (
	"context"
	"errors"
	"fmt"
	"time"

	"looprig/rig/engine"
	"looprig/rig/journal"
)

// SigintGrace is how long Interrupt waits after sending a turn's terminal
// ^C before it signals the turn's process group.
const SigintGrace = 2 * time.Second

// Input is what a client sends to the running turn's terminal: Text as if
// typed (a line ends with "\n"), or, with EOF, an end of file (^D). From
// names the sender in the journal ("tui", "cli").
type Input struct {
	Text string
	EOF  bool
	From string
}

// NoTerminalError refuses input to a turn that has no terminal: the
// profile runs turns on pipes (tty = false), its engine has none (demo),
// or the turn has just ended.
type NoTerminalError struct {
	TurnID string
}

func (e *NoTerminalError) Error() string {
	return "the running turn has no terminal to send input to (its profile has tty = false, or its engine has none)"
}

// InputTimeoutError: the turn did not read its terminal's input before
// the caller's context ended; Written of Len bytes went in.
type InputTimeoutError struct {
	TurnID       string
	Written, Len int
	Err          error // the context's cause
}

func (e *InputTimeoutError) Error() string {
	return fmt.Sprintf("the turn is not reading its input: %d of %d bytes sent before giving up", e.Written, e.Len)
}

func (e *InputTimeoutError) Unwrap() error { return e.Err }

// SendInput sends in to the running turn's terminal and reports whether
// the terminal had echo off (a password prompt). It journals the input
// first as a command record: the text, or, with echo off, only "hidden
// input of N bytes" (nothing of it is kept). No turn running is
// *NoTurnError, a turn without a terminal *NoTerminalError; a turn that
// does not read its input makes the write wait until ctx ends
// (*InputTimeoutError).
func (s *Session) SendInput(ctx context.Context, in Input) (hidden bool, err error) {
	s.mu.Lock()
	if err := s.admitLocked(); err != nil {
		s.mu.Unlock()
		return false, err
	}
	t := s.turn
	s.mu.Unlock()
	if t == nil {
		return false, &NoTurnError{}
	}
	terminal, echoOff := t.console.State()
	if !terminal {
		return false, &NoTerminalError{TurnID: t.id}
	}
	cmd := journal.Command{Name: journal.CommandInput, LoopID: s.loopID, TurnID: t.id, From: in.From}
	switch {
	case in.EOF:
		cmd.EOF = true
	case echoOff:
		cmd.Hidden, cmd.Bytes = true, len(in.Text)
	default:
		cmd.Input, cmd.Bytes = in.Text, len(in.Text)
	}
	if _, err := s.journal.AppendCommand(ctx, cmd); err != nil {
		return false, s.commandErr(err)
	}
	if in.EOF {
		err = t.console.EOF(ctx)
	} else {
		_, err = t.console.Write(ctx, []byte(in.Text))
	}
	var timeout *engine.InputTimeoutError
	switch {
	case errors.Is(err, engine.ErrNoTerminal):
		return echoOff, &NoTerminalError{TurnID: t.id}
	case errors.As(err, &timeout):
		return echoOff, &InputTimeoutError{TurnID: t.id, Written: timeout.Written, Len: timeout.Len, Err: timeout.Err}
	}
	if err != nil {
		return echoOff, fmt.Errorf("input to turn %s: %w", ShortID(t.id), err)
	}
	return echoOff, nil
}

// TerminalState reports whether the running turn has a terminal and
// whether its echo is off (a client masks what is typed then).
func (s *Session) TerminalState() (terminal, echoOff bool) {
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t == nil {
		return false, false
	}
	return t.console.State()
}

// Resize sets the terminal size of the running turn (its programs get
// SIGWINCH) and of the turns after it. Sizes must be 1..65535.
func (s *Session) Resize(cols, rows int) error {
	if cols < 1 || rows < 1 || cols > 65535 || rows > 65535 {
		return fmt.Errorf("terminal size %dx%d: columns and rows must be 1..65535", cols, rows)
	}
	s.mu.Lock()
	s.window.cols, s.window.rows = cols, rows
	t := s.turn
	s.mu.Unlock()
	if t == nil {
		return nil
	}
	return t.console.Resize(cols, rows)
}
