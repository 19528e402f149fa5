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
	// ForkedFrom: where a fork came from (SessionStarted.ForkedFrom),
	// nil for a session that is not one.
	ForkedFrom *event.ForkedFrom

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
	// KeepEnds: Apply keeps how every turn ended in Ends (looprig wait
	// --turn names any turn of the session), not only the last. A live
	// session does not: it keeps nothing that grows with its turns.
	KeepEnds bool
	// Ends is how the turns that ended ended, the last first, with
	// KeepEnds (else nil). End looks a turn up in it.
	Ends *TurnEnds
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
	// Worktree is the git worktree looprig added for the session
	// (event.WorktreeAdded), nil for a session in any other directory.
	Worktree *event.WorktreeAdded
	// Active: the session is busy with a turn, or with what follows its
	// end (the checkpoint of the workspace), since SessionActive and until
	// SessionIdle. A restore, a stop, and a turn ended because its holder
	// lost the lease (nobody journals SessionIdle then) end it.
	Active bool
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

// revertedCheckpoint is the workspace pointer a WorkspaceReverted
// journaled at seq makes: the checkpoint it restored.
func revertedCheckpoint(ev event.WorkspaceReverted, seq uint64, at time.Time) *Checkpoint {
	return &Checkpoint{WorkspaceCheckpointed: event.WorkspaceCheckpointed{Manifest: ev.Manifest, Files: ev.Files, Bytes: ev.Bytes,
		TurnID: ev.TurnID, Trigger: event.TriggerRevert, Host: ev.Host}, Seq: seq, At: at}
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

// TurnEnds is a list of turn ends, the last first. Nothing writes into
// one: copies of a State share it.
type TurnEnds struct {
	TurnEnd
	Prev *TurnEnds
}

// End returns how turn id ended, nil when it has not ended, or when the
// State does not keep its ends (KeepEnds) and it was not the last.
func (s *State) End(id string) *TurnEnd {
	if s.LastEnd != nil && s.LastEnd.TurnID == id {
		return s.LastEnd
	}
	for e := s.Ends; e != nil; e = e.Prev {
		if e.TurnID == id {
			return &e.TurnEnd
		}
	}
	return nil
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

// Idle reports whether the session is idle: no turn runs, and it is not
// finishing the last one (checkpointing the workspace after its end).
func (s *State) Idle() bool { return s.Turn() == nil && !s.Active }

// Finishing reports whether the last turn has ended and the session is
// not idle yet: it is checkpointing the workspace before the next turn
// can start.
func (s *State) Finishing() bool { return s.Turn() == nil && s.Active }

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
		s.ForkedFrom = ev.ForkedFrom
		s.Stopped = false
	case event.LoopStarted:
		if s.LoopID == "" {
			s.LoopID, s.LoopName, s.Engine = ev.LoopID, ev.Name, ev.Engine
		}
	case event.RestoreStarted:
		s.Stopped, s.Fault, s.Active = false, "", false
	case event.RestoreDone:
		s.LastRestore = &ev
	case event.SessionStopped:
		s.Stopped, s.Open, s.Gates, s.Attention, s.Active = true, nil, nil, nil, false
	case event.SessionActive:
		s.Active = true
	case event.SessionIdle:
		s.Active = false
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
		if ev.Reason == event.ReasonLeaseLost || ev.Reason == event.ReasonCrash {
			s.Active = false // its holder is gone: no SessionIdle comes
		}
	case event.GateOpened:
		s.Gates = append(s.Gates[:len(s.Gates):len(s.Gates)], OpenGate{ID: ev.GateID, TurnID: ev.TurnID, Prompt: ev.Prompt, Opened: at})
	case event.GateResolved:
		s.Gates = deleteFunc(s.Gates, func(g OpenGate) bool { return g.ID == ev.GateID })
	case event.Attention:
		a := Attention{TurnID: ev.TurnID, Reason: ev.Reason, Text: ev.Text, Agent: ev.Agent, Since: at, At: at, Seq: env.Seq}
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
	case event.WorkspaceReverted:
		// The checkpoint restored is the pointer: diff, a restore's
		// reconcile and the stat index agree (rig/revert.go).
		s.Checkpoint = revertedCheckpoint(ev, env.Seq, at)
		s.CheckpointSkipped = nil
	case event.AgentConversation:
		c := Conversation{Agent: ev.Agent, ID: ev.ID, Started: ev.TurnID != ""}
		if old := s.Conversation; old != nil && old.ID == ev.ID {
			c.Started = c.Started || old.Started
			c.Transcript = old.Transcript
		}
		s.Conversation = &c
	case event.WorktreeAdded:
		s.Worktree = &ev
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
		if s.KeepEnds {
			s.Ends = &TurnEnds{TurnEnd: e, Prev: s.Ends}
		}
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
