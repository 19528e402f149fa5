package fsstore_test

// The change stamp with a lock table (Linux): it settles, and a holder's
// death moves it.

import (
	"syscall"
	"testing"
	"time"

	"looprig/fsstore"
	"looprig/rig/storage"
)

// changeSettle is fsstore's: how old the last change must be for a stamp
// to settle.
const changeSettle = 100 * time.Millisecond

// settled waits for two equal stamps in a row.
func settled(t *testing.T, s *fsstore.Store) string {
	t.Helper()
	prev, err := s.ChangeStamp(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		time.Sleep(changeSettle / 4)
		cur, err := s.ChangeStamp(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if cur == prev {
			return cur
		}
		prev = cur
	}
	t.Fatalf("the change stamp never settled (last %q)", prev)
	return ""
}

// A holder killed with SIGKILL changes no file; its death still moves the
// stamp of a store whose listing saw it hold the lease (the listing's
// probe), so a listing shown for long notices the crash.
func TestChangeStampHolderDeath(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	cmd, _, _, _ := startHolder(t, dir)
	if st, err := s.Probe(t.Context(), "sessions/held"); err != nil || !st.Held {
		t.Fatalf("Probe of the helper's lease = %+v, %v; want held", st, err)
	}
	before := settled(t, s)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	after := settled(t, s)
	if after == before {
		t.Fatalf("ChangeStamp = %q before and after the holder's death", after)
	}
}

// Two changes within one tick of the kernel's clock leave the same mtime:
// a stamp taken between them must not equal the stamp after the second.
// So a stamp taken soon after a change equals no other stamp.
func TestChangeStampUnsettledAfterChange(t *testing.T) {
	s := openStore(t, t.TempDir())
	ctx := t.Context()
	if _, err := s.Put(ctx, "sessions/a/catalog", []byte("1"), storage.AnyRevision); err != nil {
		t.Fatal(err)
	}
	first, _ := s.ChangeStamp(ctx)
	second, _ := s.ChangeStamp(ctx)
	if first == second {
		t.Fatalf("two stamps right after a change are both %q: a second change in the same tick would go unseen", first)
	}
	settledStamp := settled(t, s)
	time.Sleep(2 * changeSettle)
	if again, _ := s.ChangeStamp(ctx); again != settledStamp {
		t.Fatalf("a settled stamp moved from %q to %q with no change", settledStamp, again)
	}
}
