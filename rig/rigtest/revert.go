package rigtest

import (
	"maps"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"looprig/rig"
	"looprig/rig/checkpoint"
	"looprig/rig/event"
	"looprig/rig/storage"
)

var revertCases = []testCase{
	{"LastTurn", testRevertLastTurn},
	{"EarlierTurn", testRevertEarlierTurn},
	{"RevertReverted", testRevertReverted},
	{"RefusedWhileTurnRuns", testRevertRefusedWhileTurnRuns},
	{"RefusedWithoutCheckpoint", testRevertRefusedWithoutCheckpoint},
	{"HandEditBetweenTurns", testRevertHandEditBetweenTurns},
}

// An edit by hand between two turns (a project directory the user works
// in too) is checkpointed when the next turn starts (TriggerTurnStart):
// that turn's diff names only what it did, and its revert keeps the edit.
// A turn that found the workspace as the last checkpoint journals nothing
// before it.
func testRevertHandEditBetweenTurns(t *testing.T, e *env) {
	s := e.newSession(e.define())
	dir := s.Workspace()
	runTurn(t, s, "echo one > a.txt")
	before := len(readJournal(t, e.raw, s.SessionID()))
	runTurn(t, s, "true")
	cps, _ := find[event.WorkspaceCheckpointed](readJournal(t, e.raw, s.SessionID())[before:])
	for _, cp := range cps {
		if cp.Trigger == event.TriggerTurnStart {
			t.Fatalf("a turn that found the workspace unchanged was checkpointed before it: %+v", cp)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "mine.txt"), []byte("by hand\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ti := runTurn(t, s, "echo two > a.txt")
	cps, _ = find[event.WorkspaceCheckpointed](readJournal(t, e.raw, s.SessionID()))
	if n := len(cps); n < 2 || cps[n-2].Trigger != event.TriggerTurnStart {
		t.Fatalf("no checkpoint before the turn after the edit: %+v", cps)
	}
	tc, err := rig.FindTurnCheckpoints(waitCtx(t), e.raw, s.SessionID(), "")
	if err != nil {
		t.Fatal(err)
	}
	changes, err := checkpoint.Diff(waitCtx(t), e.raw, tc.Before, tc.After, checkpoint.DiffOptions{NoPatch: true})
	if err != nil || len(changes) != 1 || changes[0].Path != "a.txt" {
		t.Fatalf("the turn's diff: %+v, %v; want a.txt alone (the edit by hand is not the turn's)", changes, err)
	}
	if rv, err := s.Revert(waitCtx(t), ti.Index); err != nil || rv.Changed != 1 || rv.Removed != 0 {
		t.Fatalf("Revert = %+v, %v; want a.txt written back alone", rv, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "one\n" {
		t.Fatalf("a.txt after the revert: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "mine.txt")); err != nil || string(b) != "by hand\n" {
		t.Fatalf("the edit by hand after the revert: %q, %v; want it kept", b, err)
	}
}

// sameAsCheckpoint fails unless dir is exactly checkpoint manifest hex
// (every entry's kind, mode, content and link target; nothing more).
func sameAsCheckpoint(t *testing.T, e *env, dir, hex, what string) {
	t.Helper()
	d, err := storage.ParseDigest(hex)
	if err != nil {
		t.Fatal(err)
	}
	diff, err := checkpoint.Differences(waitCtx(t), e.raw, d, dir, checkpoint.Options{})
	if err != nil {
		t.Fatalf("%s: compare with the checkpoint: %v", what, err)
	}
	for _, c := range diff {
		t.Errorf("%s: %s differs from the checkpoint (%s)", what, c.Path, c.Kind)
	}
}

// treeIs fails unless dir is want (treeOf: kinds, file modes and
// contents, link targets).
func treeIs(t *testing.T, dir string, want map[string]string, what string) {
	t.Helper()
	got := treeOf(t, dir)
	if !maps.Equal(got, want) {
		t.Errorf("%s: the workspace is\n%v\nwant\n%v", what, got, want)
	}
}

// lastCheckpoint is the last WorkspaceCheckpointed of session s.
func lastCheckpoint(t *testing.T, e *env, s *rig.Session) event.WorkspaceCheckpointed {
	t.Helper()
	cps, _ := find[event.WorkspaceCheckpointed](readJournal(t, e.raw, s.SessionID()))
	if len(cps) == 0 {
		t.Fatal("no checkpoint journaled")
	}
	return cps[len(cps)-1]
}

// The last turn's revert puts the workspace back as the checkpoint before
// it, byte-exact (a file changed, a mode changed, a file added, one
// removed, a link retargeted, a directory added), writing only what
// differs; it is journaled and is the pointer, so the next turn's diff is
// against it, and a shutdown after it journals nothing more.
func testRevertLastTurn(t *testing.T, e *env) {
	s := e.newSession(e.define())
	id, dir := s.SessionID(), s.Workspace()
	runTurn(t, s, makeFilesInput)
	before := treeOf(t, dir)
	cp0 := lastCheckpoint(t, e, s)
	ti := runTurn(t, s, `printf 'changed\n' > notes.txt && chmod 644 run.sh && rm blob.bin && printf 'new\n' > added.txt &&
rm link.go && ln -s notes.txt link.go && mkdir -p newdir/inner && printf 'x' > newdir/inner/f`)
	untouched, err := statOf(dir, "src/deep/deep.go")
	if err != nil {
		t.Fatal(err)
	}

	rv, err := s.Revert(waitCtx(t), rig.LastTurn)
	if err != nil {
		t.Fatalf("Revert: %v", err)
	}
	if rv.TurnIndex != ti.Index || rv.TurnID != ti.ID || rv.Undo || rv.Manifest != cp0.Manifest || rv.Agent {
		t.Errorf("Revert = %+v; want turn %d restored to checkpoint %s", rv, ti.Index, cp0.Manifest)
	}
	// notes.txt, run.sh (mode), blob.bin (back), link.go; added.txt and
	// newdir/inner/f removed (and the directories they leave empty).
	if rv.Changed != 4 || rv.Removed != 2 {
		t.Errorf("Revert changed %d and removed %d entries, want 4 and 2: %+v", rv.Changed, rv.Removed, rv)
	}
	treeIs(t, dir, before, "after the revert")
	sameAsCheckpoint(t, e, dir, cp0.Manifest, "after the revert")
	if now, err := statOf(dir, "src/deep/deep.go"); err != nil || now != untouched {
		t.Errorf("a file that did not differ was written: %+v, was %+v (%v)", now, untouched, err)
	}

	recs := readJournal(t, e.raw, id)
	revs, _ := find[event.WorkspaceReverted](recs)
	if len(revs) != 1 || revs[0].Manifest != cp0.Manifest || revs[0].TurnIndex != ti.Index || revs[0].Changed != 4 || revs[0].Removed != 2 {
		t.Fatalf("WorkspaceReverted records %+v:\n%s", revs, describe(recs))
	}
	if cps, _ := find[event.WorkspaceCheckpointed](recs); revs[0].From != cps[len(cps)-1].Manifest {
		t.Errorf("the revert's From %s is not the last checkpoint %s", revs[0].From, cps[len(cps)-1].Manifest)
	}
	if st := s.Status(); st.Checkpoint == nil || st.Checkpoint.Manifest != cp0.Manifest || st.Checkpoint.Trigger != event.TriggerRevert {
		t.Errorf("the pointer after the revert: %+v; want %s", st.Checkpoint, cp0.Manifest)
	}

	// The next turn starts from the reverted workspace.
	next := runTurn(t, s, "printf 'after\\n' >> notes.txt")
	tc, err := rig.FindTurnCheckpoints(waitCtx(t), e.raw, id, "")
	if err != nil {
		t.Fatal(err)
	}
	if tc.Index != next.Index || tc.Before.String() != cp0.Manifest {
		t.Errorf("the turn after the revert: %+v; want its before to be %s", tc, cp0.Manifest)
	}
	changes, err := checkpoint.Diff(waitCtx(t), e.raw, tc.Before, tc.After, checkpoint.DiffOptions{NoPatch: true})
	if err != nil || len(changes) != 1 || changes[0].Path != "notes.txt" {
		t.Errorf("the diff of the turn after the revert: %+v, %v; want notes.txt only", changes, err)
	}
	// Its revert goes back to the reverted workspace: the revert was the
	// boundary before it.
	if rv, err := s.Revert(waitCtx(t), rig.LastTurn); err != nil || rv.TurnIndex != next.Index || rv.Manifest != cp0.Manifest {
		t.Errorf("the revert of the turn after the revert: %+v, %v; want back to %s", rv, err, cp0.Manifest)
	}
	treeIs(t, dir, before, "after the revert of the turn after the revert")
	// The turn reverted keeps its diff.
	tc, err = rig.FindTurnCheckpoints(waitCtx(t), e.raw, id, "1")
	if err != nil || tc.Before.String() != cp0.Manifest || tc.After.String() != revs[0].From {
		t.Errorf("the reverted turn's checkpoints after the revert: %+v, %v", tc, err)
	}
}

// statOf is what a write of the file would change: its inode and mtime.
func statOf(dir, rel string) ([2]int64, error) {
	fi, err := os.Lstat(filepath.Join(dir, rel))
	if err != nil {
		return [2]int64{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return [2]int64{0, fi.ModTime().UnixNano()}, nil
	}
	return [2]int64{int64(st.Ino), fi.ModTime().UnixNano()}, nil
}

// readWorkspaceFile is the content of dir/rel.
func readWorkspaceFile(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// An earlier turn's revert puts the workspace back as it was before that
// turn (undoing the turns after it too), byte-exact; a restore after it
// finds the workspace as its last record says (nothing to reconcile).
func testRevertEarlierTurn(t *testing.T, e *env) {
	s := e.newSession(e.define())
	id, dir := s.SessionID(), s.Workspace()
	runTurn(t, s, "printf 'one\\n' > a.txt && mkdir d && printf 'x\\n' > d/x")
	before1 := treeOf(t, dir)
	cp0 := lastCheckpoint(t, e, s)
	runTurn(t, s, "printf 'two\\n' >> a.txt && printf 'b\\n' > b.txt && chmod 700 d")
	runTurn(t, s, "rm -r d && printf 'three\\n' > c.txt && chmod 755 a.txt")
	cp2 := lastCheckpoint(t, e, s)

	rv, err := s.Revert(waitCtx(t), 1)
	if err != nil {
		t.Fatalf("Revert(1): %v", err)
	}
	if rv.TurnIndex != 1 || rv.Manifest != cp0.Manifest {
		t.Errorf("Revert(1) = %+v; want turn 1 back to %s", rv, cp0.Manifest)
	}
	treeIs(t, dir, before1, "after reverting turn 1")
	sameAsCheckpoint(t, e, dir, cp0.Manifest, "after reverting turn 1")
	if _, err := s.Revert(waitCtx(t), 7); err == nil {
		t.Error("Revert of a turn the session has not run succeeded")
	} else {
		as[*rig.TurnNotFoundError](t, err, "Revert(7)")
	}
	// An edit after the revert: the shutdown's checkpoint records it, and
	// it is none of the reverted turn's.
	writeFile(t, filepath.Join(dir, "hand.txt"), "by hand\n")
	final := treeOf(t, dir)
	shutdown(t, s)
	if tc, err := rig.FindTurnCheckpoints(waitCtx(t), e.raw, id, "2"); err != nil || tc.After.String() != cp2.Manifest {
		t.Errorf("turn 2's checkpoints after its revert and a checkpoint of an edit: %+v, %v; want after = %s", tc, err, cp2.Manifest)
	}
	if revs, _ := find[event.WorkspaceReverted](readJournal(t, e.raw, id)); len(revs) != 1 {
		t.Errorf("WorkspaceReverted records %+v, want one", revs)
	}
	s2 := e.restore(e.define(), id)
	if ws := s2.Restored().Workspace; ws == nil || !ws.Matches {
		t.Errorf("the restore after the revert found the workspace %+v; want it matching the last checkpoint", ws)
	}
	treeIs(t, dir, final, "after the restore")
}

// A revert reverted: the second revert (of the last change, the revert)
// brings the workspace back as it was before the first, byte-exact,
// including what was edited after the last turn's checkpoint (checkpointed
// by the first revert before it wrote anything).
func testRevertReverted(t *testing.T, e *env) {
	s := e.newSession(e.define())
	id, dir := s.SessionID(), s.Workspace()
	runTurn(t, s, "printf 'one\\n' > a.txt")
	cp0 := lastCheckpoint(t, e, s)
	runTurn(t, s, "printf 'two\\n' > a.txt && printf 'b\\n' > b.txt && chmod 600 b.txt")
	// An edit made after the turn, never checkpointed by a turn.
	writeFile(t, filepath.Join(dir, "edited.txt"), "by hand\n")
	after := treeOf(t, dir)

	first, err := s.Revert(waitCtx(t), rig.LastTurn)
	if err != nil {
		t.Fatalf("Revert: %v", err)
	}
	sameAsCheckpoint(t, e, dir, cp0.Manifest, "after the revert")
	second, err := s.Revert(waitCtx(t), rig.LastTurn)
	if err != nil {
		t.Fatalf("Revert of the revert: %v", err)
	}
	if !second.Undo || second.TurnIndex != first.TurnIndex || second.Manifest != first.From || second.From != first.Manifest {
		t.Errorf("the revert of the revert %+v; want the undo of %+v", second, first)
	}
	treeIs(t, dir, after, "after the revert of the revert")
	sameAsCheckpoint(t, e, dir, first.From, "after the revert of the revert")

	recs := readJournal(t, e.raw, id)
	cps, _ := find[event.WorkspaceCheckpointed](recs)
	if n := len(cps); n != 3 || cps[2].Trigger != event.TriggerRevert || cps[2].Manifest != first.From {
		t.Errorf("checkpoints %+v; want the two turns' and the revert's of the edited workspace", cps)
	}
	// And once more: a third revert undoes the second.
	third, err := s.Revert(waitCtx(t), rig.LastTurn)
	if err != nil || !third.Undo || third.Manifest != cp0.Manifest {
		t.Fatalf("the third revert: %+v, %v", third, err)
	}
	sameAsCheckpoint(t, e, dir, cp0.Manifest, "after the third revert")
	// The index the reverts left knows the files they wrote: the
	// shutdown's checkpoint is the pointer, not news.
	shutdown(t, s)
	if last := lastCheckpoint(t, e, s); last.Trigger == event.TriggerStop {
		t.Errorf("the shutdown after the reverts journaled a checkpoint %+v: the pointer was the workspace", last)
	}
}

// A revert is refused while a turn runs (*BusyError naming it); the
// refusal journals nothing and leaves the workspace as the turn made it.
func testRevertRefusedWhileTurnRuns(t *testing.T, e *env) {
	s := e.newSession(e.define())
	runTurn(t, s, "printf 'one\\n' > a.txt")
	m := newMarker()
	ti := submit(t, s, "printf 'two\\n' > a.txt; sleep "+m)
	waitSleepRunning(t, m)
	_, err := s.Revert(waitCtx(t), rig.LastTurn)
	busy := as[*rig.BusyError](t, err, "Revert while a turn runs")
	if busy.TurnID != ti.ID || busy.Index != ti.Index || busy.Checkpointing {
		t.Errorf("BusyError %+v, want the running turn %+v", busy, ti)
	}
	if err := s.Interrupt(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, s)
	if revs, _ := find[event.WorkspaceReverted](readJournal(t, e.raw, s.SessionID())); len(revs) != 0 {
		t.Errorf("a refused revert journaled %+v", revs)
	}
	if got := readWorkspaceFile(t, s.Workspace(), "a.txt"); got != "two\n" {
		t.Errorf("a.txt is %q after the refused revert, want the turn's \"two\\n\"", got)
	}
}

// A revert is refused, naming why, when the workspace before the turn is
// not known exactly: no checkpoint preceded the session's first turn; the
// profile takes none.
func testRevertRefusedWithoutCheckpoint(t *testing.T, e *env) {
	s := e.newSession(e.define())
	runTurn(t, s, "printf 'one\\n' > a.txt")
	_, err := s.Revert(waitCtx(t), 0)
	nc := as[*rig.NoCheckpointBeforeError](t, err, "Revert of the first turn")
	if nc.Index != 0 || nc.Reason == "" {
		t.Errorf("NoCheckpointBeforeError %+v", nc)
	}
	if got := readWorkspaceFile(t, s.Workspace(), "a.txt"); got != "one\n" {
		t.Errorf("a.txt is %q after the refused revert", got)
	}

	p := rig.DefaultProfile()
	p.Checkpoint = rig.CheckpointOff
	off := e.newSession(e.define(rig.WithProfile(p)))
	runTurn(t, off, "true")
	runTurn(t, off, "true")
	_, err = off.Revert(waitCtx(t), rig.LastTurn)
	nc = as[*rig.NoCheckpointBeforeError](t, err, "Revert with checkpoints off")
	if nc.Index != 1 {
		t.Errorf("NoCheckpointBeforeError %+v, want turn 1", nc)
	}

	stop := rig.DefaultProfile()
	stop.Checkpoint = rig.CheckpointStop
	st := e.newSession(e.define(rig.WithProfile(stop)))
	runTurn(t, st, "true")
	runTurn(t, st, "true")
	_, err = st.Revert(waitCtx(t), rig.LastTurn)
	as[*rig.NoCheckpointBeforeError](t, err, "Revert of a turn after one with no checkpoint")
}
