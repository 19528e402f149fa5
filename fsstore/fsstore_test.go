package fsstore_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"looprig/fsstore"
	"looprig/rig/storage"
	"looprig/rig/storage/storetest"
)

const testWatchdog = 10 * time.Millisecond

func openStore(t *testing.T, dir string) *fsstore.Store {
	t.Helper()
	s, err := fsstore.Open(dir, fsstore.WithWatchdog(testWatchdog))
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storage.Store { return damageable{openStore(t, t.TempDir())} })
}

// damageable is a Store that can damage its blobs (storetest.BlobDamager),
// as a disk error would: it overwrites the file under the digest's name.
type damageable struct{ *fsstore.Store }

func (s damageable) DamageBlob(d storage.Digest, data []byte) bool {
	path := blobPath(s.Dir(), d)
	if _, err := os.Lstat(path); err != nil {
		return false
	}
	return os.WriteFile(path, data, 0o600) == nil
}

func TestOpenCreatesLayoutWithPrivateModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "store")
	s := openStore(t, dir)
	ctx := context.Background()
	l, err := s.Acquire(ctx, "sessions/a")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "sessions/a", 0, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "sessions/a/catalog", []byte("{}"), storage.MustNotExist); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "FORMAT"))
	if err != nil || strings.TrimSpace(string(b)) != fsstore.FormatName {
		t.Fatalf("FORMAT = %q, %v", b, err)
	}
	seen := checkPrivateModes(t, dir)
	for _, p := range []string{"leases/sessions/a.lock", "leases/sessions/a.epoch", "ledgers/sessions/a.log", "kv/sessions/a/catalog.kv"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("layout: %v", err)
		}
	}
	if seen < 10 {
		t.Errorf("walked only %d entries", seen)
	}
}

func TestOpenRefusesUnknownFormat(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "FORMAT"), []byte("looprig-fsstore v9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := fsstore.Open(dir)
	var fe *fsstore.FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("Open = %v, want *FormatError", err)
	}
	if fe.Found != "looprig-fsstore v9" || fe.Expected != fsstore.FormatName {
		t.Fatalf("FormatError = %+v", fe)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "FORMAT")); string(b) != "looprig-fsstore v9\n" {
		t.Fatalf("FORMAT rewritten to %q", b)
	}
}

func TestOpenRefusesForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := fsstore.Open(dir)
	var fe *fsstore.FormatError
	if !errors.As(err, &fe) || fe.Found != "" {
		t.Fatalf("Open = %v, want *FormatError with no found format", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "FORMAT")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("FORMAT written into a foreign directory: %v", err)
	}
}

func TestOpenRefusesWritableByOthers(t *testing.T) {
	for _, mode := range []fs.FileMode{0o770, 0o707, 0o777} {
		dir := t.TempDir()
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		_, err := fsstore.Open(dir)
		var ue *fsstore.UnsafeStoreError
		if !errors.As(err, &ue) || !strings.Contains(ue.Fix, "chmod 700") {
			t.Errorf("mode %04o: Open = %v, want *UnsafeStoreError with a chmod fix", mode, err)
		}
	}
}

func TestOpenRefusesAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := fsstore.Open(path)
	var ue *fsstore.UnsafeStoreError
	if !errors.As(err, &ue) {
		t.Fatalf("Open(file) = %v, want *UnsafeStoreError", err)
	}
}

func TestReopenKeepsData(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openStore(t, dir)
	for i := 0; i < 3; i++ {
		if err := s.Append(ctx, "sessions/r", uint64(i), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	l, err := s.Acquire(ctx, "sessions/r")
	if err != nil {
		t.Fatal(err)
	}
	l.Release(ctx)
	s.Close()
	s2 := openStore(t, dir)
	if tip, err := s2.Tip(ctx, "sessions/r"); err != nil || tip != 3 {
		t.Fatalf("Tip after reopen = %d, %v", tip, err)
	}
	l2, err := s2.Acquire(ctx, "sessions/r")
	if err != nil || l2.Epoch() != 2 {
		t.Fatalf("Acquire after reopen: epoch %v, %v; want 2", l2, err)
	}
}

func TestKVCorruptEntryIsTyped(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	ctx := context.Background()
	if _, err := s.Put(ctx, "sessions/c/catalog", []byte(`{"title":"x"}`), storage.MustNotExist); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "kv", "sessions", "c", "catalog.kv")
	b, _ := os.ReadFile(path)
	b[len(b)-2] ^= 0xff
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := s.Get(ctx, "sessions/c/catalog")
	var ce *storage.CorruptError
	if !errors.As(err, &ce) || ce.Path != path {
		t.Fatalf("Get = %v, want *CorruptError for %s", err, path)
	}
	if _, err := s.Put(ctx, "sessions/c/catalog", []byte("{}"), storage.AnyRevision); !errors.As(err, &ce) {
		t.Fatalf("Put over a corrupt entry = %v, want *CorruptError (never overwrite what we cannot read)", err)
	}
}

func TestCrossProcessHeldThenKilled(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	ctx := context.Background()
	// Two earlier grants so the helper's epoch is not trivially 1.
	for i := 0; i < 2; i++ {
		l, err := s.Acquire(ctx, "sessions/held")
		if err != nil {
			t.Fatal(err)
		}
		l.Release(ctx)
	}
	cmd, _, epoch, pid := startHolder(t, dir)
	if epoch != 3 {
		t.Fatalf("helper epoch = %d, want 3", epoch)
	}
	_, err := s.Acquire(ctx, "sessions/held")
	var held *storage.LeaseHeldError
	if !errors.As(err, &held) {
		t.Fatalf("Acquire while helper holds = %v, want *LeaseHeldError", err)
	}
	if held.HolderEpoch != epoch || held.Holder.PID != pid || held.Name != "sessions/held" {
		t.Fatalf("LeaseHeldError = %+v, want epoch %d pid %d", held, epoch, pid)
	}
	if st, err := s.Probe(ctx, "sessions/held"); err != nil || !st.Held || st.Epoch != epoch || st.Holder.PID != pid {
		t.Fatalf("Probe while held = %+v, %v", st, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	// The kernel dropped the dead holder's flock: no timeout to wait out.
	l, err := s.Acquire(ctx, "sessions/held")
	if err != nil {
		t.Fatalf("Acquire after SIGKILL: %v", err)
	}
	if l.Epoch() != epoch+1 {
		t.Fatalf("epoch after SIGKILL = %d, want %d", l.Epoch(), epoch+1)
	}
	l.Release(ctx)
	if st, err := s.Probe(ctx, "sessions/held"); err != nil || st.Held || st.Epoch != epoch+1 {
		t.Fatalf("Probe after release = %+v, %v", st, err)
	}
}

func TestCrossProcessLeaseRace(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns 4 processes")
	}
	dir := t.TempDir()
	s := openStore(t, dir)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := helperCmd(t, "race", dir)
			if out, err := cmd.Output(); err != nil {
				errs <- fmt.Errorf("race helper: %v %s", err, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := s.Read(ctx, "race/epochs", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var last uint64
	n := 0
	for c.Next() {
		e := binary.BigEndian.Uint64(c.Record().Payload)
		if e <= last {
			t.Fatalf("record %d: epoch %d after %d: two holders overlapped", c.Record().Seq, e, last)
		}
		last = e
		n++
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 500 {
		t.Fatalf("%d grants recorded, want 500", n)
	}
	if st, err := s.Probe(ctx, "race/lease"); err != nil || st.Held || st.Epoch != 500 {
		t.Fatalf("after the race: %+v, %v; want free at epoch 500", st, err)
	}
}

// waitLost waits for l.Lost() and returns how long it took.
func waitLost(t *testing.T, l storage.Lease) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-l.Lost():
		return time.Since(start)
	case <-time.After(10 * time.Second):
		t.Fatal("Lost() did not close")
		return 0
	}
}

func TestBreakFencesTheStaleHolder(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	a := openStore(t, dir)
	b := openStore(t, dir)
	const name = "sessions/fenced"
	la, err := a.Acquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Append(ctx, name, 0, []byte("fence 1")); err != nil {
		t.Fatal(err)
	}
	tipA := uint64(1)
	lb, err := b.Break(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if lb.Epoch() != la.Epoch()+1 {
		t.Fatalf("breaker epoch %d, want %d", lb.Epoch(), la.Epoch()+1)
	}
	tipB, err := b.Tip(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append(ctx, name, tipB, []byte("fence 2")); err != nil {
		t.Fatal(err)
	}
	took := waitLost(t, la)
	t.Logf("stale holder saw the loss after %v (watchdog %v)", took, testWatchdog)
	var lost *storage.LeaseLostError
	if err := storage.LostCause(name, la); !errors.As(err, &lost) || lost.Reason != storage.LossReplaced {
		t.Fatalf("LostCause = %v, want LeaseLostError{replaced}", err)
	}
	// The stale holder's next append at its tracked tip conflicts.
	err = a.Append(ctx, name, tipA, []byte("stale"))
	var conflict *storage.ConflictError
	if !errors.As(err, &conflict) || conflict.Expected != tipA || conflict.Actual != 2 {
		t.Fatalf("stale append = %v, want ConflictError expected 1 actual 2", err)
	}
	// A third party is refused with the breaker's epoch; the stale release frees nothing.
	if err := la.Release(ctx); err != nil {
		t.Fatalf("Release after loss: %v", err)
	}
	var held *storage.LeaseHeldError
	if _, err := a.Acquire(ctx, name); !errors.As(err, &held) || held.HolderEpoch != lb.Epoch() {
		t.Fatalf("Acquire after break = %v, want LeaseHeldError at %d", err, lb.Epoch())
	}
	select {
	case <-lb.Lost():
		t.Fatal("breaker's lease lost after the stale holder released")
	case <-time.After(5 * testWatchdog):
	}
}

func TestBreakFromAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openStore(t, dir)
	l, err := s.Acquire(ctx, "sessions/held")
	if err != nil {
		t.Fatal(err)
	}
	out, err := helperCmd(t, "break", dir).Output()
	if err != nil {
		t.Fatalf("break helper: %v", err)
	}
	var epoch uint64
	var pid int
	if _, err := fmt.Sscanf(string(out), "%d %d", &epoch, &pid); err != nil || epoch != l.Epoch()+1 {
		t.Fatalf("break helper said %q", out)
	}
	waitLost(t, l)
	var lost *storage.LeaseLostError
	if err := storage.LostCause("sessions/held", l); !errors.As(err, &lost) || lost.NewEpoch != epoch {
		t.Fatalf("LostCause = %v, want NewEpoch %d", err, epoch)
	}
	// The breaker exited, so the kernel freed its lock; the next grant follows it.
	l2, err := s.Acquire(ctx, "sessions/held")
	if err != nil || l2.Epoch() != epoch+1 {
		t.Fatalf("Acquire after the breaker exited: %v, %v", l2, err)
	}
}

func TestEpochFileAdvancedByHandIsLoss(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openStore(t, dir)
	l, err := s.Acquire(ctx, "sessions/adv")
	if err != nil {
		t.Fatal(err)
	}
	epochPath := filepath.Join(dir, "leases", "sessions", "adv.epoch")
	body := `{"epoch":` + strconv.FormatUint(l.Epoch()+5, 10) + `,"pid":1,"host":"elsewhere","acquired":"2026-01-01T00:00:00Z"}`
	// Written whole, by a rename: os.WriteFile truncates first, and a
	// watchdog that reads the empty file twice, tornEpochWait apart (a
	// loaded machine: it failed once under the race detector in CI),
	// rightly cannot vouch for its epoch and loses the lease as unknown.
	tmp := epochPath + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, epochPath); err != nil {
		t.Fatal(err)
	}
	waitLost(t, l)
	var lost *storage.LeaseLostError
	if err := storage.LostCause("sessions/adv", l); !errors.As(err, &lost) || lost.Reason != storage.LossEpochAdvanced {
		t.Fatalf("LostCause = %v, want epoch_advanced", err)
	}
}

func TestGarbageEpochFileIsNeverReset(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openStore(t, dir)
	l, err := s.Acquire(ctx, "sessions/g")
	if err != nil {
		t.Fatal(err)
	}
	l.Release(ctx)
	epochPath := filepath.Join(dir, "leases", "sessions", "g.epoch")
	garbage := []byte("\x00\x01not json")
	if err := os.WriteFile(epochPath, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = s.Acquire(ctx, "sessions/g")
	var ce *storage.CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("Acquire with garbage epoch file = %v, want *CorruptError", err)
	}
	if b, _ := os.ReadFile(epochPath); string(b) != string(garbage) {
		t.Fatalf("epoch file rewritten to %q", b)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors: %v", err)
	}
	return len(entries)
}

// TestManyLedgersBoundedDescriptors touches many ledgers; the store keeps
// a bounded number of them open and reopens evicted ones transparently.
func TestManyLedgersBoundedDescriptors(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	ctx := context.Background()
	before := openFDs(t)
	const n = 300
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("sessions/s%03d", i)
		if err := s.Append(ctx, name, 0, []byte(name)); err != nil {
			t.Fatal(err)
		}
	}
	if grew := openFDs(t) - before; grew > 100 {
		t.Fatalf("descriptors grew by %d after touching %d ledgers", grew, n)
	}
	for i := 0; i < n; i++ { // evicted ledgers reopen with their contents
		name := fmt.Sprintf("sessions/s%03d", i)
		if err := s.Append(ctx, name, 1, []byte("second")); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tip, err := s.Tip(ctx, name); err != nil || tip != 2 {
			t.Fatalf("%s: tip %d, %v", name, tip, err)
		}
	}
}

// A ledger damaged in the middle refuses to open (fail closed), yet Delete
// removes it: deleting a broken session must be possible.
func TestDeleteRemovesDamagedLedger(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	st := openStore(t, dir)
	const name = "sessions/damaged"
	for i := range 8 {
		if err := st.Append(ctx, name, uint64(i), []byte(strings.Repeat("x", 200))); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	path := filepath.Join(dir, "ledgers", "sessions", "damaged.log")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x40
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}

	st = openStore(t, dir)
	var corrupt *storage.CorruptError
	if _, err := st.Tip(ctx, name); !errors.As(err, &corrupt) {
		t.Fatalf("Tip of the damaged ledger = %v, want *storage.CorruptError", err)
	}
	if err := st.Delete(ctx, name); err != nil {
		t.Fatalf("Delete of the damaged ledger = %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the damaged file is still there: %v", err)
	}
	if tip, err := st.Tip(ctx, name); err != nil || tip != 0 {
		t.Fatalf("Tip after the delete = %d, %v", tip, err)
	}
	if err := st.Append(ctx, name, 0, []byte("fresh")); err != nil {
		t.Fatalf("append to the name after the delete: %v", err)
	}
}

// A damaged KV entry reads as *storage.CorruptError; an unconditional
// DeleteKey removes it, a conditional one still refuses.
func TestDeleteKeyRemovesDamagedEntry(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	st := openStore(t, dir)
	const key = "sessions/damaged/catalog"
	if _, err := st.Put(ctx, key, []byte(`{"v":1}`), storage.MustNotExist); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "kv", "sessions", "damaged", "catalog.kv")
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	var corrupt *storage.CorruptError
	if _, err := st.Get(ctx, key); !errors.As(err, &corrupt) {
		t.Fatalf("Get of the damaged entry = %v, want *storage.CorruptError", err)
	}
	if err := st.DeleteKey(ctx, key, 1); !errors.As(err, &corrupt) {
		t.Fatalf("conditional DeleteKey of the damaged entry = %v, want *storage.CorruptError", err)
	}
	if err := st.DeleteKey(ctx, key, storage.AnyRevision); err != nil {
		t.Fatalf("DeleteKey(AnyRevision) of the damaged entry = %v", err)
	}
	if _, err := st.Get(ctx, key); !rigNotFound(err) {
		t.Fatalf("Get after the delete = %v, want not found", err)
	}
}

func rigNotFound(err error) bool {
	var nf *storage.NotFoundError
	return errors.As(err, &nf)
}

// Several processes opening a store that does not exist yet all open it:
// one may find the FORMAT another is writing still in its temporary file
// (two `looprig new` on a first use, at once).
func TestOpenConcurrentCreation(t *testing.T) {
	for trial := range 50 {
		dir := filepath.Join(t.TempDir(), "store")
		errs := make(chan error, 8)
		for range 8 {
			go func() {
				s, err := fsstore.Open(dir)
				if err == nil {
					s.Close()
				}
				errs <- err
			}()
		}
		for range 8 {
			if err := <-errs; err != nil {
				t.Fatalf("trial %d: Open of a store created at the same time: %v", trial, err)
			}
		}
	}
	// What the temporary file of a creation that died leaves does not make
	// the directory foreign either.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".FORMAT.tmp-123"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := fsstore.Open(dir)
	if err != nil {
		t.Fatalf("Open with a FORMAT temporary file left: %v", err)
	}
	s.Close()
}

// checkPrivateModes walks root and checks that every directory is 0700
// and everything else a regular file 0600; it returns how many entries it
// saw, root included.
func checkPrivateModes(t *testing.T, root string) int {
	t.Helper()
	seen := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		} else if !fi.Mode().IsRegular() {
			t.Errorf("%s: mode %v, want a regular file", path, fi.Mode())
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %04o, want %04o", path, fi.Mode().Perm(), want)
		}
		seen++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return seen
}
