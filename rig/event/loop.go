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
	// ReasonHandoff: the turn was interrupted to hand the session over
	// (looprig take --interrupt).
	ReasonHandoff = "handoff"
	// ReasonEngineStuck: Shutdown gave up waiting for an engine that did
	// not stop (it ignored its context) and released the session anyway.
	ReasonEngineStuck = "engine_unresponsive"
)

// TurnInterrupted: the turn was stopped before it finished.
type TurnInterrupted struct {
	TurnID string `json:"turn_id"`
	Index  int    `json:"index"`
	// Reason is one of ReasonUser, ReasonCrash, ReasonShutdown,
	// ReasonLeaseLost, ReasonEngineStuck, ReasonHandoff.
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
	// By is the client that answered (an approval or a denial); nil for
	// a gate looprig closed, and in records written before it was kept.
	By *Client `json:"by,omitempty"`
}

// MaxClientKind bounds Client.Kind, in bytes.
const MaxClientKind = 32

// Client is who sent a session a request that speaks for the user (a
// gate's answer, input to a turn): the kind of client it said it is, and
// its process as the system told the session's holder.
type Client struct {
	// Kind is what the client said it is ("tui", "cli"; "unknown" when it
	// said nothing): printable ASCII, at most MaxClientKind bytes.
	Kind string `json:"kind"`
	// PID is its process id (0: not known, on a system that does not tell
	// a socket's peer).
	PID int `json:"pid"`
	// Terminal reports that its process had a controlling terminal.
	Terminal bool `json:"terminal"`
}

// What a Refused record refused.
const (
	// RefusedGateAnswer: a gate's answer from inside the session's turns.
	RefusedGateAnswer = "gate_answer"
	// RefusedInput: input from inside the session's turns.
	RefusedInput = "input"
	// RefusedHook: a hook event the agent's turn did not ask for.
	RefusedHook = "hook"
	// RefusedConversation: a conversation id the agent reported that is
	// not the session's.
	RefusedConversation = "conversation"
)

// Why a gate's answer or input was refused (Refused.Reason).
const (
	// FromTurnCarries: the client's process, or an ancestor of it,
	// carries the session's environment (LOOPRIG_SESSION): a turn of the
	// session started it.
	FromTurnCarries = "carries"
	// FromTurnGroup: the client's process, or an ancestor of it, is in
	// the running turn's process group.
	FromTurnGroup = "in_group"
	// FromTurnGone: the process that connected is gone (another process
	// may hold its connection), or is no longer the one that connected.
	FromTurnGone = "gone"
	// FromTurnUnknown: the client's process could not be inspected.
	FromTurnUnknown = "unknown"
)

// Where a refused conversation id came from (Refused.Source).
const (
	SourceStream = "stream" // the agent's output stream
	SourceHook   = "hook"   // a hook (SessionStart)
)

// MaxRefusedDetail bounds Refused.Hook and Refused.ID, in bytes.
const MaxRefusedDetail = 128

// Refused (a warning): looprig refused something sent to a turn that
// would have spoken for the user or for the agent, and kept it out: an
// answer to a gate or input from a process inside the session's own
// turns (By, Reason), a hook event the agent's turn did not ask for
// (Hook), a conversation id other than the session's (ID, Source). The
// gate stays open, the input is not written, the conversation is not
// adopted.
type Refused struct {
	TurnID string `json:"turn_id"`
	// What is RefusedGateAnswer, RefusedInput, RefusedHook or
	// RefusedConversation.
	What string `json:"what"`
	// GateID and Action: the gate a refused answer was for, and the
	// answer (ActionApprove, ActionDeny).
	GateID string `json:"gate_id,omitempty"`
	Action string `json:"action,omitempty"`
	// By is the client that sent a refused answer or input, and Reason
	// why it was refused (FromTurnCarries, FromTurnGroup, FromTurnGone,
	// FromTurnUnknown).
	By     *Client `json:"by,omitempty"`
	Reason string  `json:"reason,omitempty"`
	// Via is the process found inside the turn: the client's own or an
	// ancestor's (0 when none was found: gone, unknown).
	Via int `json:"via,omitempty"`
	// Agent names the agent engine (RefusedHook, RefusedConversation).
	Agent string `json:"agent,omitempty"`
	// Hook is the name of the hook event refused (printable ASCII, at
	// most MaxRefusedDetail bytes).
	Hook string `json:"hook,omitempty"`
	// ID is the conversation id the agent reported, and Source where it
	// came from (SourceStream, SourceHook). The session's stays what it
	// was.
	ID     string `json:"id,omitempty"`
	Source string `json:"source,omitempty"`
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
	// bell. For AttentionAgent it is the agent's words ("" when the agent
	// only waits for the user), which every presenter shows as the
	// agent's ("claude says: …"), never as looprig's.
	Text string `json:"text"`
	// Agent names the agent engine of an AttentionAgent ("claude"); ""
	// for the others (and for records written before it was kept).
	Agent string `json:"agent,omitempty"`
}

// AttentionSeen: the user looked at the session (a client attached to it
// or showed it): the attention recorded at or before sequence Through is
// dealt with.
type AttentionSeen struct {
	Through uint64 `json:"through"`
	// From names the client that showed it ("tui", "cli").
	From string `json:"from"`
}
