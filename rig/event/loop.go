package event

import (
	"time"
)

// The loop-scope events: about one loop of a session (Scope LoopScope),
// whose id travels beside the event. Their types are registered in
// registry.go and their Event methods are in event.go.

// LoopStarted: a loop exists.
type LoopStarted struct {
	LoopID string `json:"loop_id"`
	Name   string `json:"name"`
	Engine string `json:"engine"`
}

// TurnStarted: an input was submitted and its turn began.
type TurnStarted struct {
	TurnID string `json:"turn_id"`
	Index  int    `json:"index"`
	Input  string `json:"input"`
}

// TurnOutput is an output checkpoint of a turn: the bytes of the turn's
// output from Offset on. A turn's checkpoints follow each other without a
// gap or an overlap; a live OutputDelta carried the same bytes at the same
// offsets, so a reader that has shown output up to byte B takes what a
// checkpoint holds after B. Records written before offsets existed have
// none (0): they follow the turn's previous checkpoint.
type TurnOutput struct {
	TurnID string `json:"turn_id"`
	// Offset is the position of Text's first byte in the turn's output.
	Offset int64  `json:"offset"`
	Text   string `json:"text"`
	// Elided counts the bytes of output dropped before this checkpoint.
	Elided int64 `json:"elided"`
}

// Output streams.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// OutputDelta (ephemeral) is live output of a turn: the bytes of its
// output from Offset on (see TurnOutput).
type OutputDelta struct {
	TurnID string `json:"turn_id"`
	// Stream is StreamStdout or StreamStderr.
	Stream string `json:"stream"`
	// Offset is the position of Text's first byte in the turn's output
	// (both streams count).
	Offset int64  `json:"offset"`
	Text   string `json:"text"`
}

// TurnDone: the turn ran to completion. Duration travels as whole
// milliseconds ("duration_ms"); sub-millisecond precision is dropped.
type TurnDone struct {
	TurnID   string
	ExitCode int
	Duration time.Duration
}

// TurnFailed: the turn could not run.
type TurnFailed struct {
	TurnID string `json:"turn_id"`
	Err    string `json:"err"`
}

// Interruption reasons.
const (
	ReasonUser      = "user"
	ReasonCrash     = "crash"
	ReasonShutdown  = "shutdown"
	ReasonLeaseLost = "lease_lost"
	// ReasonEngineStuck: Shutdown gave up waiting for an engine that did
	// not stop (it ignored its context) and released the session anyway.
	ReasonEngineStuck = "engine_unresponsive"
)

// TurnInterrupted: the turn was stopped before it finished.
type TurnInterrupted struct {
	TurnID string `json:"turn_id"`
	Index  int    `json:"index"`
	// Reason is one of ReasonUser, ReasonCrash, ReasonShutdown,
	// ReasonLeaseLost, ReasonEngineStuck.
	Reason string `json:"reason"`
}

// GateOpened: a turn asks a yes/no question.
type GateOpened struct {
	GateID string `json:"gate_id"`
	TurnID string `json:"turn_id"`
	Prompt string `json:"prompt"`
}

// Gate actions.
const (
	ActionApprove = "approve"
	ActionDeny    = "deny"
	ActionClose   = "close"
)

// GateResolved: a gate was answered or closed.
type GateResolved struct {
	GateID string `json:"gate_id"`
	// Action is ActionApprove, ActionDeny or ActionClose.
	Action string `json:"action"`
	// Reason is free text such as "user", "restore_unavailable", "shutdown".
	Reason string `json:"reason"`
}

// Attention reasons: what a turn's program wrote to ask for the user.
const (
	AttentionBell   = "bell"   // BEL (0x07), not ending an escape sequence
	AttentionOSC9   = "osc9"   // ESC ] 9 ; text (a desktop notification)
	AttentionOSC777 = "osc777" // ESC ] 777 ; notify ; title ; body
	AttentionAgent  = "agent"  // an agent engine's notification (it waits for input, a permission)
)

// MaxAttentionText bounds Attention.Text, in bytes.
const MaxAttentionText = 200

// Attention: the turn's program asked for the user (it rang the bell or
// sent a desktop notification), as looprig read it from the turn's output,
// whose bytes keep the sequence itself. One record stands for a burst of
// such signals (an episode).
type Attention struct {
	TurnID string `json:"turn_id"`
	// Reason is AttentionBell, AttentionOSC9, AttentionOSC777 or
	// AttentionAgent.
	Reason string `json:"reason"`
	// Text is the notification's text, printable characters only (others
	// are spaces), at most MaxAttentionText bytes of valid UTF-8; "" for a
	// bell.
	Text string `json:"text"`
}

// AttentionSeen: the user looked at the session (a client attached to it
// or showed it): the attention recorded at or before sequence Through is
// dealt with.
type AttentionSeen struct {
	Through uint64 `json:"through"`
	// From names the client that showed it ("tui", "cli").
	From string `json:"from"`
}
