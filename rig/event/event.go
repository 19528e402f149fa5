// Package event defines looprig's events: what happened in a session and
// its loops, whether it is journaled (its Class) and what it is about (its
// Scope), plus a strict, versioned JSON codec, and the envelope codec of
// the lines that carry an event with its sequence, session, loop and time
// (MarshalEnvelope: the host protocol's events, `looprig run --json`).
//
// Every event is a pointer-free value struct implementing Event with value
// receivers. Enduring events are journaled before anyone sees them;
// ephemeral ones (OutputDelta, SessionFaulted) are delivered live and never
// persisted: CheckDurable refuses them with *EphemeralError.
//
// The wire form of an event is
//
//	{"v":1,"type":"TurnStarted","data":{"turn_id":"…","index":0,"input":"…"}}
//
// with snake_case field names everywhere. Unmarshal fails closed on anything
// it does not fully understand (see DecodeError).
package event

import (
	"strconv"
	"time"
)

// Type names an event kind. It is the "type" of the wire form and never
// changes once released.
type Type string

// Event types.
const (
	TypeSessionStarted       Type = "SessionStarted"
	TypeSessionActive        Type = "SessionActive"
	TypeSessionIdle          Type = "SessionIdle"
	TypeSessionStopped       Type = "SessionStopped"
	TypeRestoreStarted       Type = "RestoreStarted"
	TypeRestoreDone          Type = "RestoreDone"
	TypeRestoreErrored       Type = "RestoreErrored"
	TypeConfigurationAdopted Type = "ConfigurationAdopted"
	TypeSessionFaulted       Type = "SessionFaulted"

	TypeWorkspaceCheckpointed      Type = "WorkspaceCheckpointed"
	TypeWorkspaceCheckpointSkipped Type = "WorkspaceCheckpointSkipped"
	TypeHandedOff                  Type = "HandedOff"
	TypeWorkspaceReconciled        Type = "WorkspaceReconciled"
	TypeWorkspaceReverted          Type = "WorkspaceReverted"
	TypeAgentConversation          Type = "AgentConversation"
	TypeAgentTranscript            Type = "AgentTranscript"
	TypeWorktreeAdded              Type = "WorktreeAdded"

	TypeLoopStarted     Type = "LoopStarted"
	TypeTurnStarted     Type = "TurnStarted"
	TypeTurnOutput      Type = "TurnOutput"
	TypeOutputDelta     Type = "OutputDelta"
	TypeTurnDone        Type = "TurnDone"
	TypeTurnFailed      Type = "TurnFailed"
	TypeTurnInterrupted Type = "TurnInterrupted"
	TypeGateOpened      Type = "GateOpened"
	TypeGateResolved    Type = "GateResolved"
	TypeAttention       Type = "Attention"
	TypeAttentionSeen   Type = "AttentionSeen"
	TypeRefused         Type = "Refused"
)

// Class says whether an event is journaled.
type Class uint8

const (
	// Enduring events are appended to the journal before delivery.
	Enduring Class = iota + 1
	// Ephemeral events are delivered live only and never journaled.
	Ephemeral
)

func (c Class) String() string {
	switch c {
	case Enduring:
		return "enduring"
	case Ephemeral:
		return "ephemeral"
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// Scope says what an event is about: the session as a whole, or one loop
// (whose id travels beside the event, in Envelope.LoopID or the journal
// record, not inside it — except LoopStarted, which names its loop).
type Scope uint8

const (
	SessionScope Scope = iota + 1
	LoopScope
)

func (s Scope) String() string {
	switch s {
	case SessionScope:
		return "session"
	case LoopScope:
		return "loop"
	}
	return "scope(" + strconv.Itoa(int(s)) + ")"
}

// Event is implemented by every event type of this package (value
// receivers, value structs). Marshal refuses implementations from elsewhere
// and pointers to the structs here.
type Event interface {
	Type() Type
	Class() Class
	Scope() Scope
}

// Envelope is how the hub delivers an event.
type Envelope struct {
	// Seq is the journal sequence of an enduring event; 0 for an ephemeral one.
	Seq uint64
	// Session is the session id.
	Session string
	// LoopID names the loop of a loop-scope event; "" for session scope.
	LoopID string
	// At is when the event was journaled (or published, when ephemeral).
	At    time.Time
	Event Event
}

// The Event methods of every event type: its Type, Class and Scope.

func (SessionStarted) Type() Type               { return TypeSessionStarted }
func (SessionActive) Type() Type                { return TypeSessionActive }
func (SessionIdle) Type() Type                  { return TypeSessionIdle }
func (SessionStopped) Type() Type               { return TypeSessionStopped }
func (RestoreStarted) Type() Type               { return TypeRestoreStarted }
func (RestoreDone) Type() Type                  { return TypeRestoreDone }
func (RestoreErrored) Type() Type               { return TypeRestoreErrored }
func (ConfigurationAdopted) Type() Type         { return TypeConfigurationAdopted }
func (SessionFaulted) Type() Type               { return TypeSessionFaulted }
func (WorkspaceCheckpointed) Type() Type        { return TypeWorkspaceCheckpointed }
func (WorkspaceCheckpointSkipped) Type() Type   { return TypeWorkspaceCheckpointSkipped }
func (HandedOff) Type() Type                    { return TypeHandedOff }
func (WorkspaceReconciled) Type() Type          { return TypeWorkspaceReconciled }
func (WorkspaceReverted) Type() Type            { return TypeWorkspaceReverted }
func (AgentConversation) Type() Type            { return TypeAgentConversation }
func (AgentTranscript) Type() Type              { return TypeAgentTranscript }
func (WorktreeAdded) Type() Type                { return TypeWorktreeAdded }
func (LoopStarted) Type() Type                  { return TypeLoopStarted }
func (TurnStarted) Type() Type                  { return TypeTurnStarted }
func (TurnOutput) Type() Type                   { return TypeTurnOutput }
func (OutputDelta) Type() Type                  { return TypeOutputDelta }
func (TurnDone) Type() Type                     { return TypeTurnDone }
func (TurnFailed) Type() Type                   { return TypeTurnFailed }
func (TurnInterrupted) Type() Type              { return TypeTurnInterrupted }
func (GateOpened) Type() Type                   { return TypeGateOpened }
func (GateResolved) Type() Type                 { return TypeGateResolved }
func (Attention) Type() Type                    { return TypeAttention }
func (AttentionSeen) Type() Type                { return TypeAttentionSeen }
func (Refused) Type() Type                      { return TypeRefused }
func (SessionStarted) Class() Class             { return Enduring }
func (SessionActive) Class() Class              { return Enduring }
func (SessionIdle) Class() Class                { return Enduring }
func (SessionStopped) Class() Class             { return Enduring }
func (RestoreStarted) Class() Class             { return Enduring }
func (RestoreDone) Class() Class                { return Enduring }
func (RestoreErrored) Class() Class             { return Enduring }
func (ConfigurationAdopted) Class() Class       { return Enduring }
func (SessionFaulted) Class() Class             { return Ephemeral }
func (WorkspaceCheckpointed) Class() Class      { return Enduring }
func (WorkspaceCheckpointSkipped) Class() Class { return Enduring }
func (HandedOff) Class() Class                  { return Enduring }
func (WorkspaceReconciled) Class() Class        { return Enduring }
func (WorkspaceReverted) Class() Class          { return Enduring }
func (AgentConversation) Class() Class          { return Enduring }
func (AgentTranscript) Class() Class            { return Enduring }
func (WorktreeAdded) Class() Class              { return Enduring }
func (LoopStarted) Class() Class                { return Enduring }
func (TurnStarted) Class() Class                { return Enduring }
func (TurnOutput) Class() Class                 { return Enduring }
func (OutputDelta) Class() Class                { return Ephemeral }
func (TurnDone) Class() Class                   { return Enduring }
func (TurnFailed) Class() Class                 { return Enduring }
func (TurnInterrupted) Class() Class            { return Enduring }
func (GateOpened) Class() Class                 { return Enduring }
func (GateResolved) Class() Class               { return Enduring }
func (Attention) Class() Class                  { return Enduring }
func (AttentionSeen) Class() Class              { return Enduring }
func (Refused) Class() Class                    { return Enduring }
func (SessionStarted) Scope() Scope             { return SessionScope }
func (SessionActive) Scope() Scope              { return SessionScope }
func (SessionIdle) Scope() Scope                { return SessionScope }
func (SessionStopped) Scope() Scope             { return SessionScope }
func (RestoreStarted) Scope() Scope             { return SessionScope }
func (RestoreDone) Scope() Scope                { return SessionScope }
func (RestoreErrored) Scope() Scope             { return SessionScope }
func (ConfigurationAdopted) Scope() Scope       { return SessionScope }
func (SessionFaulted) Scope() Scope             { return SessionScope }
func (WorkspaceCheckpointed) Scope() Scope      { return SessionScope }
func (WorkspaceCheckpointSkipped) Scope() Scope { return SessionScope }
func (HandedOff) Scope() Scope                  { return SessionScope }
func (WorkspaceReconciled) Scope() Scope        { return SessionScope }
func (WorkspaceReverted) Scope() Scope          { return SessionScope }
func (AgentConversation) Scope() Scope          { return SessionScope }
func (AgentTranscript) Scope() Scope            { return SessionScope }
func (WorktreeAdded) Scope() Scope              { return SessionScope }
func (LoopStarted) Scope() Scope                { return LoopScope }
func (TurnStarted) Scope() Scope                { return LoopScope }
func (TurnOutput) Scope() Scope                 { return LoopScope }
func (OutputDelta) Scope() Scope                { return LoopScope }
func (TurnDone) Scope() Scope                   { return LoopScope }
func (TurnFailed) Scope() Scope                 { return LoopScope }
func (TurnInterrupted) Scope() Scope            { return LoopScope }
func (GateOpened) Scope() Scope                 { return LoopScope }
func (GateResolved) Scope() Scope               { return LoopScope }
func (Attention) Scope() Scope                  { return LoopScope }
func (AttentionSeen) Scope() Scope              { return LoopScope }
func (Refused) Scope() Scope                    { return LoopScope }
