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
	// CommandInput is input sent to a running turn's terminal. Its Input
	// is the text sent, unless Hidden (the terminal had echo off: a
	// password): then nothing of it is recorded but its length, Bytes.
	// EOF is an end of file sent instead of text.
	CommandInput = "input"
)

// Command is the audit of one command received by a session. Only the
// fields that apply are set.
type Command struct {
	// Name is CommandSubmit, CommandInterrupt, CommandRespondGate,
	// CommandShutdown or CommandInput.
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
		}
		return nil
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
