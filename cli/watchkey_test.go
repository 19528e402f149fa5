package cli

import (
	"context"
	"testing"
	"time"

	"looprig/fsstore"
	"looprig/rig/storage"
)

// The store the commands open passes fsstore's key watching through, so
// that a live host waits for a hand-over request without reading its key
// every second (rig: pollHandOff).
func TestOpenedStoreWatchesKeys(t *testing.T) {
	fs, err := fsstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st := &openedStore{Store: fs, name: fs.Dir(), local: fs.LocalDir(), close: fs.Close}
	defer st.Close()
	w, ok := any(st).(storage.KeyWatcher)
	if !ok {
		t.Fatal("the opened store is not a storage.KeyWatcher")
	}
	ctx := context.Background()
	if _, err := st.Put(ctx, "sessions/x/catalog", []byte("c"), storage.AnyRevision); err != nil {
		t.Fatal(err)
	}
	changed, stop, err := w.WatchKey("sessions/x/handoff")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if _, err := st.Put(ctx, "sessions/x/handoff", []byte("h"), storage.AnyRevision); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(3 * time.Second):
		t.Fatal("no change signalled within 3 s of a put of the watched key")
	}
}
