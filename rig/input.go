package rig

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/journal"
)

// SigintGrace is how long Interrupt waits after sending a turn's terminal
// ^C before it signals the turn's process group.
const SigintGrace = 2 * time.Second

// Input is what a client sends to the running turn's terminal: Text as if
// typed (a line ends with "\n"), or, with EOF, an end of file (^D). From
// is the sender: its kind is journaled ("tui", "cli"), and input from a
// process inside the session's own turns is refused (*FromTurnError).
type Input struct {
	Text string
	EOF  bool
	From Client
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

// SendInput sends in to the running turn's terminal (see Send: at what
// looks like a password prompt printed while the terminal still echoes,
// it first waits a moment for the echo to go off) and reports whether
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
// is *NoTurnError, input from a process inside the session's own turns
// *FromTurnError (the attempt is journaled as event.Refused, nothing is
// written), a turn without a terminal *NoTerminalError, a text too
// large for a record (echo on) *storage.PayloadTooLargeError: then nothing
// is journaled or written. An input_written that cannot be journaled after
// a write that went in whole faults the session, as any failed append does,
// and SendInput returns the fault.
func (s *Session) SendInput(ctx context.Context, in Input) (hidden bool, err error) {
	sent, err := s.Send(ctx, in)
	return sent.Hidden, err
}

// Sent is what Send did with an input.
type Sent struct {
	// Hidden: as SendInput reports it.
	Hidden bool
	// PromptEcho: when the input arrived, the turn's last output line
	// looked like a password prompt (LooksLikeSecretPrompt) while its
	// terminal still echoed: a program that prints its prompt before it
	// turns echo off (echo "Password:"; read -s), or one that reads a
	// secret with echo on. Send then waited, up to PromptEchoWait, for the
	// echo to go off before it wrote (EchoWaited is how long): when it
	// went off, the input went in hidden; when not, it was echoed into the
	// turn's output and journaled (Hidden false).
	PromptEcho bool
	EchoWaited time.Duration
}

// PromptEchoWait bounds, by default (WithPromptEchoWait), how long Send waits, at what looks like a
// password prompt printed while the terminal still echoes, for the
// program to turn echo off before the input is written.
const PromptEchoWait = 500 * time.Millisecond

// promptEchoPoll is how often Send looks at the echo meanwhile.
const promptEchoPoll = 2 * time.Millisecond

// secretPrompt matches a line that asks for a secret: a word naming one,
// and the line ending as a prompt does (":", "?" or ">", spaces after).
var secretPrompt = regexp.MustCompile(`(?i)\b(password|passphrase|passcode|passwd|pin|secret|token|api[ _-]?key)\b.*[:?>]\s*$`)

// ansiCSI matches a terminal's control sequences (colours, cursor
// moves), which a prompt may carry.
var ansiCSI = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]`)

// LooksLikeSecretPrompt reports whether output, a turn's latest output,
// ends with what looks like a prompt for a secret: its last line that is
// not blank ("Password:", "Enter passphrase for key 'id': ",
// "[sudo] password for ann:"), colours and trailing newlines aside.
func LooksLikeSecretPrompt(output []byte) bool {
	text := strings.TrimRight(ansiCSI.ReplaceAllString(string(output), ""), " \t\r\n")
	if i := strings.LastIndexAny(text, "\r\n"); i >= 0 {
		text = text[i+1:]
	}
	return text != "" && len(text) <= 200 && secretPrompt.MatchString(text)
}

// Send is SendInput, reporting what it did (see Sent): at what looks like
// a password prompt printed while the terminal still echoes, it waits up
// to PromptEchoWait for the echo to go off before the input is journaled
// and written, so that a fast sender does not beat a program that turns
// echo off just after its prompt.
func (s *Session) Send(ctx context.Context, in Input) (sent Sent, err error) {
	s.mu.Lock()
	if err := s.admitLocked(); err != nil {
		s.mu.Unlock()
		return sent, err
	}
	t := s.runningTurnLocked()
	s.mu.Unlock()
	if t == nil {
		return sent, &NoTurnError{}
	}
	if reason, via := s.fromTurn(in.From); reason != "" {
		e := &FromTurnError{Session: s.id.String(), TurnID: t.id, Request: RequestInput, Client: *in.From.record(), Reason: reason, Via: via}
		s.rig.log.Warn("input refused", "session", s.id, "err", e)
		s.journalRefused(t, event.RefusedInput, event.Refused{TurnID: t.id, What: event.RefusedInput, By: in.From.record(), Reason: reason, Via: via})
		return sent, e
	}
	terminal, echoOff := t.console.State()
	if !terminal {
		return sent, &NoTerminalError{TurnID: t.id}
	}
	if !echoOff && !in.EOF && LooksLikeSecretPrompt(t.outputTail()) {
		sent.PromptEcho = true
		start := time.Now()
		for !echoOff && time.Since(start) < s.rig.promptEchoWait && ctx.Err() == nil {
			time.Sleep(promptEchoPoll)
			if terminal, echoOff = t.console.State(); !terminal {
				return sent, &NoTerminalError{TurnID: t.id}
			}
		}
		sent.EchoWaited = time.Since(start)
	}
	cmd := journal.Command{Name: journal.CommandInput, LoopID: s.loopID, TurnID: t.id, From: in.From.Kind}
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
			return sent, err
		}
	}
	seq, err := s.journal.AppendCommand(ctx, cmd)
	if err != nil {
		return sent, s.commandErr(err)
	}
	var d engine.Delivery
	if in.EOF {
		if err = t.console.EOF(ctx); err == nil {
			d.Written = 1
		}
	} else {
		d, err = t.console.Deliver(ctx, []byte(in.Text))
	}
	sent.Hidden = cmd.Hidden || d.Hidden
	if jerr := s.journalWritten(seq, cmd, in.Text, d, err); jerr != nil && err == nil {
		return sent, s.commandErr(jerr)
	}
	var timeout *engine.InputTimeoutError
	switch {
	case err == nil:
		return sent, nil
	case errors.As(err, &timeout):
		return sent, &InputTimeoutError{TurnID: t.id, Written: timeout.Written, Len: timeout.Len, Err: timeout.Err}
	case errors.Is(err, engine.ErrNoTerminal):
		return sent, &NoTerminalError{TurnID: t.id}
	}
	return sent, fmt.Errorf("input to turn %s: %w", ShortID(t.id), err)
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
