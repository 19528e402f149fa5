package rig_test

import (
	"testing"

	"looprig/fsstore"
	"looprig/rig"
	"looprig/rig/storage"
)

// ListLeases says of each session what ListSessions says of its lease: the
// same sessions, their epochs, and held for the one a process holds, free
// for one shut down; it reads no catalog entry, so a session whose entry
// is unreadable is listed all the same.
func TestListLeases(t *testing.T) {
	st, err := fsstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r, err := rig.Define(rig.WithStore(st), rig.WithWorkspaces(t.TempDir()), rig.WithProfile(rig.DemoProfile()))
	if err != nil {
		t.Fatal(err)
	}
	held, err := r.NewSession(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Shutdown(t.Context()) })
	stopped, err := r.NewSession(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := stopped.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(t.Context(), "sessions/"+stopped.SessionID().String()+"/catalog", []byte("not json"), storage.AnyRevision); err != nil {
		t.Fatal(err)
	}

	infos, err := rig.ListSessions(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	leases, err := rig.ListLeases(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	if len(leases) != 2 || len(infos) != 2 {
		t.Fatalf("ListLeases gave %d sessions, ListSessions %d; want 2 each", len(leases), len(infos))
	}
	want := map[string]bool{held.SessionID().String(): true, stopped.SessionID().String(): false}
	epochs := map[string]uint64{}
	for _, in := range infos {
		epochs[in.ID] = in.Epoch
		if in.ID == stopped.SessionID().String() && in.State != rig.StateBroken {
			t.Fatalf("the session whose entry was overwritten lists %s, want broken: the test wrote another key", in.State)
		}
	}
	for _, l := range leases {
		h, ok := want[l.ID]
		if !ok || l.Held != h || l.Err != nil || l.Epoch == 0 || l.Epoch != epochs[l.ID] {
			t.Errorf("lease of %s: held %v at epoch %d (err %v); want held %v at epoch %d", l.ID, l.Held, l.Epoch, l.Err, h, epochs[l.ID])
		}
	}
}
