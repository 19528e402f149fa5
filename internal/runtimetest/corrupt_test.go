package runtimetest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"looprig/rig"
	"looprig/rig/storage"
)

// TestDamagedJournalIsBrokenAndUntouched: a byte flipped in the middle of a
// session's ledger file makes restore fail with replay_failed, marks the
// session broken in the catalog (so listings show why without reading the
// journal), and leaves the file byte for byte as it was.
func TestDamagedJournalIsBrokenAndUntouched(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	st := open(t, dir)
	r, err := rig.Define(rig.WithStore(st), rig.WithWorkspaces(st.WorkspacesDir()), rig.WithProfile(rig.DemoProfile()))
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.NewSession(ctx, rig.WithTitle("to be damaged"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := s.Submit(ctx, "fail"); err != nil {
			t.Fatal(err)
		}
		if err := s.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	id := s.SessionID()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close()

	path := filepath.Join(dir, "ledgers", "sessions", id.String()+".log")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x40
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}

	st2 := open(t, dir)
	r2, err := rig.Define(rig.WithStore(st2), rig.WithWorkspaces(st2.WorkspacesDir()), rig.WithProfile(rig.DemoProfile()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = r2.RestoreSession(ctx, id)
	var re *rig.RestoreError
	if !errors.As(err, &re) || re.Kind != rig.RestoreReplayFailed {
		t.Fatalf("restore of a damaged journal = %v, want RestoreError{replay_failed}", err)
	}
	var corrupt *storage.CorruptError
	if !errors.As(err, &corrupt) || corrupt.Offset < 0 {
		t.Fatalf("cause %v does not carry the store's CorruptError with an offset", err)
	}
	after, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(after, b) {
		t.Fatalf("the damaged journal was modified (%v)", err)
	}
	list, err := rig.ListSessions(ctx, st2)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].State != rig.StateBroken || list[0].Reason == "" {
		t.Fatalf("listing = %+v, want the session broken with a reason", list)
	}
	if l, err := st2.Acquire(ctx, storage.SessionName(id.String())); err != nil {
		t.Fatalf("lease not released after the failed restore: %v", err)
	} else {
		l.Release(ctx)
	}
	// What a user does with it in the end: delete it. The damaged file is
	// removed like any other journal.
	d, err := rig.DeleteSession(ctx, st2, st2.WorkspacesDir(), id)
	if err != nil || !d.Journal || !d.Catalog {
		t.Fatalf("DeleteSession of the broken session = %+v, %v", d, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the damaged journal is still there after the deletion: %v", err)
	}
	if list, err := rig.ListSessions(ctx, st2); err != nil || len(list) != 0 {
		t.Errorf("listing after the deletion = %+v, %v", list, err)
	}
}
