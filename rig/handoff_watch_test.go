package rig

import (
	"context"
	"testing"
	"time"

	"looprig/fsstore"
	"looprig/rig/engine"
)

// On a store that tells of changes to a key (fsstore), an idle session
// does not read its hand-over key on a timer: with the poll an hour, a
// request to hand it over is still taken up at once, woken by the put.
func TestHandOffRequestWakesIdleSession(t *testing.T) {
	st, err := fsstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r, err := Define(WithStore(st), WithWorkspaces(t.TempDir()),
		WithProfile(Profile{Name: "bulk", Engine: "bulk", Placement: PlacementSession}),
		WithEngine("bulk", func(Profile) (engine.Engine, error) { return bulkEngine{}, nil }),
		WithHandOffPoll(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := r.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(ctx)
	time.Sleep(100 * time.Millisecond) // idle: its watcher waiting
	if err := RequestHandOff(ctx, st, s.SessionID(), HandOffRequest{To: "taker", Epoch: s.Epoch(), At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the session did not take up a request to hand it over within 5 s, with its poll an hour")
	}
}
