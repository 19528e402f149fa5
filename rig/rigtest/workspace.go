package rigtest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/checkpoint"
	"looprig/rig/event"
	"looprig/rig/storage"
	"looprig/rig/storage/storetest"
)

var workspaceCases = []testCase{
	{"TravelsWithTheSession", testWorkspaceTravels},
	{"CorruptBlobFailsRestore", testWorkspaceCorruptBlob},
	{"OverMaxIsSkippedVisibly", testWorkspaceOverMax},
	{"ShutdownTakesTheTurnsCheckpoint", testWorkspaceShutdownDuringTurn},
	{"TurnCheckpointsPairEachTurn", testTurnCheckpoints},
	{"HandOff", testHandOff},
	{"HandOffWithdrawn", testHandOffWithdrawn},
	{"HandOffTakerGone", testHandOffTakerGone},
	{"HandOffCommitted", testHandOffCommitted},
	{"HandOffLeaseFreedWithout", testHandOffLeaseFreedWithout},
	{"Sweep", testSweep},
	{"IndexSurvivesRestore", testIndexSurvivesRestore},
}

// makeFilesInput makes, in a turn: a text file, an executable, a nested
// directory, an empty directory, an inner symlink, a symlink leading out
// (never stored) and a 1 MiB binary.
const makeFilesInput = `printf 'hello\nworld\n' > notes.txt &&
printf '#!/bin/sh\necho run\n' > run.sh && chmod 755 run.sh &&
mkdir -p src/deep empty && printf 'package deep\n' > src/deep/deep.go &&
ln -s src/deep/deep.go link.go && ln -s /etc/passwd out &&
head -c 1048576 /dev/urandom > blob.bin`

// treeOf describes dir: each entry's kind, mode, content or link target.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link " + target
		case fi.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fi.Mode().Perm().String() + " " + string(storage.DigestOf(b).String())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A turn's files are checkpointed at its end (WorkspaceCheckpointed, the
// pointer, after TurnDone); a restore where the workspace is gone brings
// them back identical (content, mode, inner link; never the link leading
// out) before RestoreDone, and the next turn runs in them.
func testWorkspaceTravels(t *testing.T, e *env) {
	s := e.newSession(e.define())
	id, dir := s.SessionID(), s.Workspace()
	ti := runTurn(t, s, makeFilesInput)
	want := treeOf(t, dir)
	delete(want, "out")
	if len(want) != 8 {
		t.Fatalf("the turn made %d entries: %v", len(want), want)
	}
	recs := readJournal(t, e.raw, id)
	cps, cpRecs := find[event.WorkspaceCheckpointed](recs)
	_, doneRecs := find[event.TurnDone](recs)
	if len(cps) != 1 || len(doneRecs) != 1 || cpRecs[0].Seq < doneRecs[0].Seq {
		t.Fatalf("checkpoints %+v after %d TurnDone; want one after it:\n%s", cps, len(doneRecs), describe(recs))
	}
	cp := cps[0]
	if cp.TurnID != ti.ID || cp.Trigger != event.TriggerTurn || cp.Files != 4 || cp.Bytes < 1<<20 || cp.Skipped != 1 {
		t.Errorf("checkpoint %+v; want turn %s's, 4 files, over 1 MiB, the link leading out skipped", cp, ti.ID)
	}
	shutdown(t, s)
	if cps, _ := find[event.WorkspaceCheckpointed](readJournal(t, e.raw, id)); len(cps) != 1 {
		t.Errorf("shutdown of an unchanged workspace journaled another checkpoint: %+v", cps)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	s2 := e.restore(e.define(), id)
	if s2.Workspace() != dir {
		t.Fatalf("restored into %s, want %s", s2.Workspace(), dir)
	}
	got := treeOf(t, dir)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s restored as %q, want %q", k, got[k], v)
		}
	}
	if _, ok := got["out"]; ok || len(got) != len(want) {
		t.Errorf("restored %d entries (the link leading out: %q), want %d", len(got), got["out"], len(want))
	}
	ti2 := runTurn(t, s2, "cat notes.txt && ./run.sh")
	if out := turnOutput(readJournal(t, e.raw, id), ti2.ID); !strings.Contains(out, "world") || !strings.Contains(out, "run") {
		t.Errorf("the next turn's output %q", out)
	}
	// The materialized tree's index came with it: the first checkpoint
	// after the restore reads nothing, and changes nothing.
	cps, _ = find[event.WorkspaceCheckpointed](readJournal(t, e.raw, id))
	if last := cps[len(cps)-1]; last.Read != 0 || last.Manifest != cp.Manifest {
		t.Errorf("the first checkpoint after the materializing restore: %+v; want nothing read, the same manifest %s", last, cp.Manifest)
	}
}

// A checkpoint whose blob is damaged fails the restore as
// materialize_failed naming the file, and leaves no workspace behind.
func testWorkspaceCorruptBlob(t *testing.T, e *env) {
	dm, ok := e.raw.(storetest.BlobDamager)
	if !ok {
		t.Skip("the backend's store cannot damage a blob")
	}
	s := e.newSession(e.define())
	id, dir := s.SessionID(), s.Workspace()
	runTurn(t, s, `printf 'precious\n' > keep.txt`)
	shutdown(t, s)
	if !dm.DamageBlob(storage.DigestOf([]byte("precious\n")), []byte("tampered\n")) {
		t.Fatal("the file's blob is not in the store")
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	before := tip(t, e.raw, id)
	err := failRestore(t, e.define(), t.Context(), id, rig.RestoreMaterializeFailed)
	var me *checkpoint.MaterializeError
	if !errors.As(err, &me) || me.Path != "keep.txt" || !errors.Is(err, storage.ErrBlobDigest) {
		t.Errorf("restore error %v; want a *checkpoint.MaterializeError about keep.txt wrapping ErrBlobDigest", err)
	}
	checkFailedRestore(t, e, id, before, string(rig.RestoreMaterializeFailed))
	if exists(dir) {
		t.Errorf("a failed materialization left %s", dir)
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	for _, en := range entries {
		if strings.Contains(en.Name(), filepath.Base(dir)) && en.Name() != "."+filepath.Base(dir)+".index" { // the stat index is the session's
			t.Errorf("a failed materialization left %s", en.Name())
		}
	}
}

// A workspace over checkpoint_max is not checkpointed: the skip is
// journaled with the sizes and how to fix it, and the pointer stays.
func testWorkspaceOverMax(t *testing.T, e *env) {
	p := rig.DefaultProfile()
	p.CheckpointMax = 1000
	s := e.newSession(e.define(rig.WithProfile(p)))
	ti := runTurn(t, s, `head -c 5000 /dev/zero > big`)
	skips, _ := find[event.WorkspaceCheckpointSkipped](readJournal(t, e.raw, s.SessionID()))
	if len(skips) != 1 {
		t.Fatalf("%d skips journaled, want 1", len(skips))
	}
	sk := skips[0]
	if sk.TurnID != ti.ID || sk.Bytes != 5000 || sk.Limit != 1000 || !strings.Contains(sk.Reason, "checkpoint_max") {
		t.Errorf("skip %+v; want turn %s's, 5000 bytes over 1000, naming checkpoint_max", sk, ti.ID)
	}
	if cps, _ := find[event.WorkspaceCheckpointed](readJournal(t, e.raw, s.SessionID())); len(cps) != 0 {
		t.Errorf("a checkpoint over the limit was journaled: %+v", cps)
	}
}

// A shutdown that interrupts a turn takes one checkpoint, at stop, for
// that turn: the turn's end does not take its own (Shutdown would wait for
// it), and what the turn wrote is in the one taken.
func testWorkspaceShutdownDuringTurn(t *testing.T, e *env) {
	s := e.newSession(e.define())
	m := newMarker()
	ti := submit(t, s, `printf 'made\n' > made.txt && echo ready-`+m+` && sleep 30`)
	outputShows(t, e, s, ti.ID, "ready-"+m)
	shutdown(t, s)
	cps, _ := find[event.WorkspaceCheckpointed](readJournal(t, e.raw, s.SessionID()))
	if len(cps) != 1 || cps[0].Trigger != event.TriggerStop || cps[0].TurnID != ti.ID || cps[0].Files != 1 {
		t.Fatalf("checkpoints %+v; want one at stop, of turn %s, holding made.txt", cps, ti.ID)
	}
}

// Every turn has its checkpoint, so the pair around each turn says what
// it changed: the first from nothing, one that changed nothing with the
// same manifest on both sides; a turn that does not exist, and one whose
// checkpoint was skipped, are typed errors.
func testTurnCheckpoints(t *testing.T, e *env) {
	r := e.define()
	s := e.newSession(r)
	id := s.SessionID()
	t0 := runTurn(t, s, `printf 'a\n' > a.txt`)
	t1 := runTurn(t, s, `true`)
	t2 := runTurn(t, s, `printf 'b\n' > a.txt`)
	tc0, err := rig.FindTurnCheckpoints(t.Context(), e.raw, id, "0")
	if err != nil || tc0.TurnID != t0.ID || !tc0.Before.IsZero() || tc0.After.IsZero() {
		t.Fatalf("turn 0: %+v, %v; want from nothing to a checkpoint", tc0, err)
	}
	tc1, err := rig.FindTurnCheckpoints(t.Context(), e.raw, id, "#1")
	if err != nil || tc1.TurnID != t1.ID || tc1.Before != tc0.After || tc1.After != tc1.Before {
		t.Fatalf("turn 1: %+v, %v; want the same checkpoint on both sides (%s)", tc1, err, tc0.After)
	}
	last, err := rig.FindTurnCheckpoints(t.Context(), e.raw, id, "")
	if err != nil || last.TurnID != t2.ID || last.Before != tc1.After || last.After == last.Before {
		t.Fatalf("the last turn: %+v, %v", last, err)
	}
	changes, err := checkpoint.Diff(t.Context(), e.raw, last.Before, last.After, checkpoint.DiffOptions{})
	if err != nil || len(changes) != 1 || changes[0].Path != "a.txt" || !strings.Contains(changes[0].Patch, "-a\n+b\n") {
		t.Fatalf("what the last turn changed: %+v, %v", changes, err)
	}
	byID, err := rig.FindTurnCheckpoints(t.Context(), e.raw, id, t1.ID[:8])
	if err != nil || byID.TurnID != t1.ID {
		t.Errorf("turn by id prefix: %+v, %v", byID, err)
	}
	var nf *rig.TurnNotFoundError
	if _, err := rig.FindTurnCheckpoints(t.Context(), e.raw, id, "9"); !errors.As(err, &nf) {
		t.Errorf("turn 9: %v; want *rig.TurnNotFoundError", err)
	}
	shutdown(t, s)

	p := rig.DefaultProfile()
	p.CheckpointMax = 1
	s2 := e.newSession(e.define(rig.WithProfile(p)))
	runTurn(t, s2, `printf 'big\n' > big`)
	var nc *rig.TurnNotCheckpointedError
	if _, err := rig.FindTurnCheckpoints(t.Context(), e.raw, s2.SessionID(), ""); !errors.As(err, &nc) || !strings.Contains(nc.Reason, "skipped") {
		t.Errorf("a skipped checkpoint: %v; want *rig.TurnNotCheckpointedError saying it was skipped", err)
	}
}

// A request to hand the session over (RequestHandOff, for the holder's
// epoch) is answered by the holder: no new turn while it waits for the
// running one to end, then a handover checkpoint, HandedOff{to} and a
// shutdown; a restore (the taker) finds the workspace and the session.
// With Interrupt the running turn is interrupted instead. A request for
// another epoch is not acted on.
func testHandOff(t *testing.T, e *env) {
	r := e.define(rig.WithHandOffPoll(20 * time.Millisecond))
	s := e.newSession(r)
	id := s.SessionID()
	if err := rig.RequestHandOff(t.Context(), e.raw, id, rig.HandOffRequest{To: "1@stale", Epoch: s.Epoch() + 7}); err != nil {
		t.Fatal(err)
	}
	m := newMarker()
	ti := submit(t, s, `printf 'kept\n' > kept.txt && echo started-`+m+` && sleep 1 && echo finished-`+m)
	outputShows(t, e, s, ti.ID, "started-"+m)
	time.Sleep(100 * time.Millisecond)
	if st := s.Status(); st.Closed || st.Fault != nil {
		t.Fatalf("a request for another epoch was acted on: %+v", st)
	}
	if err := rig.RequestHandOff(t.Context(), e.raw, id, rig.HandOffRequest{To: "42@taker", Epoch: s.Epoch()}); err != nil {
		t.Fatal(err)
	}
	var ho *rig.HandingOffError
	eventually(t, "new turns refused while handing over", func() bool {
		_, err := s.Submit(t.Context(), "true")
		return errors.As(err, &ho) && ho.To == "42@taker"
	})
	select {
	case <-s.Done():
	case <-time.After(WaitTimeout):
		t.Fatal("the session was not handed over")
	}
	if err := s.Err(); err != nil {
		t.Fatalf("handed over with a fault: %v", err)
	}
	// Done closes when the shutdown begins; a second Shutdown returns once
	// it is over, the lease released.
	if err := s.Shutdown(t.Context()); err != nil {
		t.Fatalf("the handed-over session's shutdown: %v", err)
	}
	recs := readJournal(t, e.raw, id)
	var types []string
	for _, ty := range typesOf(recs) {
		if !strings.HasPrefix(ty, "command:") {
			types = append(types, ty)
		}
	}
	if n := len(types); n < 4 || types[n-1] != "SessionStopped" || types[n-2] != "HandedOff" || types[n-3] != "WorkspaceCheckpointed" {
		t.Fatalf("the journal ends %v, want …, WorkspaceCheckpointed, HandedOff, SessionStopped", types)
	}
	if out := turnOutput(recs, ti.ID); !strings.Contains(out, "finished-"+m) {
		t.Errorf("the running turn did not finish before the handover: %q", out)
	}
	hos, _ := find[event.HandedOff](recs)
	cps, _ := find[event.WorkspaceCheckpointed](recs)
	if len(hos) != 1 || hos[0].To != "42@taker" || cps[len(cps)-1].Trigger != event.TriggerHandoff {
		t.Errorf("handed off %+v, last checkpoint %+v", hos, cps[len(cps)-1])
	}
	if err := os.RemoveAll(s.Workspace()); err != nil {
		t.Fatal(err)
	}
	rig.WithdrawHandOff(t.Context(), e.raw, id)
	s2 := e.restore(e.define(rig.WithHandOffPoll(20*time.Millisecond)), id)
	if b, err := os.ReadFile(filepath.Join(s2.Workspace(), "kept.txt")); err != nil || string(b) != "kept\n" {
		t.Fatalf("the taker's workspace: %q, %v", b, err)
	}

	// With Interrupt, a turn that would run long is interrupted.
	ti2 := submit(t, s2, `echo long-`+m+` && sleep 30`)
	outputShows(t, e, s2, ti2.ID, "long-"+m)
	if err := rig.RequestHandOff(t.Context(), e.raw, id, rig.HandOffRequest{To: "43@taker", Interrupt: true, Epoch: s2.Epoch()}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s2.Done():
	case <-time.After(WaitTimeout):
		t.Fatal("the session was not handed over with its turn interrupted")
	}
	ints, _ := find[event.TurnInterrupted](readJournal(t, e.raw, id))
	if len(ints) != 1 || ints[0].TurnID != ti2.ID || ints[0].Reason != event.ReasonHandoff {
		t.Errorf("interruptions %+v, want turn %s's for the hand-over", ints, ti2.ID)
	}
}

// blobCount counts the store's blobs.
func blobCount(t *testing.T, store storage.Store) int {
	t.Helper()
	n := 0
	if err := store.ListBlobs(t.Context(), func(storage.BlobInfo) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// A sweep deletes the blobs no checkpoint on record references (a scrap
// a crashed checkpoint left, a deleted session's packs) once they are
// older than the grace, and keeps every blob of every recorded
// checkpoint; a manifest it cannot read stops it before it deletes
// anything.
func testSweep(t *testing.T, e *env) {
	r := e.define()
	keep := e.newSession(r)
	runTurn(t, keep, `printf 'shared\n' > shared.txt && printf 'v1\n' > own.txt`)
	runTurn(t, keep, `printf 'v2\n' > own.txt`)
	gone := e.newSession(r)
	runTurn(t, gone, `printf 'shared\n' > shared.txt && printf 'only in gone\n' > only.txt`)
	shutdown(t, gone)
	scrap, err := e.raw.PutBlob(t.Context(), strings.NewReader("left by a crashed checkpoint"))
	if err != nil {
		t.Fatal(err)
	}

	res, err := rig.SweepBlobs(t.Context(), e.raw, rig.SweepOptions{Grace: time.Hour})
	if err != nil || res.Deleted != 0 || res.Recent != 1 {
		t.Fatalf("sweep with a grace: %+v, %v; want the recent scrap spared, nothing deleted", res, err)
	}
	res, err = rig.SweepBlobs(t.Context(), e.raw, rig.SweepOptions{})
	if err != nil || res.Deleted != 1 {
		t.Fatalf("sweep: %+v, %v; want the scrap deleted", res, err)
	}
	if _, err := e.raw.StatBlob(t.Context(), scrap.Digest); err == nil {
		t.Error("the scrap is still there")
	}
	d, err := rig.DeleteSession(t.Context(), e.raw, e.ws, gone.SessionID())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Blobs) < 3 {
		t.Fatalf("the deleted session referenced %d blobs, want its checkpoint's snapshot, trees and files", len(d.Blobs))
	}
	// rm frees them at once, but for what another session references too.
	freed, err := rig.FreeSessionBlobs(t.Context(), e.raw, []rig.DeletedSession{d})
	if err != nil || len(freed) != 1 || freed[0].Deleted == 0 || freed[0].Renewed != 0 {
		t.Fatalf("FreeSessionBlobs: %+v, %v", freed, err)
	}
	left := 0
	for _, b := range d.Blobs {
		if _, err := e.raw.StatBlob(t.Context(), b); err == nil {
			left++
		}
	}
	if left != freed[0].Shared {
		t.Errorf("%d blobs of the deleted session left, %d shared with another", left, freed[0].Shared)
	}
	if res, err = rig.SweepBlobs(t.Context(), e.raw, rig.SweepOptions{}); err != nil || res.Deleted != 0 {
		t.Errorf("sweep after rm freed the blobs: %+v, %v; want nothing left to delete", res, err)
	}
	for _, turn := range []string{"0", "1"} {
		tc, err := rig.FindTurnCheckpoints(t.Context(), e.raw, keep.SessionID(), turn)
		if err == nil {
			_, err = checkpoint.Diff(t.Context(), e.raw, tc.Before, tc.After, checkpoint.DiffOptions{})
		}
		if err != nil {
			t.Errorf("turn %s of the kept session after the sweeps: %v", turn, err)
		}
	}

	// A manifest that cannot be read: nothing is deleted.
	tc, err := rig.FindTurnCheckpoints(t.Context(), e.raw, keep.SessionID(), "0")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.raw.DeleteBlob(t.Context(), tc.After); err != nil {
		t.Fatal(err)
	}
	if _, err := e.raw.PutBlob(t.Context(), strings.NewReader("another scrap")); err != nil {
		t.Fatal(err)
	}
	n := blobCount(t, e.raw)
	if res, err := rig.SweepBlobs(t.Context(), e.raw, rig.SweepOptions{}); err == nil || res.Deleted != 0 || blobCount(t, e.raw) != n {
		t.Errorf("sweep with a manifest missing: %+v, %v; want an error and nothing deleted", res, err)
	}
}

// The checkpoints' stat index outlives the process that holds the
// session: after a restore on the same machine, a checkpoint reads only
// what changed. It is a 0600 file beside the workspaces, never in one,
// and goes with the session.
func testIndexSurvivesRestore(t *testing.T, e *env) {
	s := e.newSession(e.define())
	id := s.SessionID()
	runTurn(t, s, `head -c 1048576 /dev/urandom > big.bin && touch -d '2020-01-01' big.bin`)
	shutdown(t, s)
	cps, _ := find[event.WorkspaceCheckpointed](readJournal(t, e.raw, id))
	if len(cps) != 1 || cps[0].Read != 1<<20 {
		t.Fatalf("the first checkpoint: %+v; want 1 MiB read", cps)
	}
	path := filepath.Join(e.ws, "."+id.String()+".index")
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the index file %s: %v, %v", path, fi, err)
	}
	s2 := e.restore(e.define(), id)
	runTurn(t, s2, `true`)
	cps, _ = find[event.WorkspaceCheckpointed](readJournal(t, e.raw, id))
	if last := cps[len(cps)-1]; last.Read != 0 || last.Bytes != 1<<20 {
		t.Errorf("the first checkpoint after the restore: %+v; want nothing read", last)
	}
	shutdown(t, s2)
	if _, err := rig.DeleteSession(t.Context(), e.raw, e.ws, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the index outlived its session: %v", err)
	}
}
