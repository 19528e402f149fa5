package rigtest

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/storage"
)

var catalogCases = []testCase{
	{"RestoreRebuildsDeletedEntry", testCatalogRebuilt},
	{"AttentionFields", testCatalogAttention},
}

func listed(t testing.TB, store storage.Store, id uuid.UUID) (rig.SessionInfo, bool) {
	t.Helper()
	list, err := rig.ListSessions(context.Background(), store)
	if err != nil {
		t.Fatalf("ListSessions: %v", err)
	}
	for _, info := range list {
		if info.ID == id.String() {
			return info, true
		}
	}
	return rig.SessionInfo{}, false
}

// Deleting the catalog entry of a stopped session hides it from listings;
// restoring it rebuilds the entry from the journal.
func testCatalogRebuilt(t *testing.T, e *env) {
	s := e.newSession(e.define(), rig.WithTitle("catalogued"))
	id := s.SessionID()
	runTurn(t, s, "echo one")
	shutdown(t, s)
	ctx := t.Context()
	c, err := rig.ReadCatalog(ctx, e.raw, id.String())
	if err != nil || c.State != rig.CatalogStopped {
		t.Fatalf("catalog of a stopped session: %+v, %v", c, err)
	}
	if err := e.raw.DeleteKey(ctx, storage.CatalogKey(id.String()), storage.AnyRevision); err != nil {
		t.Fatal(err)
	}
	if info, ok := listed(t, e.raw, id); ok {
		t.Errorf("session without a catalog entry is listed: %+v", info)
	}
	s2 := e.restore(e.define(), id)
	c, err = rig.ReadCatalog(ctx, e.raw, id.String())
	if err != nil {
		t.Fatalf("catalog entry after the restore: %v", err)
	}
	if c.State != rig.CatalogRunning || c.Title != "catalogued" || c.Epoch != s2.Epoch() || c.Turns != 1 || c.Profile != "default" {
		t.Errorf("rebuilt catalog entry %+v", c)
	}
	if info, ok := listed(t, e.raw, id); !ok || info.State != rig.StateLive {
		t.Errorf("restored session listed as %+v (listed %v), want live", info, ok)
	}
	shutdown(t, s2)
	if info, ok := listed(t, e.raw, id); !ok || info.State != rig.StateIdle || info.Title != "catalogued" {
		t.Errorf("session after its shutdown listed as %+v (listed %v), want idle", info, ok)
	}
}
