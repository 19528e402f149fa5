// The snapshot of a live session: Status, the projection of its fold
// (statusOf) beside what only the live session knows.

package rig

import (
	"github.com/google/uuid"

	"looprig/rig/event"
)

// Status is a snapshot of a live session. What its journal says of it
// (the title, the turns, the open turn and gate, the last end, the
// attention pending, the checkpoint, the conversation) is its fold, State,
// projected by statusOf; the rest (its lease, profile, workspace, the
// checkpoint it is taking, its fault) only the live session knows.
type Status struct {
	ID        uuid.UUID
	Title     string
	Profile   string
	Engine    string
	Epoch     uint64
	LoopID    string
	Placement Placement
	Workspace string
	Root      string
	// TTY says whether the profile runs turns on a terminal (a pty, the
	// shell engine's default) rather than on pipes (NoTTY).
	TTY       bool
	Shell     string // the shell turns run in (Profile.Shell, or /bin/sh)
	Tip       uint64 // journal sequence of the last record
	LastEvent uint64 // journal sequence of the last event (Tip may be a command's or a fence's)
	Turns     int    // turns started, over the session's life
	// Turn is the running turn (State.Turn): started and not ended in
	// the journal; nil when none runs.
	Turn *OpenTurn
	// Gate is the gate waiting for an answer (State.Gate), nil when none
	// waits.
	Gate    *OpenGate
	LastEnd *TurnEnd // how the last turn that ended ended; nil before any did
	// Attention is what the running turn asked of the user since the user
	// last looked (State.Attention); nil when nothing is pending.
	Attention *Attention
	// Checkpoint is the workspace pointer (State.Checkpoint), nil before
	// any checkpoint.
	Checkpoint *Checkpoint
	// Conversation is an agent session's conversation
	// (State.Conversation), nil for other engines.
	Conversation *Conversation
	// ForkedFrom: where a fork came from (State.ForkedFrom), nil for a
	// session that is not one.
	ForkedFrom *event.ForkedFrom
	// Checkpointing is how far the checkpoint the session is taking is
	// (after a turn's end, before the next turn can start; at shutdown;
	// at a handover), nil when it takes none. Turn is nil then: the
	// turn's end is journaled.
	Checkpointing *CheckpointProgress
	Fault         error
	Closed        bool
}

// statusOf is what a Status says of a session whose fold is st: the one
// projection of a State into a Status. Its values are copies: the Status
// shares nothing with st.
func statusOf(st *State) Status {
	return Status{
		Title: st.Title, LastEvent: st.LastSeq, Turns: st.Turns,
		Turn: clone(st.Turn()), Gate: clone(st.Gate()), LastEnd: clone(st.LastEnd), Attention: clone(st.Attention),
		Checkpoint: clone(st.Checkpoint), Conversation: clone(st.Conversation), ForkedFrom: clone(st.ForkedFrom),
	}
}

// clone returns a copy of *p, nil for nil.
func clone[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// Status returns a snapshot of the session.
func (s *Session) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := statusOf(&s.state)
	st.ID, st.Profile, st.Engine, st.Epoch, st.LoopID = s.id, s.rig.profile.Name, s.rig.profile.Engine, s.lease.Epoch(), s.loopID
	st.Placement, st.Workspace, st.Root = s.ws.placement, s.ws.dir, s.ws.root
	st.TTY, st.Shell, st.Tip = !s.rig.profile.NoTTY, s.rig.profile.shell(), s.journal.Tip()
	st.Checkpointing, st.Fault, st.Closed = s.checkpointingLocked(), s.fault, s.closed
	return st
}
