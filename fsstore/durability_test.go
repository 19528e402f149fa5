package fsstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"looprig/fsstore/internal/seam"
)

// syncRecorder records, in order, the seams a store passes for the files
// under its directory (each sync among them: package seam), and holds the
// sync of one path until the test lets it go.
type syncRecorder struct {
	dir string

	mu     sync.Mutex
	events []string // "point path" (path relative to dir)
	hold   string   // a sync of this path waits for release
	held   chan struct{}
	freed  chan struct{}
}

func recordSyncs(t *testing.T, dir string) *syncRecorder {
	t.Helper()
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	r := &syncRecorder{dir: dir}
	restore := seam.Set(func(p seam.Point, path string) error {
		if d, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
			path = filepath.Join(d, filepath.Base(path))
		}
		rel, err := filepath.Rel(r.dir, path)
		if err != nil || strings.HasPrefix(rel, "..") {
			return nil // another test's file
		}
		r.mu.Lock()
		r.events = append(r.events, string(p)+" "+filepath.ToSlash(rel))
		hold := (p == seam.Fsync || p == seam.DataSync) && rel == r.hold
		held, freed := r.held, r.freed
		r.mu.Unlock()
		if hold {
			held <- struct{}{}
			<-freed
		}
		return nil
	})
	t.Cleanup(restore)
	return r
}

// holdSync makes the next syncs of rel wait until the returned function
// is called; held receives once for each sync that waits.
func (r *syncRecorder) holdSync(rel string) (held <-chan struct{}, release func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hold, r.held, r.freed = rel, make(chan struct{}, 16), make(chan struct{})
	var once sync.Once
	freed := r.freed
	return r.held, func() { once.Do(func() { close(freed) }) }
}

func (r *syncRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// acknowledgedOnlyAfter runs op (a store call that must be durable when it
// returns) with the sync of rel held: op must reach that sync, and must not
// return while it is held; it must return once it is let go.
func acknowledgedOnlyAfter(t *testing.T, r *syncRecorder, rel, what string, op func() error) {
	t.Helper()
	held, release := r.holdSync(rel)
	defer release()
	done := make(chan error, 1)
	go func() { done <- op() }()
	select {
	case <-held:
	case err := <-done:
		t.Fatalf("%s returned (%v) without syncing %s: %v", what, err, rel, r.take())
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not reach the sync of %s", what, rel)
	}
	select {
	case err := <-done:
		t.Fatalf("%s returned (%v) while the sync of %s had not returned", what, err, rel)
	case <-time.After(200 * time.Millisecond):
	}
	release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not return once the sync was let go", what)
	}
}

// inSequence reports whether, in events, each of want occurs after the
// one before it.
func inSequence(events []string, want ...string) bool {
	i := 0
	for _, e := range events {
		if i < len(want) && e == want[i] {
			i++
		}
	}
	return i == len(want)
}

// An append is acknowledged only once the fdatasync of its ledger has
// returned, after its write (and, for a new ledger, after the fsync of the
// directory holding the new file): with that sync held, Append does not
// return. Removing the sync (the counter of syncs may still count), or
// acknowledging the appenders before it, fails this test. Without it no
// test failed when the sync was gone: the page cache serves every read.
func TestLedgerAppendAcknowledgedAfterItsSync(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	r := recordSyncs(t, dir)
	ctx := context.Background()
	const name = "sessions/durable"
	log := "ledgers/sessions/durable.log"

	for i := range 3 {
		what := fmt.Sprintf("append %d", i+1)
		acknowledgedOnlyAfter(t, r, log, what, func() error {
			return st.Append(ctx, name, uint64(i), []byte(what))
		})
		events := r.take()
		want := []string{"ledger.write " + log, "ledger.written " + log, "sync.datasync " + log, "ledger.synced " + log}
		if !inSequence(events, want...) {
			t.Errorf("%s passed %v, want in order %v", what, events, want)
		}
		// A new file: its directory entry is synced before the ack.
		if i == 0 && !inSequence(events, "sync.fsync ledgers/sessions", "sync.datasync "+log) {
			t.Errorf("%s passed %v: no fsync of the new ledger's directory before its data sync", what, events)
		}
	}

	// Appenders that queue behind a leader are acknowledged by the commit
	// of their group, once its sync returned: with the group's sync held,
	// none of them returns either.
	held, release := r.holdSync(log)
	defer release()
	first := make(chan error, 1)
	go func() { first <- st.Append(ctx, name, 3, []byte("leader")) }()
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the leader's append did not reach its sync")
	}
	group := make(chan error, 3)
	for i := range 3 {
		go func() { group <- st.Append(ctx, name, uint64(4+i), []byte("follower")) }()
	}
	time.Sleep(200 * time.Millisecond) // they queue behind the leader
	held2, release2 := r.holdSync(log)
	defer release2()
	release()
	if err := <-first; err != nil {
		t.Fatalf("the leader's append: %v", err)
	}
	select {
	case <-held2:
	case err := <-group:
		t.Fatalf("an append of the group returned (%v) before its group's sync", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the group did not reach its sync")
	}
	select {
	case err := <-group:
		t.Fatalf("an append of the group returned (%v) while its group's sync had not returned", err)
	case <-time.After(200 * time.Millisecond):
	}
	release2()
	for range 3 {
		select {
		case err := <-group:
			if err != nil {
				t.Errorf("an append of the group: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the group did not return once its sync was let go")
		}
	}
	if tip, err := st.Tip(ctx, name); err != nil || tip != 7 {
		t.Fatalf("tip %d, %v; want 7", tip, err)
	}
}

// A lease is granted only once its new epoch is durable: the epoch goes
// to a temp file that is fsynced before it is renamed over the epoch file,
// and the directory is fsynced after the rename, before Acquire returns.
// Removing the temp file's fsync (a crash could then leave an epoch file
// that is empty, or names the old epoch: a grant whose epoch repeats)
// fails this test, as does a grant before the directory's fsync.
func TestEpochDurableBeforeTheGrant(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	r := recordSyncs(t, dir)
	ctx := context.Background()
	const name = "sessions/epochs"
	epoch := "leases/sessions/epochs.epoch"

	for i := range 2 {
		what := fmt.Sprintf("grant %d", i+1)
		acknowledgedOnlyAfter(t, r, "leases/sessions", what, func() error {
			l, err := st.Acquire(ctx, name)
			if err == nil {
				err = l.Release(ctx)
			}
			return err
		})
		events := r.take()
		tmp := -1
		for j, e := range events {
			if strings.HasPrefix(e, "sync.fsync leases/sessions/.epochs.epoch.tmp-") {
				tmp = j
			}
		}
		if tmp < 0 {
			t.Fatalf("%s: no fsync of the epoch's temp file: %v", what, events)
		}
		if !inSequence(events[tmp:], "epoch.temp-written "+epoch, "epoch.renamed "+epoch, "sync.fsync leases/sessions") {
			t.Errorf("%s passed %v, want the temp file's fsync, its rename, then the directory's fsync", what, events)
		}
	}
}
