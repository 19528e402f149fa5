package rigtest

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/hub"
)

var rootOrderCases = []testCase{
	{"BusyRootIsNotWritten", testBusyRootIsNotWritten},
	{"SymlinkedRootRestores", testSymlinkedRootRestores},
	{"RootLossLatchedDuringAHangingRead", testRootLossDuringHangingRead},
}

// A root lease broken while the session's hand-over poll hangs in a store
// read (a dropped connection) is latched at once: the session faults with
// *rig.WorkspaceRootLeaseLostError while the read still hangs, and refuses
// a turn.
func testRootLossDuringHangingRead(t *testing.T, e *env) {
	root := canonical(t, t.TempDir())
	hanging, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e.fs.setGetHook(func(_ context.Context, key string) {
		if !strings.HasSuffix(key, "/handoff") {
			return
		}
		once.Do(func() { close(hanging) })
		<-release // past its own deadline: a read that does not come back
	})
	defer close(release)
	s := e.newSession(e.define(rig.WithProfile(exclusiveProfile(root)), rig.WithHandOffPoll(20*time.Millisecond)))
	c := collect(t, s.Subscribe(hub.Filter{}), nil)
	select {
	case <-hanging:
	case <-time.After(WaitTimeout):
		t.Fatal("the hand-over poll never read the store")
	}
	roots := e.fs.names("workspace-roots/")
	if len(roots) != 1 {
		t.Fatalf("root leases: %v", roots)
	}
	e.breakLease(t, roots[0])
	c.wait(t, "SessionFaulted", isType[event.SessionFaulted]) // the read still hangs
	_, err := s.Submit(waitCtx(t), "touch after-loss")
	as[*rig.WorkspaceRootLeaseLostError](t, err, "Submit after the root lease was broken")
	if exists(filepath.Join(root, "after-loss")) {
		t.Error("a turn ran in the root after its lease was lost")
	}
}

// checkpointedRoot is an exclusive profile on root whose workspace is
// checkpointed at every turn's end.
func checkpointedRoot(root string) rig.Profile {
	p := exclusiveProfile(root)
	p.Checkpoint = rig.CheckpointTurn
	return p
}

// busyRoot is session A, checkpointed in an exclusive root and stopped,
// and session B, which holds that root now; the root is then removed.
func busyRoot(t *testing.T, e *env) (root string, p rig.Profile, idA uuid.UUID, b *rig.Session) {
	t.Helper()
	root = filepath.Join(canonical(t, t.TempDir()), "root")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	p = checkpointedRoot(root)
	a := e.newSession(e.define(rig.WithProfile(p)))
	idA = a.SessionID()
	runTurn(t, a, `printf 'from A\n' > a.txt`)
	shutdown(t, a)
	b = e.newSession(e.define(rig.WithProfile(exclusiveProfile(root))))
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	return root, p, idA, b
}

// A restore takes the root's lease before it writes anything there:
// session A's root, removed while session B holds it, is refused as busy
// and stays as it was (A's checkpoint is not written into B's root), and
// nothing but RestoreErrored is journaled.
func testBusyRootIsNotWritten(t *testing.T, e *env) {
	root, p, idA, b := busyRoot(t, e)
	tipBefore := len(readJournal(t, e.raw, idA))
	err := failRestore(t, e.define(rig.WithProfile(p)), t.Context(), idA, rig.RestoreLeaseFailed)
	as[*rig.WorkspaceRootBusyError](t, err, "restore into a held root")
	if _, err := os.Lstat(root); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused restore wrote the root held by another session: %v", err)
	}
	for _, r := range readJournal(t, e.raw, idA)[tipBefore:] {
		if ev := r.Event; ev != nil {
			if _, isErr := ev.(event.RestoreErrored); !isErr {
				t.Errorf("the refused restore journaled %s", ev.Type())
			}
		}
	}
	shutdown(t, b)
	s := e.restore(e.define(rig.WithProfile(p)), idA)
	if w := s.Restored().Workspace; w == nil || !w.Materialized {
		t.Errorf("the restore once the root is free: workspace %+v; want it brought back", w)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "from A\n" {
		t.Errorf("a.txt after the restore: %q", b)
	}
}

// An exclusive root given as a symbolic link, checkpointed, restores:
// every step uses its canonical path (the link's target), where the
// workspace is compared, brought back when missing, and the turns run.
func testSymlinkedRootRestores(t *testing.T, e *env) {
	base := canonical(t, t.TempDir())
	target := filepath.Join(base, "target")
	link := filepath.Join(base, "link")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	p := checkpointedRoot(link)
	s := e.newSession(e.define(rig.WithProfile(p)))
	id := s.SessionID()
	runTurn(t, s, `printf 'kept\n' > k.txt`)
	shutdown(t, s)
	s2 := e.restore(e.define(rig.WithProfile(p)), id)
	if s2.Workspace() != target {
		t.Errorf("restored into %s, want the link's target %s", s2.Workspace(), target)
	}
	if w := s2.Restored().Workspace; w == nil || !w.Matches {
		t.Errorf("workspace %+v; want it to match the last checkpoint", w)
	}
	shutdown(t, s2)
	// The target gone, the link left: brought back into the target.
	if err := os.RemoveAll(target); err != nil {
		t.Fatal(err)
	}
	s3 := e.restore(e.define(rig.WithProfile(p)), id)
	if b, _ := os.ReadFile(filepath.Join(target, "k.txt")); string(b) != "kept\n" {
		t.Errorf("k.txt brought back into the link's target: %q", b)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v, %v", fi, err)
	}
	shutdown(t, s3)
}
