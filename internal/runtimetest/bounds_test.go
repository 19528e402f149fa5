package runtimetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/fsstore"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// heapSampler records the peak live heap while it runs.
type heapSampler struct {
	peak atomic.Uint64
	stop chan struct{}
	wg   sync.WaitGroup
}

func sampleHeap(every time.Duration) *heapSampler {
	h := &heapSampler{stop: make(chan struct{})}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > h.peak.Load() {
				h.peak.Store(ms.HeapAlloc)
			}
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
		}
	}()
	return h
}

func (h *heapSampler) done() uint64 {
	close(h.stop)
	h.wg.Wait()
	return h.peak.Load()
}

// A turn printing 200 MB journals at most the per-turn cap (here 1 MiB)
// plus record overhead, reports the rest as elided, and keeps the heap
// bounded while a subscriber watches (and falls behind).
func TestHugeOutputIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("pipes 200 MB through a turn")
	}
	const (
		total   = 200 << 20
		turnCap = 1 << 20
	)
	dir := filepath.Join(t.TempDir(), "store")
	st := open(t, dir)
	r, err := rig.Define(rig.WithStore(st), rig.WithWorkspaces(st.WorkspacesDir()), rig.WithTurnJournalCap(turnCap))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := r.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(ctx)
	logPath := filepath.Join(dir, "ledgers", "sessions", s.SessionID().String()+".log")
	before := fileSize(t, logPath)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc

	sub := s.Subscribe(hub.Filter{AllLoops: true}) // a reader that drains slowly
	var elided int64
	var end event.Event
	heap := sampleHeap(10 * time.Millisecond)
	start := time.Now()
	if _, err := s.Submit(ctx, "yes 'a line of turn output, 0123456789abcdef' | head -c 209715200"); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for end == nil {
		batch, ok, err := sub.Next(wctx, 16)
		for _, env := range batch {
			switch ev := env.Event.(type) {
			case event.TurnOutput:
				elided += ev.Elided
			case event.TurnDone, event.TurnFailed, event.TurnInterrupted:
				end = ev
			}
		}
		if err != nil {
			t.Fatalf("waiting for the turn: %v", err)
		}
		if !ok { // fell behind: the journal has the rest
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := s.WaitIdle(wctx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	peak := heap.done()
	grew := fileSize(t, logPath) - before

	// What the journal says.
	var journaled, elidedRec int64
	var done bool
	for _, rec := range readAll(t, st, s.SessionID()) {
		switch ev := rec.Event.(type) {
		case event.TurnOutput:
			journaled += int64(len(ev.Text))
			elidedRec += ev.Elided
		case event.TurnDone:
			done = ev.ExitCode == 0
		}
	}
	t.Logf("200 MB turn in %v: journal grew %d bytes for %d output bytes journaled, %d elided; peak heap %d MiB over a base of %d MiB",
		took.Round(time.Millisecond), grew, journaled, elidedRec, peak>>20, base>>20)
	if !done {
		t.Fatalf("the turn did not end with exit 0")
	}
	if journaled != turnCap || journaled+elidedRec != total {
		t.Errorf("journaled %d + elided %d bytes, want %d + %d", journaled, elidedRec, int64(turnCap), int64(total-turnCap))
	}
	if limit := int64(turnCap + turnCap/8 + 64<<10); grew > limit {
		t.Errorf("the journal grew %d bytes, over the cap %d plus overhead (%d)", grew, turnCap, limit)
	}
	if peak > base+64<<20 {
		t.Errorf("peak heap %d MiB over a base of %d MiB while 200 MB went through", peak>>20, base>>20)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors: %v", err)
	}
	return len(entries)
}

// Thousands of sessions: listing them holds no descriptor per session, and
// restoring and shutting down many in a row keeps the descriptor count
// bounded (the store keeps at most a fixed number of ledgers open).
func TestThousandsOfSessionsBoundedDescriptors(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 3000 sessions")
	}
	const n = 3000
	dir := filepath.Join(t.TempDir(), "store")
	st, err := fsstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := rig.Define(rig.WithStore(st), rig.WithWorkspaces(st.WorkspacesDir()), rig.WithProfile(rig.DemoProfile()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// One real session, cloned n-1 times file by file: creating 3000
	// through NewSession takes half a minute, and what is measured here is
	// listing and restoring, not creating.
	tmpl, err := r.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tmpl.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close()
	start := time.Now()
	ids := []uuid.UUID{tmpl.SessionID()}
	for len(ids) < n {
		id := uuid.New()
		cloneSession(t, dir, tmpl.SessionID(), id)
		ids = append(ids, id)
	}
	created := time.Since(start)

	// A fresh store handle, as `looprig ls` would have.
	st, err = fsstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runtime.GC()
	base := openFDs(t)
	start = time.Now()
	infos, err := rig.ListSessions(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	listed := time.Since(start)
	if len(infos) != n {
		t.Fatalf("listed %d sessions, want %d", len(infos), n)
	}
	for _, in := range infos {
		if in.State != rig.StateIdle {
			t.Fatalf("session %s is %s (%s)", in.ID, in.State, in.Reason)
		}
	}
	if got := openFDs(t); got > base+8 {
		t.Errorf("listing %d sessions left %d descriptors open, %d before", n, got, base)
	}

	r, err = rig.Define(rig.WithStore(st), rig.WithWorkspaces(st.WorkspacesDir()), rig.WithProfile(rig.DemoProfile()))
	if err != nil {
		t.Fatal(err)
	}
	const restores = 300
	peak := 0
	start = time.Now()
	for _, id := range ids[:restores] {
		s, err := r.RestoreSession(ctx, id)
		if err != nil {
			t.Fatalf("restore %s: %v", id, err)
		}
		if err := s.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		peak = max(peak, openFDs(t))
	}
	restored := time.Since(start)
	// At most the store's ledger cache (64) plus a few stay open.
	if peak > base+64+16 {
		t.Errorf("restoring and shutting down %d sessions in a row peaked at %d descriptors, %d at the start", restores, peak, base)
	}
	if _, err := rig.ListSessions(ctx, st); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d sessions cloned in %v, listed in %v; %d restored and shut down in %v; descriptors %d at the start, peak %d, %d at the end",
		n, created.Round(time.Millisecond), listed.Round(time.Millisecond), restores, restored.Round(time.Millisecond), base, peak, openFDs(t))
}

func readAll(t *testing.T, st storage.Store, id uuid.UUID) []journal.Record {
	t.Helper()
	rp, err := journal.NewReplayer(context.Background(), st, storage.SessionName(id.String()), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rp.Close()
	var out []journal.Record
	for rp.Next() {
		out = append(out, rp.Record())
	}
	if err := rp.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// cloneSession copies session from's files to session to: its journal
// (which does not name the session), its lease files, its workspace and its
// catalog entry (which does, so it is re-encoded in the KV file format,
// "lrkv1 <rev> <len> <crc32c hex>\n<value>").
func cloneSession(t *testing.T, dir string, from, to uuid.UUID) {
	t.Helper()
	f, id := from.String(), to.String()
	for _, p := range []string{"ledgers/sessions/%s.log", "leases/sessions/%s.lock", "leases/sessions/%s.epoch"} {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf(p, f)))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf(p, id)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "workspaces", id), 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "kv", "sessions", f, "catalog.kv"))
	if err != nil {
		t.Fatal(err)
	}
	_, value, _ := bytes.Cut(b, []byte("\n"))
	var c rig.CatalogEntry
	if err := json.Unmarshal(value, &c); err != nil {
		t.Fatal(err)
	}
	c.ID = id
	value, _ = json.Marshal(c)
	kv := fmt.Appendf(nil, "lrkv1 1 %d %08x\n%s", len(value), crc32.Checksum(value, crc32.MakeTable(crc32.Castagnoli)), value)
	if err := os.MkdirAll(filepath.Join(dir, "kv", "sessions", id), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kv", "sessions", id, "catalog.kv"), kv, 0o600); err != nil {
		t.Fatal(err)
	}
}
