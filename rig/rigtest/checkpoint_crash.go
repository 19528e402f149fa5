package rigtest

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/checkpoint"
	"looprig/rig/event"
	"looprig/rig/storage"
)

// checkpointCrashRole is the helper role that SIGKILLs a holder in a step
// of a checkpoint: "crash-checkpoint:" and the rig.CheckpointStep.
const checkpointCrashRole = "crash-checkpoint:"

var checkpointCrashCases = []testCase{
	{"AfterStored", func(t *testing.T, e *env) { testCheckpointCrash(t, e, rig.StepStored) }},
	{"AfterJournaled", func(t *testing.T, e *env) { testCheckpointCrash(t, e, rig.StepJournaled) }},
	{"AfterIndexed", func(t *testing.T, e *env) { testCheckpointCrash(t, e, rig.StepIndexed) }},
}

// The turns of the checkpoint crash tests: the first makes files (one
// large enough for chunks of its own), the second changes some of them.
const (
	crashTurn1 = `printf 'one\n' > a.txt && printf 'keep\n' > b.txt && head -c 1500000 /dev/urandom > big.bin && touch -d '2020-01-01' a.txt b.txt big.bin`
	crashTurn2 = `printf 'two\n' > a.txt && printf 'new\n' > c.txt`
)

// A holder SIGKILLed in each window of a checkpoint (its blobs stored and
// nothing journaled; journaled and the index on disk the one before;
// everything done) leaves a session that restores, whose next
// checkpoints, after a sweep with the grace over (a clock an hour ahead),
// name only blobs that exist: every checkpoint the journal records can be
// read whole, every turn's diff works, and the last one materializes to
// the workspace.
func testCheckpointCrash(t *testing.T, e *env, step rig.CheckpointStep) {
	if !e.b.CrossProcess {
		t.Skipf("backend %s cannot be opened by another process", e.b.Name)
	}
	hp := spawnHelper(t, e, checkpointCrashRole+string(step), newMarker())
	var idText string
	if _, err := fmt.Sscan(hp.line, &idText); err != nil {
		t.Fatalf("helper said %q: %v", hp.line, err)
	}
	id := uuid.MustParse(idText)
	if err := hp.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	hp.wait()

	later := func() time.Time { return time.Now().Add(time.Hour) }
	sweep := func() {
		t.Helper()
		if _, err := rig.SweepBlobs(t.Context(), e.raw, rig.SweepOptions{Now: later, Workspaces: e.ws}); err != nil {
			t.Fatalf("sweep: %v", err)
		}
	}
	sweep()
	s := e.restore(e.define(), id)
	if w := s.Restored().Workspace; w == nil || w.Err != "" || !(w.Matches || w.Kept) {
		t.Errorf("after a kill %s: the workspace found %+v; want it to match the last checkpoint or keep this machine's turn", step, w)
	}
	runTurn(t, s, `printf 'three\n' > d.txt`)
	runTurn(t, s, `true`)
	sweep()
	cps, _ := find[event.WorkspaceCheckpointed](readJournal(t, e.raw, id))
	for _, cp := range cps {
		d, _ := storage.ParseDigest(cp.Manifest)
		refs, err := checkpoint.References(t.Context(), e.raw, d)
		if err != nil {
			t.Errorf("checkpoint %s (%s): %v", cp.Manifest[:12], cp.Trigger, err)
			continue
		}
		for _, b := range refs {
			if _, err := e.raw.StatBlob(t.Context(), b); err != nil {
				t.Errorf("checkpoint %s (%s) names blob %s: %v", cp.Manifest[:12], cp.Trigger, b, err)
			}
		}
		if _, err := checkpoint.Load(t.Context(), e.raw, d); err != nil {
			t.Errorf("checkpoint %s (%s) cannot be read: %v", cp.Manifest[:12], cp.Trigger, err)
		}
	}
	for turn := 0; turn < 4; turn++ {
		tc, err := rig.FindTurnCheckpoints(t.Context(), e.raw, id, fmt.Sprint(turn))
		if err != nil {
			continue // a turn whose checkpoint the kill cut off
		}
		if _, err := checkpoint.Diff(t.Context(), e.raw, tc.Before, tc.After, checkpoint.DiffOptions{}); err != nil {
			t.Errorf("diff of turn %d: %v", turn, err)
		}
	}
	last, _ := storage.ParseDigest(cps[len(cps)-1].Manifest)
	out := filepath.Join(t.TempDir(), "out")
	if err := checkpoint.Materialize(t.Context(), e.raw, last, out, nil); err != nil {
		t.Fatalf("materialize the last checkpoint: %v", err)
	}
	if got, want := treeOf(t, out), treeOf(t, s.Workspace()); !sameTree(got, want) {
		t.Errorf("the last checkpoint:\n%v\nthe workspace:\n%v", got, want)
	}
}

// runCheckpointCrashHelper is the helper process of testCheckpointCrash:
// it makes a session, runs crashTurn1 to its checkpoint, then crashTurn2,
// and when that turn's checkpoint reaches step it reports the session's
// id and waits to be killed.
func runCheckpointCrashHelper(t *testing.T, b Backend, step rig.CheckpointStep) {
	store := b.Reopen(t, os.Getenv(helperStoreEnv))
	armed := make(chan struct{})
	hook := func(id string, at rig.CheckpointStep) {
		select {
		case <-armed:
		default:
			return
		}
		if at != step {
			return
		}
		fmt.Printf("%s %s\n", helperPrefix, id)
		_, _ = io.Copy(io.Discard, os.Stdin) // until killed
		os.Exit(0)
	}
	r := defineOn(t, store, os.Getenv(helperWSEnv), rig.WithCheckpointHook(hook))
	s, err := r.NewSession(t.Context())
	if err != nil {
		t.Fatalf("helper NewSession: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), WaitTimeout)
	defer cancel()
	if _, err := s.Submit(ctx, crashTurn1); err != nil {
		t.Fatalf("helper Submit: %v", err)
	}
	if err := s.WaitIdle(ctx); err != nil {
		t.Fatalf("helper WaitIdle: %v", err)
	}
	close(armed)
	if _, err := s.Submit(ctx, crashTurn2); err != nil {
		t.Fatalf("helper Submit: %v", err)
	}
	<-ctx.Done()
	t.Fatalf("the checkpoint never reached %s", step)
}
