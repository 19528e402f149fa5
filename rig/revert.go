package rig

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"looprig/rig/checkpoint"
	"looprig/rig/event"
	"looprig/rig/storage"
)

// Reverting a turn (docs/ARCHITECTURE.md, "Reverting a turn"): the holder
// puts the workspace back as it was before a turn, the checkpoint that was
// the workspace pointer when the turn started, writing only what differs
// (checkpoint.Update, as a restore's reconcile does). The workspace as it
// is first is checkpointed (TriggerRevert) when it is not the pointer
// already, so nothing is lost and the revert can be reverted; then
// WorkspaceReverted makes the checkpoint restored the pointer (state.go):
// the next turn's diff, a restore's reconcile and the stat index start
// from it. A revert is refused while a turn runs or a checkpoint is taken
// (*BusyError), and when the state before the turn is not known exactly
// (*NoCheckpointBeforeError).

// LastTurn asks Revert for the last turn, or for the last revert when one
// came after the last turn's start (a second revert undoes the first).
const LastTurn = -1

// Reverted is what a revert did.
type Reverted struct {
	// TurnID and TurnIndex: the turn the workspace is as it was before;
	// Undo: the revert undid the revert before it (whose turn they are).
	TurnID    string
	TurnIndex int
	Undo      bool
	// Manifest is the checkpoint restored; From, the checkpoint of the
	// workspace just before the revert.
	Manifest string
	From     string
	// Changed counts the entries written (added, modified, mode or type
	// changed), Removed the ones removed; Paths names the first few.
	Changed int
	Removed int
	Paths   []string
	// Agent: the session's engine is an agent, whose conversation a
	// revert of files does not rewind.
	Agent bool
}

// Summary says what the revert did, in a sentence for people: "workspace
// reverted to before turn 3: 4 files changed, 1 removed".
func (r Reverted) Summary() string {
	what := fmt.Sprintf("workspace reverted to before turn %d", r.TurnIndex)
	if r.Undo {
		what = fmt.Sprintf("revert of turn %d undone: workspace as it was after it", r.TurnIndex)
	}
	var out string
	if r.Changed == 0 && r.Removed == 0 {
		out = what + ": nothing differed"
	} else {
		out = fmt.Sprintf("%s: %d %s changed, %d removed", what, r.Changed, pluralWord(r.Changed, "file", "files"), r.Removed)
	}
	if r.Agent {
		out += "; the agent's conversation is not rewound (it still remembers the turns after)"
	}
	return out
}

// NoCheckpointBeforeError refuses a revert: the workspace as it was before
// the turn is not known exactly (Reason says why: checkpoints are off, no
// checkpoint preceded the turn, one was skipped, the workspace changed
// after the last one).
type NoCheckpointBeforeError struct {
	Session string
	Index   int
	Reason  string
}

func (e *NoCheckpointBeforeError) Error() string {
	return fmt.Sprintf("cannot revert turn %d of session %s: the workspace before it is not known exactly: %s", e.Index, ShortID(e.Session), e.Reason)
}

// revertTurn is what revertScan learns of one turn.
type revertTurn struct {
	id     string
	index  int
	before storage.Digest // the pointer when it started (zero: none)
	why    string         // "" when before is the workspace then, exactly; else why not
}

// revertScan folds a journal for Revert: the pointer before each turn,
// and the last revert when no turn started after it.
type revertScan struct {
	turns []revertTurn
	ptr   storage.Digest
	why   string // "" when the workspace is ptr (as far as the journal knows)
	last  *event.WorkspaceReverted
	sizes map[storage.Digest][2]int64 // files and bytes of each checkpoint
}

func (sc *revertScan) read(ctx context.Context, store storage.Store, id uuid.UUID) error {
	rp, err := ReadEvents(ctx, store, id, 0)
	if err != nil {
		return err
	}
	defer rp.Close()
	sc.why = "no checkpoint preceded it (the first is taken when the session's first turn ends)"
	sc.sizes = map[storage.Digest][2]int64{}
	for rp.Next() {
		switch ev := rp.Envelope().Event.(type) {
		case event.WorkspaceCheckpointed:
			d, err := storage.ParseDigest(ev.Manifest)
			if err != nil {
				return err
			}
			sc.ptr, sc.why = d, ""
			sc.sizes[d] = [2]int64{int64(ev.Files), ev.Bytes}
		case event.WorkspaceCheckpointSkipped:
			sc.why = "the checkpoint after the turn before it was skipped: " + ev.Reason
		case event.WorkspaceReverted:
			d, err := storage.ParseDigest(ev.Manifest)
			if err != nil {
				return err
			}
			sc.ptr, sc.why, sc.last = d, "", &ev
		case event.TurnStarted:
			sc.turns = append(sc.turns, revertTurn{id: ev.TurnID, index: ev.Index, before: sc.ptr, why: sc.why})
			sc.why = fmt.Sprintf("no checkpoint followed turn %d (the profile takes them at shutdown only, or the session stopped without one)", ev.Index)
			sc.last = nil
		}
	}
	return rp.Err()
}

// revertTarget is the checkpoint a revert restores.
type revertTarget struct {
	turnID string
	index  int
	undo   bool
	want   storage.Digest
}

// target picks what Revert(turn) restores in the scanned journal.
func (sc *revertScan) target(sid string, turn int) (revertTarget, error) {
	if turn == LastTurn && sc.last != nil {
		from, err := storage.ParseDigest(sc.last.From)
		if err != nil {
			return revertTarget{}, err
		}
		return revertTarget{turnID: sc.last.TurnID, index: sc.last.TurnIndex, undo: true, want: from}, nil
	}
	var t *revertTurn
	for i := len(sc.turns) - 1; i >= 0; i-- {
		if turn == LastTurn || sc.turns[i].index == turn {
			t = &sc.turns[i]
			break
		}
	}
	if t == nil {
		nf := &TurnNotFoundError{Session: sid}
		if turn != LastTurn {
			nf.Turn = fmt.Sprint(turn)
		}
		return revertTarget{}, nf
	}
	if t.why != "" {
		return revertTarget{}, &NoCheckpointBeforeError{Session: sid, Index: t.index, Reason: t.why}
	}
	return revertTarget{turnID: t.id, index: t.index, want: t.before}, nil
}

// Revert puts the session's workspace back as it was before turn (its
// index; LastTurn for the last one, or to undo a revert that came after
// it), writing only what differs, and journals WorkspaceReverted. It is
// refused with *BusyError while a turn runs, while the checkpoint after a
// turn is taken or while another revert runs, with
// *NoCheckpointBeforeError when the workspace before the turn is not
// known exactly, and with *TurnNotFoundError for a turn the session has
// not run. A failure while writing leaves the workspace partly reverted,
// its pointer the checkpoint taken before: a revert again finishes it.
func (s *Session) Revert(ctx context.Context, turn int) (Reverted, error) {
	sid := s.id.String()
	if err := s.admitRevert(); err != nil {
		return Reverted{}, err
	}
	defer func() {
		s.mu.Lock()
		s.reverting = false
		s.mu.Unlock()
	}()
	if s.rig.profile.checkpointMode() == CheckpointOff || s.ws == nil || s.ws.dir == "" {
		idx := turn
		if idx == LastTurn {
			idx = s.stateNextIndex() - 1
		}
		return Reverted{}, &NoCheckpointBeforeError{Session: sid, Index: idx,
			Reason: "the session takes no checkpoints of its workspace (its profile has checkpoint = \"off\")"}
	}
	var sc revertScan
	if err := sc.read(ctx, s.rig.store, s.id); err != nil {
		return Reverted{}, fmt.Errorf("revert session %s: read its journal: %w", ShortID(sid), err)
	}
	tg, err := sc.target(sid, turn)
	if err != nil {
		return Reverted{}, err
	}
	s.ckpt.mu.Lock()
	defer s.ckpt.mu.Unlock()
	have, from, err := s.checkpointAsItIs(ctx, event.TriggerRevert)
	if err != nil {
		return Reverted{}, fmt.Errorf("revert session %s: checkpoint the workspace first: %w", ShortID(sid), err)
	}
	out := Reverted{TurnID: tg.turnID, TurnIndex: tg.index, Undo: tg.undo, Manifest: tg.want.String(), From: from.String(), Agent: s.agent() != nil}
	if from == tg.want {
		return out, nil // nothing differs: nothing to journal
	}
	want, err := checkpoint.Load(ctx, s.rig.store, tg.want)
	if err != nil {
		return Reverted{}, fmt.Errorf("revert session %s: load the checkpoint before turn %d: %w", ShortID(sid), tg.index, err)
	}
	changes, err := checkpoint.Update(ctx, s.rig.store, have, want, s.ws.dir)
	if err != nil {
		return Reverted{}, fmt.Errorf("revert session %s to before turn %d (the workspace may be partly reverted; revert again to finish): %w",
			ShortID(sid), tg.index, err)
	}
	for _, c := range changes {
		if c.Kind == checkpoint.Removed {
			out.Removed++
		} else {
			out.Changed++
		}
	}
	out.Paths = pathsOf(changes)
	size := sc.sizes[tg.want]
	bg, cancel := s.bg()
	defer cancel()
	if _, err := s.hub.Publish(bg, "", event.WorkspaceReverted{TurnID: tg.turnID, TurnIndex: tg.index, Undo: tg.undo,
		Manifest: out.Manifest, From: out.From, Files: int(size[0]), Bytes: size[1],
		Changed: out.Changed, Removed: out.Removed, Paths: out.Paths, Host: hostname()}); err != nil {
		return Reverted{}, s.mutationErr(err)
	}
	// The directory is the checkpoint restored now: the index says so,
	// and knows the chunks of the files written.
	s.checkpointJournaled(tg.want)
	if next, err := checkpoint.IndexAfterUpdate(s.ckpt.index, s.ws.dir, want, tg.want, changes); err == nil {
		s.keepIndex(next)
	} else {
		s.rig.log.Warn("checkpoint index not updated after a revert", "session", s.id, "err", err)
		s.ckpt.index, s.ckpt.saved = nil, false // the next checkpoint reads every file
	}
	s.updateCatalog()
	return out, nil
}

// admitRevert admits a revert: the session takes work, no turn runs, no
// checkpoint is being taken, no other revert runs; it marks the session
// reverting (Submit refuses a turn meanwhile).
func (s *Session) admitRevert() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.admitLocked(); err != nil {
		return err
	}
	if to := s.handingOff; to != "" {
		return &HandingOffError{To: to}
	}
	if t := s.turn; t != nil {
		busy := &BusyError{TurnID: t.id, Index: t.index}
		select {
		case <-t.ending:
			busy.Checkpointing = true
		default:
		}
		return busy
	}
	if s.ckptRun != nil {
		return &BusyError{TurnID: s.ckptRun.progress.TurnID, Index: -1, Checkpointing: true}
	}
	if s.reverting {
		return &BusyError{Index: -1, Reverting: true}
	}
	s.reverting = true
	return nil
}

// stateNextIndex is the index the next turn takes.
func (s *Session) stateNextIndex() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.NextIndex
}
