package rigtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// A restore refused before it changes anything (drift, a busy root, a
// missing workspace) records the refusal once: its fence and
// RestoreErrored, RestoreError.Journaled true. The same refusal again, as a
// retry loop would, writes nothing (Journaled false): the journal does not
// grow. Another refusal is recorded once in its turn, and the restore that
// finally succeeds goes on from there.
func testRefusalsDoNotGrowTheJournal(t *testing.T, e *env) {
	root := canonical(t, t.TempDir())
	excl := exclusiveProfile(root)
	excl.Checkpoint = rig.CheckpointTurn
	id := stoppedSession(t, e, e.define(rig.WithProfile(excl)))

	refuse := func(r *rig.Rig, what string, wantJournaled bool) error {
		t.Helper()
		before := tip(t, e.raw, id)
		s, err := r.RestoreSession(t.Context(), id)
		if err == nil {
			shutdownAtCleanup(t, s)
			t.Fatalf("%s: the restore succeeded", what)
		}
		grew := tip(t, e.raw, id) - before
		var re *rig.RestoreError
		journaled := errors.As(err, &re) && re.Journaled
		switch {
		case wantJournaled && grew != 2:
			t.Errorf("%s, the first time: the journal grew by %d records, want 2 (a fence, RestoreErrored):%s", what, grew, describe(readJournal(t, e.raw, id)[before:]))
		case !wantJournaled && grew != 0:
			t.Errorf("%s, again: the journal grew by %d records, want none:%s", what, grew, describe(readJournal(t, e.raw, id)[before:]))
		}
		if re != nil && journaled != wantJournaled {
			t.Errorf("%s: RestoreError.Journaled %v, want %v", what, journaled, wantJournaled)
		}
		return err
	}

	// Drift: an engine change the default decider rejects.
	demo := excl
	demo.Engine = "demo"
	for i := range 3 {
		err := refuse(e.define(rig.WithProfile(demo)), "drift", i == 0)
		as[*rig.RestoreRejectedError](t, err, "restore under a changed engine")
	}

	// A busy root.
	holder := e.newSession(e.define(rig.WithProfile(excl)))
	for i := range 3 {
		err := refuse(e.define(rig.WithProfile(excl)), "a busy root", i == 0)
		as[*rig.WorkspaceRootBusyError](t, err, "restore into a busy root")
	}
	shutdown(t, holder)

	// A session workspace that is missing with no checkpoint to bring it
	// back from.
	sess := rig.Profile{Name: "s", Engine: "shell", Placement: rig.PlacementSession, Checkpoint: rig.CheckpointOff}
	id2 := stoppedSession(t, e, e.define(rig.WithProfile(sess)))
	if err := os.RemoveAll(filepath.Join(e.ws, id2.String())); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		failRestore(t, e.define(rig.WithProfile(sess)), t.Context(), id2, rig.RestoreMaterializeFailed)
	}
	recs := readJournal(t, e.raw, id2)
	errored := 0
	for _, r := range recs {
		if r.Kind == journal.KindEvent && r.Event.Type() == "RestoreErrored" {
			errored++
		}
	}
	if errored != 1 {
		t.Errorf("three restores refused for a missing workspace journaled %d RestoreErrored, want 1:%s", errored, describe(recs))
	}
	if err := os.MkdirAll(filepath.Join(e.ws, id2.String()), 0o700); err != nil {
		t.Fatal(err)
	}
	e.restore(e.define(rig.WithProfile(sess)), id2)
}

// staleLease is the lease of an earlier holder that has not noticed it
// lost it: its journal writer appends at its old epoch.
type staleLease struct{ epoch uint64 }

func (l staleLease) Epoch() uint64               { return l.epoch }
func (staleLease) Lost() <-chan struct{}         { return nil }
func (staleLease) Release(context.Context) error { return nil }

// A record an earlier holder appends between the restore's replay and its
// fence (a holder whose lease expired while it was stopped, writing as it
// resumes: here a turn it starts) is not lost to the checks made before
// the fence: the restore sees the journal grew, reads it again under its
// fence, and closes that turn as crashed.
func testRestoreReadsAgainWhatCameBeforeItsFence(t *testing.T, e *env) {
	e.skipConsistency("a hand-made stale holder fences again at its old epoch and starts a turn after its SessionStopped")
	id := stoppedSession(t, e, e.define())
	name := storage.SessionName(id.String())
	recs := readJournal(t, e.raw, id)
	var lastFence uint64
	loop := ""
	for _, r := range recs {
		if r.Kind == journal.KindFence {
			lastFence = r.Epoch
		}
		if ls, ok := r.Event.(event.LoopStarted); ok {
			loop = ls.LoopID
		}
	}
	var tips atomic.Int32
	var stale atomic.Value
	e.fs.setTipHook(func(n string) {
		// The restore reads the tip for its discovery, again under its
		// lease, then as its journal opens: write before that one.
		if n != name || tips.Add(1) != 3 {
			return
		}
		j, err := journal.Open(context.Background(), e.raw, name, staleLease{lastFence})
		if err != nil {
			t.Errorf("the stale writer's journal: %v", err)
			return
		}
		turn := "stale-turn-" + newMarker()
		if _, err := j.AppendEvent(context.Background(), loop, event.TurnStarted{TurnID: turn, Index: 99, Input: "late"}); err != nil {
			t.Errorf("the stale writer's turn: %v", err)
			return
		}
		stale.Store(turn)
	})
	s := e.restore(e.define(), id)
	e.fs.setTipHook(nil)
	turn, _ := stale.Load().(string)
	if turn == "" {
		t.Fatal("the stale writer wrote nothing")
	}
	if got := s.Restored().Interrupted; len(got) != 1 || got[0] != turn {
		t.Errorf("the restore interrupted %v, want the turn the earlier holder started before its fence (%s)", got, turn)
	}
}
