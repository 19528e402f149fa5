package rig

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"looprig/rig/event"
	"looprig/rig/storage"
)

// TurnCheckpoints are the workspace checkpoints around one turn of a
// session: what the workspace held before it started (the pointer then)
// and after it (the last checkpoint journaled before the next turn
// started). Their difference (checkpoint.Diff) is what the turn changed,
// with what was edited between the turn before and it.
type TurnCheckpoints struct {
	TurnID string
	Index  int
	// Before is the zero Digest when no checkpoint preceded the turn (an
	// empty workspace, for the first turn of a session).
	Before storage.Digest
	// After is the checkpoint journaled for the turn (equal to Before
	// when it changed nothing).
	After storage.Digest
}

// TurnNotFoundError: the session has no turn of that index or id.
type TurnNotFoundError struct {
	Session string
	Turn    string // the index or id prefix asked for; "" for the last turn
}

func (e *TurnNotFoundError) Error() string {
	if e.Turn == "" {
		return fmt.Sprintf("session %s has run no turn yet", ShortID(e.Session))
	}
	return fmt.Sprintf("session %s has no turn %s (`looprig log %s` lists its turns)", ShortID(e.Session), e.Turn, ShortID(e.Session))
}

// TurnNotCheckpointedError: what a turn changed is not known, because no
// checkpoint follows it (the turn runs, the profile takes none, or one
// was skipped: Reason says which).
type TurnNotCheckpointedError struct {
	Session string
	Index   int
	Reason  string
}

func (e *TurnNotCheckpointedError) Error() string {
	return fmt.Sprintf("what turn %d of session %s changed is not known: %s", e.Index, ShortID(e.Session), e.Reason)
}

// turnSpan is what FindTurnCheckpoints learns of one turn.
type turnSpan struct {
	id            string
	index         int
	before, after storage.Digest
	checkpointed  bool   // a checkpoint was journaled after its start
	ended         bool   // its end was journaled
	settled       bool   // an event came after its end: its checkpoint, if any, is on record
	skipped       string // the reason of a skip after it, when no checkpoint came
	reverted      bool   // a revert followed it: later checkpoints are not its
	// ck is the checkpoint a fork of the turn starts from: the first one
	// journaled for it (its TurnID), else the last one after its start.
	ck *Checkpoint
	// conv and transcript are the agent conversation, and its last stored
	// transcript, when the turn ended (nil for other engines).
	conv       *event.AgentConversation
	transcript *event.AgentTranscript
}

// turnScan folds a journal's events into the turns' spans.
type turnScan struct {
	spans         []turnSpan
	ptr           storage.Digest
	anyCheckpoint bool
	last          uint64 // the sequence of the last event read
	conv          *event.AgentConversation
	transcript    *event.AgentTranscript
}

// read folds session id's events after s.last.
func (s *turnScan) read(ctx context.Context, store storage.Store, id uuid.UUID) error {
	rp, err := ReadEvents(ctx, store, id, s.last)
	if err != nil {
		return err
	}
	defer rp.Close()
	for rp.Next() {
		env := rp.Envelope()
		s.last = env.Seq
		var cur *turnSpan
		if len(s.spans) > 0 {
			cur = &s.spans[len(s.spans)-1]
			if cur.ended {
				cur.settled = true
			}
		}
		switch ev := env.Event.(type) {
		case event.TurnStarted:
			s.spans = append(s.spans, turnSpan{id: ev.TurnID, index: ev.Index, before: s.ptr, after: s.ptr})
		case event.TurnDone, event.TurnFailed, event.TurnInterrupted:
			if cur != nil {
				cur.ended, cur.settled = true, false
				cur.conv, cur.transcript = s.conv, s.transcript
			}
		case event.AgentConversation:
			s.conv = &ev
		case event.AgentTranscript:
			s.transcript = &ev
		case event.WorkspaceCheckpointed:
			d, err := storage.ParseDigest(ev.Manifest)
			if err != nil {
				return err
			}
			s.ptr, s.anyCheckpoint = d, true
			if cur != nil && !cur.reverted {
				cur.after, cur.checkpointed, cur.skipped = d, true, ""
				if cur.ck == nil || cur.ck.TurnID != cur.id {
					cur.ck = &Checkpoint{WorkspaceCheckpointed: ev, Seq: env.Seq, At: env.At}
				}
			}
		case event.WorkspaceReverted:
			// The workspace after the turn is what was checkpointed before
			// the revert; the next turn starts from the checkpoint restored.
			d, err := storage.ParseDigest(ev.Manifest)
			if err != nil {
				return err
			}
			s.ptr = d
			if cur != nil {
				cur.reverted = true
			}
		case event.WorkspaceCheckpointSkipped:
			if cur != nil && !cur.checkpointed && !cur.reverted {
				cur.skipped = ev.Reason
			}
		}
	}
	return rp.Err()
}

// pendingPoll is how often FindTurnCheckpoints looks again for the
// checkpoint of a turn whose end was just journaled.
const pendingPoll = 100 * time.Millisecond

// FindTurnCheckpoints reads session id's journal for the checkpoints
// around a turn: turn is its index (as "3" or "#3"), a prefix of its id,
// or "" for the last turn. When the turn's end is the journal's last word
// (its checkpoint is being taken), it waits for what comes next, until
// ctx ends. It fails with *TurnNotFoundError, or with
// *TurnNotCheckpointedError when the turn runs or no checkpoint of the
// workspace followed it.
func FindTurnCheckpoints(ctx context.Context, store storage.Store, id uuid.UUID, turn string) (TurnCheckpoints, error) {
	span, err := settledTurn(ctx, store, id, turn, false)
	if err != nil {
		return TurnCheckpoints{}, err
	}
	return TurnCheckpoints{TurnID: span.id, Index: span.index, Before: span.before, After: span.after}, nil
}

// settledTurn is FindTurnCheckpoints' span of turn, once a checkpoint
// follows it; lastEnded picks, for turn "", the last turn that ended
// rather than the last turn.
func settledTurn(ctx context.Context, store storage.Store, id uuid.UUID, turn string, lastEnded bool) (turnSpan, error) {
	var scan turnScan
	sid := id.String()
	for {
		if err := scan.read(ctx, store, id); err != nil {
			return turnSpan{}, err
		}
		spans := scan.spans
		if lastEnded && turn == "" {
			for len(spans) > 0 && !spans[len(spans)-1].ended {
				spans = spans[:len(spans)-1]
			}
		}
		span, err := pickTurn(spans, sid, turn)
		if err != nil {
			return turnSpan{}, err
		}
		notKnown := func(reason string) error {
			return &TurnNotCheckpointedError{Session: sid, Index: span.index, Reason: reason}
		}
		switch {
		case !span.ended:
			return turnSpan{}, notKnown("it has not ended (a checkpoint is taken when it ends)")
		case span.skipped != "":
			return turnSpan{}, notKnown("its checkpoint was skipped: " + span.skipped)
		case span.checkpointed:
			return span, nil
		case span.settled && !scan.anyCheckpoint:
			return turnSpan{}, notKnown("the session has no checkpoint of its workspace (its profile has checkpoint = \"off\", or it predates checkpoints)")
		case span.settled:
			return turnSpan{}, notKnown("no checkpoint followed it (the profile takes them at shutdown only, or took none then)")
		}
		select {
		case <-ctx.Done():
			return turnSpan{}, notKnown("its checkpoint was not journaled in time (the session may have stopped while taking it: restore it, or try again)")
		case <-time.After(pendingPoll):
		}
	}
}

// pickTurn finds turn (see FindTurnCheckpoints) among spans.
func pickTurn(spans []turnSpan, sid, turn string) (turnSpan, error) {
	if turn == "" {
		if len(spans) == 0 {
			return turnSpan{}, &TurnNotFoundError{Session: sid}
		}
		return spans[len(spans)-1], nil
	}
	want := strings.TrimPrefix(turn, "#")
	for i := len(spans) - 1; i >= 0; i-- {
		if fmt.Sprint(spans[i].index) == want {
			return spans[i], nil
		}
	}
	var found []turnSpan
	if len(want) >= 4 {
		for _, s := range spans {
			if strings.HasPrefix(s.id, strings.ToLower(want)) {
				found = append(found, s)
			}
		}
	}
	if len(found) != 1 {
		return turnSpan{}, &TurnNotFoundError{Session: sid, Turn: turn}
	}
	return found[0], nil
}
