package rig

import (
	"context"
	"errors"
	"fmt"
	"math"
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
// the input was hidden: the terminal's echo was off (a password prompt),
// or could not be read, when the input arrived, when its write began or
// when it ended, so that the turn may have read it without echo. The
// caller masks hidden input and keeps nothing of it.
//
// The input is journaled before it is written, as an input command naming
// its sender, its length and whether it arrived hidden, but never its
// text. Hiddenness is decided again where the bytes are written: the text
// is journaled after the write, in the input_written record that follows
// the command, and only if the terminal echoed from the start of the write
// to its end; otherwise that record says hidden. So the echo can change
// while the command is being journaled, however long that takes, and text
// the turn may have read with echo off is still in no record. (The kernel
// takes the bytes up a moment after the write, or, behind a line buffer
// the turn left full, when it reads; a program that turns echo off in that
// moment, or off and on again during the write, is not seen: the race a
// person typing ahead on a terminal has too.)
//
// input_written also records what went in when not all of it did, so
// that nothing is on record as sent that was not: a turn that does not
// read its input makes the write wait until ctx ends (*InputTimeoutError),
// a turn may end first (*NoTerminalError). An input hidden on arrival, or
// an end of file, that went in whole has no input_written. No turn running
// is *NoTurnError, a turn without a terminal *NoTerminalError, a text too
// large for a record (echo on) *storage.PayloadTooLargeError: then nothing
// is journaled or written. An input_written that cannot be journaled after
// a write that went in whole faults the session, as any failed append does,
// and SendInput returns the fault.
func (s *Session) SendInput(ctx context.Context, in Input) (hidden bool, err error) {
	s.mu.Lock()
	if err := s.admitLocked(); err != nil {
		s.mu.Unlock()
		return false, err
	}
	t := s.runningTurnLocked()
	s.mu.Unlock()
	if t == nil {
		return false, &NoTurnError{}
	}
	terminal, echoOff := t.console.State()
	if !terminal {
		return false, &NoTerminalError{TurnID: t.id}
	}
	cmd := journal.Command{Name: journal.CommandInput, LoopID: s.loopID, TurnID: t.id, From: in.From}
	if in.EOF {
		cmd.EOF = true
	} else {
		cmd.Hidden, cmd.Bytes = echoOff, len(in.Text)
	}
	if !cmd.EOF && !cmd.Hidden {
		// Its text is journaled once written: refuse now a text no record
		// can hold (*storage.PayloadTooLargeError), before anything is
		// journaled or written.
		if err := s.journal.CheckCommand(journal.Command{Name: journal.CommandInputWritten, LoopID: s.loopID, TurnID: t.id,
			Input: in.Text, Bytes: len(in.Text), InputSeq: math.MaxUint64}); err != nil {
			return false, err
		}
	}
	seq, err := s.journal.AppendCommand(ctx, cmd)
	if err != nil {
		return false, s.commandErr(err)
	}
	var d engine.Delivery
	if in.EOF {
		if err = t.console.EOF(ctx); err == nil {
			d.Written = 1
		}
	} else {
		d, err = t.console.Deliver(ctx, []byte(in.Text))
	}
	hidden = cmd.Hidden || d.Hidden
	if jerr := s.journalWritten(seq, cmd, in.Text, d, err); jerr != nil && err == nil {
		return hidden, s.commandErr(jerr)
	}
	var timeout *engine.InputTimeoutError
	switch {
	case err == nil:
		return hidden, nil
	case errors.As(err, &timeout):
		return hidden, &InputTimeoutError{TurnID: t.id, Written: timeout.Written, Len: timeout.Len, Err: timeout.Err}
	case errors.Is(err, engine.ErrNoTerminal):
		return hidden, &NoTerminalError{TurnID: t.id}
	}
	return hidden, fmt.Errorf("input to turn %s: %w", ShortID(t.id), err)
}

// journalWritten journals the input_written record of the input command
// cmd at seq, whose text was text, after its write did d and returned
// werr: the text written when the terminal echoed it throughout, and why
// not all of it went in. A hidden input or an end of file that went in
// whole needs none. It journals on a fresh context: the caller's may have
// ended with the write.
func (s *Session) journalWritten(seq uint64, cmd journal.Command, text string, d engine.Delivery, werr error) error {
	if werr == nil && (cmd.Hidden || cmd.EOF) {
		return nil
	}
	rec := journal.Command{Name: journal.CommandInputWritten, LoopID: cmd.LoopID, TurnID: cmd.TurnID, InputSeq: seq, EOF: cmd.EOF}
	if !cmd.EOF {
		rec.Bytes = min(d.Written, len(text))
		if cmd.Hidden || d.Hidden {
			rec.Hidden = true
		} else {
			rec.Input = text[:rec.Bytes]
		}
	}
	var timeout *engine.InputTimeoutError
	switch {
	case werr == nil:
	case errors.As(werr, &timeout):
		rec.Reason = journal.InputTimedOut
	case errors.Is(werr, engine.ErrNoTerminal):
		rec.Reason = journal.InputTurnEnded
	default:
		rec.Reason = journal.InputFailed
	}
	ctx, cancel := s.bg()
	defer cancel()
	_, err := s.journal.AppendCommand(ctx, rec)
	return err
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
