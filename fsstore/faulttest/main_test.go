// Package faulttest holds fsstore's fault tests that need the whole
// runtime on top of the store: crashes at each step of the store's write
// paths (through the seams of fsstore/internal/seam), a full disk during
// appends, and a lease broken by another process while its holder appends.
//
// Helper processes: the test binary re-executes itself with
// FAULTTEST_HELPER naming a role; see runHelper.
package faulttest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/fsstore"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/hub"
)

const (
	envHelper  = "FAULTTEST_HELPER"  // the role of a helper process
	envDir     = "FAULTTEST_DIR"     // its store
	envSession = "FAULTTEST_SESSION" // the session it restores
	envPoint   = "FAULTTEST_POINT"   // crash: the seam point
	envHit     = "FAULTTEST_HIT"     // crash: die on this hit of the point
	envTear    = "FAULTTEST_TEAR"    // crash: tear the unsynced write first
)

// helperTimeout bounds every wait on a helper; generous for a loaded
// two-core machine.
const helperTimeout = 60 * time.Second

func TestMain(m *testing.M) {
	if role := os.Getenv(envHelper); role != "" {
		os.Exit(runHelper(role))
	}
	os.Exit(m.Run())
}

// chatty prints without end; turns running it stop only when interrupted.
const chatty = `i=0; while :; do i=$((i+1)); echo "line $i"; done`

// rigOptions are the options of every rig here, in the parent and in
// helpers alike (so restores see no drift): the default profile, and
// frequent small checkpoints so a printing turn appends continuously.
func rigOptions(st *fsstore.Store) []rig.Option {
	return []rig.Option{rig.WithStore(st), rig.WithWorkspaces(st.WorkspacesDir()), rig.WithCheckpoints(5*time.Millisecond, 2048)}
}

func defineRig(t testing.TB, st *fsstore.Store, extra ...rig.Option) *rig.Rig {
	t.Helper()
	r, err := rig.Define(append(rigOptions(st), extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func openStore(t testing.TB, dir string, opts ...fsstore.Option) *fsstore.Store {
	t.Helper()
	st, err := fsstore.Open(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// newStoppedSession creates a session with one finished turn and shuts it
// down cleanly.
func newStoppedSession(t testing.TB, dir string) uuid.UUID {
	t.Helper()
	st := openStore(t, dir)
	r := defineRig(t, st)
	ctx := context.Background()
	s, err := r.NewSession(ctx, rig.WithTitle("fault test"))
	if err != nil {
		t.Fatal(err)
	}
	sub := s.Subscribe(hub.Filter{AllLoops: true})
	if _, err := s.Submit(ctx, "echo first"); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, sub)
	sub.Close()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	id := s.SessionID()
	st.Close()
	return id
}

func waitTurnEnd(t testing.TB, sub *hub.Subscription) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), helperTimeout)
	defer cancel()
	for {
		batch, ok, err := sub.Next(ctx, 0)
		for _, env := range batch {
			switch env.Event.(type) {
			case event.TurnDone, event.TurnFailed, event.TurnInterrupted:
				return
			}
		}
		if err != nil || !ok {
			t.Fatalf("waiting for the turn's end: ok=%v err=%v sub=%v", ok, err, sub.Err())
		}
	}
}
