package journal

import (
	"fmt"
	"time"

	"looprig/rig/event"
)

// RecordVersion is the version of the record envelope. It is the only one
// DecodeRecord accepts.
const RecordVersion = 1

// Kind is the kind of a journal record.
type Kind string

const (
	// KindFence opens a writer's tenure: the epoch of its lease.
	KindFence Kind = "fence"
	// KindEvent holds one enduring event.
	KindEvent Kind = "event"
	// KindCommand audits one command received by the session.
	KindCommand Kind = "command"
)

// Command names.
const (
	CommandSubmit      = "submit"
	CommandInterrupt   = "interrupt"
	CommandRespondGate = "respond_gate"
	CommandShutdown    = "shutdown"
	// CommandInput is input sent to a running turn's terminal, journaled
	// before it is written: Bytes long, from From. EOF is an end of file
	// sent instead of text. Hidden says the terminal had echo off when it
	// arrived (a password): nothing of its text is ever recorded. Its text
	// is never in this record (Input is empty): the CommandInputWritten
	// that follows records it once written, if the terminal echoed it.
	// Records of earlier versions carry the text of an input not hidden
	// in Input, and have no CommandInputWritten.
	CommandInput = "input"
	// CommandInputWritten says, after an input command (the record at
	// InputSeq) was written to the terminal, what went in: Bytes of it,
	// their text in Input when the terminal echoed from the start of the
	// write to its end, else Hidden (the text is in no record). Reason says
	// why fewer bytes than the input's went in (InputTimedOut,
	// InputTurnEnded, InputFailed). It follows every input command that
	// is neither hidden nor an end of file, and any input not written
	// whole; EOF marks that of an end of file.
	CommandInputWritten = "input_written"
)

// Why an input did not go in whole: the Reason of a CommandInputWritten.
const (
	InputTimedOut  = "timeout"    // the turn did not read its input before the sender gave up
	InputTurnEnded = "turn_ended" // the turn ended, or its terminal went, before all of it went in
	InputFailed    = "failed"     // the terminal refused it
)

// Command is the audit of one command received by a session, or of what
// became of one (CommandInputWritten). Only the fields that apply are set.
type Command struct {
	// Name is CommandSubmit, CommandInterrupt, CommandRespondGate,
	// CommandShutdown, CommandInput or CommandInputWritten.
	Name   string `json:"name"`
	LoopID string `json:"loop_id,omitempty"`
	TurnID string `json:"turn_id,omitempty"`
	GateID string `json:"gate_id,omitempty"`
	Input  string `json:"input,omitempty"`
	// Action is the gate action of respond_gate (event.ActionApprove, …).
	Action string `json:"action,omitempty"`
	// Hidden, Bytes, EOF and From describe an input command (see
	// CommandInput); From says who sent it ("tui", "cli").
	Hidden bool   `json:"hidden,omitempty"`
	Bytes  int    `json:"bytes,omitempty"`
	EOF    bool   `json:"eof,omitempty"`
	From   string `json:"from,omitempty"`
	// InputSeq and Reason describe a CommandInputWritten: the sequence of
	// its input command, and why not all of that input went in.
	InputSeq uint64 `json:"input_seq,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

func (c *Command) validate() error {
	switch c.Name {
	case CommandSubmit, CommandInterrupt, CommandRespondGate, CommandShutdown:
		return nil
	case CommandInput:
		switch {
		case c.TurnID == "":
			return fmt.Errorf("input command without a turn id")
		case c.Bytes < 0:
			return fmt.Errorf("input command of %d bytes", c.Bytes)
		case c.Hidden && c.Input != "":
			return fmt.Errorf("hidden input command that records its input")
		case c.EOF && (c.Input != "" || c.Hidden || c.Bytes != 0):
			return fmt.Errorf("end-of-file input command with text")
		case c.InputSeq != 0 || c.Reason != "":
			return fmt.Errorf("input command with the fields of input_written")
		}
		return nil
	case CommandInputWritten:
		switch {
		case c.TurnID == "":
			return fmt.Errorf("input_written without a turn id")
		case c.InputSeq == 0:
			return fmt.Errorf("input_written without the sequence of its input")
		case c.Bytes < 0:
			return fmt.Errorf("input_written of %d bytes", c.Bytes)
		case c.Hidden && c.Input != "":
			return fmt.Errorf("hidden input_written that records its input")
		case c.EOF && (c.Input != "" || c.Hidden || c.Bytes > 1):
			return fmt.Errorf("end-of-file input_written with text")
		case c.From != "":
			return fmt.Errorf("input_written with a sender")
		}
		switch c.Reason {
		case "", InputTimedOut, InputTurnEnded, InputFailed:
			return nil
		}
		return fmt.Errorf("input_written with reason %q", c.Reason)
	}
	return fmt.Errorf("unknown command name %q", c.Name)
}

// Record is one decoded journal record.
type Record struct {
	// Seq is the ledger sequence of the record.
	Seq  uint64
	Kind Kind
	// At is when the record was committed (UTC; the flush time of its batch).
	At time.Time
	// Epoch is the lease epoch of a fence; 0 for other kinds.
	Epoch uint64
	// LoopID is the loop of a loop-scope event; "" otherwise (a command
	// carries its loop in Command.LoopID).
	LoopID string
	// Event is set for KindEvent; always enduring.
	Event event.Event
	// Command is set for KindCommand.
	Command *Command
}
