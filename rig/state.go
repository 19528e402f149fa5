package rig

import (
	"time"

	"looprig/rig/event"
)

// State is what a session's events say about it: the one fold of events
// into the state of a session. A restore replays the journal into one to
// find the turns and gates a crash left open; a live session keeps one of
// what it journals (its status and catalog entry say what it holds);
// presenters fold what they follow into one to say whether a turn runs,
// a gate waits, how the last turn ended. Apply takes events in journal
// order, live ones (output, faults) between them; the zero value is a
// session nothing is known of yet.
type State struct {
	// From SessionStarted and the root LoopStarted.
	Title, Profile, Placement, Root string
	LoopID, LoopName, Engine        string

	// Turns counts the turns started; NextIndex is the index the next
	// one gets.
	Turns, NextIndex int
	// Open lists the turns started and not ended, in start order: at most
	// one but in a journal a crash left, where a restore closes them all.
	Open []OpenTurn
	// Gates lists the gates opened and not resolved, in open order. A
	// gate of a turn that ended is resolved (nobody can answer it).
	Gates []OpenGate
	// LastEnd is how the last turn that ended ended.
	LastEnd *TurnEnd
	// Attention is what the running turn asked of the user (a bell, a
	// notification: event.Attention) since the user last looked
	// (event.AttentionSeen); nil when nothing is pending. The end of its
	// turn clears it too: the turn no longer waits for anyone, and its end
	// is what there is to see.
	Attention *Attention
	// LastRestore is the last restore that committed.
	LastRestore *event.RestoreDone
	// Checkpoint is the workspace pointer: the latest checkpoint of the
	// workspace (event.WorkspaceCheckpointed), nil before any.
	Checkpoint *Checkpoint
	// CheckpointSkipped is the last checkpoint that was due and skipped
	// after the pointer was set (or before any was), nil when none was:
	// the pointer is older than the workspace.
	CheckpointSkipped *event.WorkspaceCheckpointSkipped
	// Conversation is the agent conversation the session's turns
	// continue (event.AgentConversation), nil for sessions of other
	// engines.
	Conversation *Conversation
	// Stopped: SessionStopped is the last word (until a restore).
	Stopped bool
	// Fault is the cause of a SessionFaulted (a live event): the session
	// stopped accepting work. A restore clears it.
	Fault string

	// LastSeq is the sequence of the last durable event applied; LastAt
	// when the last event was recorded.
	LastSeq uint64
	LastAt  time.Time
}

// Checkpoint is a checkpoint of the workspace as the journal records it.
type Checkpoint struct {
	event.WorkspaceCheckpointed
	// Seq and At: where and when it was journaled.
	Seq uint64
	At  time.Time
}

// Conversation is an agent session's conversation as the journal records
// it.
type Conversation struct {
	Agent, ID string
	// Started: a turn's agent reported the conversation (or stored its
	// transcript), so it exists and the next turn resumes it.
	Started bool
	// Transcript is the last stored transcript of the conversation, nil
	// before any.
	Transcript *event.AgentTranscript
}

// OpenTurn is a turn that started and has not ended.
type OpenTurn struct {
	ID      string
	Index   int
	Input   string
	Started time.Time
}

// OpenGate is a gate that opened and has not been resolved.
type OpenGate struct {
	ID, TurnID, Prompt string
	Opened             time.Time
}

// Turn returns the running turn, nil when none runs.
func (s *State) Turn() *OpenTurn {
	if len(s.Open) == 0 {
		return nil
	}
	return &s.Open[len(s.Open)-1]
}

// Gate returns the gate waiting for an answer, nil when none does.
func (s *State) Gate() *OpenGate {
	if len(s.Gates) == 0 {
		return nil
	}
	return &s.Gates[len(s.Gates)-1]
}

// Apply folds one event. Durable events at or below LastSeq are ones
// applied already, and skipped.
func (s *State) Apply(env event.Envelope) {
	if env.Seq != 0 {
		if env.Seq <= s.LastSeq {
			return
		}
		s.LastSeq = env.Seq
	}
	if !env.At.IsZero() {
		s.LastAt = env.At
	}
	at := env.At
	switch ev := env.Event.(type) {
	case event.SessionStarted:
		s.Title, s.Profile, s.Placement, s.Root = ev.Title, ev.Rig, ev.Placement, ev.Root
		s.Stopped = false
	case event.LoopStarted:
		if s.LoopID == "" {
			s.LoopID, s.LoopName, s.Engine = ev.LoopID, ev.Name, ev.Engine
		}
	case event.RestoreStarted:
		s.Stopped, s.Fault = false, ""
	case event.RestoreDone:
		s.LastRestore = &ev
	case event.SessionStopped:
		s.Stopped, s.Open, s.Gates, s.Attention = true, nil, nil, nil
	case event.SessionFaulted:
		s.Fault = ev.Cause
	case event.TurnStarted:
		s.Stopped = false
		s.Turns++
		s.NextIndex = max(s.NextIndex, ev.Index+1)
		s.Open = append(s.Open[:len(s.Open):len(s.Open)], OpenTurn{ID: ev.TurnID, Index: ev.Index, Input: ev.Input, Started: at})
	case event.TurnDone:
		s.ended(ev, ev.TurnID, at)
	case event.TurnFailed:
		s.ended(ev, ev.TurnID, at)
	case event.TurnInterrupted:
		s.ended(ev, ev.TurnID, at)
	case event.GateOpened:
		s.Gates = append(s.Gates[:len(s.Gates):len(s.Gates)], OpenGate{ID: ev.GateID, TurnID: ev.TurnID, Prompt: ev.Prompt, Opened: at})
	case event.GateResolved:
		s.Gates = deleteFunc(s.Gates, func(g OpenGate) bool { return g.ID == ev.GateID })
	case event.Attention:
		a := Attention{TurnID: ev.TurnID, Reason: ev.Reason, Text: ev.Text, Since: at, At: at, Seq: env.Seq}
		if s.Attention != nil {
			a.Since = s.Attention.Since // still not seen since then
		}
		s.Attention = &a // a new value: a copied State keeps its own
	case event.AttentionSeen:
		if s.Attention != nil && s.Attention.Seq <= ev.Through {
			s.Attention = nil
		}
	case event.WorkspaceCheckpointed:
		s.Checkpoint = &Checkpoint{WorkspaceCheckpointed: ev, Seq: env.Seq, At: at}
		s.CheckpointSkipped = nil
	case event.WorkspaceCheckpointSkipped:
		s.CheckpointSkipped = &ev
	case event.AgentConversation:
		c := Conversation{Agent: ev.Agent, ID: ev.ID, Started: ev.TurnID != ""}
		if old := s.Conversation; old != nil && old.ID == ev.ID {
			c.Started = c.Started || old.Started
			c.Transcript = old.Transcript
		}
		s.Conversation = &c
	case event.AgentTranscript:
		c := Conversation{Agent: ev.Agent, ID: ev.ID, Started: true, Transcript: &ev}
		s.Conversation = &c
	}
}

// ended folds the end ev of turn id, recorded at: the last end, with the
// index and start of the open turn (rig.TurnEndOf; a turn this State did
// not see start ends as index -1, started at its end), and the turn and
// its gates are no longer open.
func (s *State) ended(ev event.Event, id string, at time.Time) {
	index, started := -1, at
	for _, t := range s.Open {
		if t.ID == id {
			index, started = t.Index, t.Started
		}
	}
	if e, ok := TurnEndOf(ev, index, started, at); ok {
		s.LastEnd = &e
	}
	s.Open = deleteFunc(s.Open, func(t OpenTurn) bool { return t.ID == id })
	s.Gates = deleteFunc(s.Gates, func(g OpenGate) bool { return g.TurnID == id })
	if s.Attention != nil && s.Attention.TurnID == id {
		s.Attention = nil
	}
}

// deleteFunc returns list without the items del selects, in a new array
// when it removes any (a copied State shares its lists: Apply never
// writes into them), nil when nothing is left.
func deleteFunc[T any](list []T, del func(T) bool) []T {
	var out []T
	removed := false
	for _, x := range list {
		if del(x) {
			removed = true
		} else {
			out = append(out, x)
		}
	}
	if !removed {
		return list
	}
	return out
}
