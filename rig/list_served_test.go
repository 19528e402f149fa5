package rig_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

// holderElsewhere is a store whose probes report every holder with
// another pid, and with host when it is set: a session held by another
// process, on this machine or another.
type holderElsewhere struct {
	*memstore.Store
	pid  int
	host string
}

func (s holderElsewhere) ProbeMany(ctx context.Context, names []string, opts ...storage.ProbeOption) ([]storage.LeaseStatus, error) {
	sts, err := s.Store.ProbeMany(ctx, names, opts...)
	for i := range sts {
		if sts[i].Held {
			sts[i].Holder.PID = s.pid
			if s.host != "" {
				sts[i].Holder.Host = s.host
			}
		}
	}
	return sts, err
}

// WithServing lists as live a session held by another process of this
// machine when serving says that process serves it, asking once, with the
// session's id and holder; it never asks about a holder on another
// machine, and without it such a session is held.
func TestListWithServing(t *testing.T) {
	mem := memstore.New()
	s := liveSession(t, mem)
	id := s.SessionID().String()
	const other = 999999

	var mu sync.Mutex
	var asked []string
	serving := func(answer bool) rig.ListOption {
		return rig.WithServing(func(_ context.Context, sid string, h storage.Holder) bool {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, sid)
			if h.PID != other {
				t.Errorf("asked about holder %+v, want pid %d", h, other)
			}
			return answer
		})
	}
	state := func(st storage.Store, opts ...rig.ListOption) rig.SessionState {
		t.Helper()
		asked = nil
		infos, err := rig.ListSessions(t.Context(), st, opts...)
		if err != nil || len(infos) != 1 {
			t.Fatalf("ListSessions = %+v, %v", infos, err)
		}
		return infos[0].State
	}
	here := holderElsewhere{Store: mem, pid: other}
	if got := state(here); got != rig.StateHeld {
		t.Errorf("held by another process, no serving: %s, want held", got)
	}
	if got := state(here, serving(true)); got != rig.StateLive || len(asked) != 1 || asked[0] != id {
		t.Errorf("served: %s, asked %q; want live, asked once about %s", got, asked, id)
	}
	if got := state(here, serving(false)); got != rig.StateHeld || len(asked) != 1 {
		t.Errorf("not served: %s, asked %q; want held, asked once", got, asked)
	}
	away := holderElsewhere{Store: mem, pid: other, host: "another-machine-" + hostname(t)}
	if got := state(away, serving(true)); got != rig.StateHeld || len(asked) != 0 {
		t.Errorf("held on another machine: %s, asked %q; want held, never asked", got, asked)
	}
	if got := state(mem, serving(true)); got != rig.StateLive || len(asked) != 0 {
		t.Errorf("held by this process: %s, asked %q; want live, never asked", got, asked)
	}
}

func hostname(t *testing.T) string {
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// probeCounter counts the listings of a store (each probes every lease).
type probeCounter struct {
	holderElsewhere
	probes *atomic.Int32
}

func (s probeCounter) ProbeMany(ctx context.Context, names []string, opts ...storage.ProbeOption) ([]storage.LeaseStatus, error) {
	s.probes.Add(1)
	return s.holderElsewhere.ProbeMany(ctx, names, opts...)
}

// While the store's change stamp stands still, a Lister asks only the
// liveness of the sessions held by other processes here, every
// RelistEvery: a holder stopped or resumed is seen without a listing of
// the store; a holder gone unseen, or FullRelistEvery passed, lists it
// again.
func TestListerAsksLivenessOnly(t *testing.T) {
	mem := memstore.New()
	liveSession(t, mem)
	var probes atomic.Int32
	store := probeCounter{holderElsewhere: holderElsewhere{Store: mem, pid: 999999}, probes: &probes}
	var answer atomic.Int32
	answer.Store(int32(rig.LivenessServing))
	l := rig.NewLister(store, rig.WithLiveness(func(context.Context, string, storage.Holder) rig.Liveness {
		return rig.Liveness(answer.Load())
	}))
	l.RelistEvery, l.FullRelistEvery = time.Millisecond, time.Hour
	list := func(what string, wantFresh bool, want rig.SessionState, stopped bool, wantProbes int32) {
		t.Helper()
		time.Sleep(5 * time.Millisecond) // RelistEvery passed
		infos, fresh, err := l.List(t.Context())
		if err != nil || len(infos) != 1 {
			t.Fatalf("%s: List = %+v, %v", what, infos, err)
		}
		in := infos[0]
		if fresh != wantFresh || in.State != want || in.NotAnswering != stopped || probes.Load() != wantProbes {
			t.Fatalf("%s: fresh %v, %s (not answering %v, %q), %d listings; want fresh %v, %s, %d listings",
				what, fresh, in.State, in.NotAnswering, in.Reason, probes.Load(), wantFresh, want, wantProbes)
		}
	}
	list("the first listing", true, rig.StateLive, false, 1)
	list("nothing changed", false, rig.StateLive, false, 1)
	answer.Store(int32(rig.LivenessStopped))
	list("the holder stopped", true, rig.StateHeld, true, 1)
	list("still stopped", false, rig.StateHeld, true, 1)
	answer.Store(int32(rig.LivenessServing))
	list("the holder resumed", true, rig.StateLive, false, 1)
	// memstore takes no vouch: its lock table still says held.
	answer.Store(int32(rig.LivenessGone))
	list("the holder gone unseen: listed again", true, rig.StateHeld, false, 2)
	answer.Store(int32(rig.LivenessServing))
	l.FullRelistEvery = time.Millisecond
	list("FullRelistEvery passed", true, rig.StateLive, false, 3)
}

// liveSession makes a session of the demo profile in mem, held by this
// process until the test ends.
func liveSession(t *testing.T, mem *memstore.Store) *rig.Session {
	t.Helper()
	r, err := rig.Define(rig.WithStore(mem), rig.WithWorkspaces(t.TempDir()), rig.WithProfile(rig.DemoProfile()))
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.NewSession(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return s
}

// stillStore is a store whose durable stamp stands still.
type stillStore struct{ probeCounter }

func (stillStore) DurableStamp(context.Context) (string, bool, error) { return "still", true, nil }

// A Lister that starts from the kept listing lists in full at its next
// call, whose probes are what tell its change stamp of a holder's death
// (the TUI starts from the file for its first frame, then goes on
// listing); after that, a still store is not listed again.
func TestListerListsAfterKeptStart(t *testing.T) {
	mem := memstore.New()
	liveSession(t, mem)
	var probes atomic.Int32
	store := stillStore{probeCounter{holderElsewhere: holderElsewhere{Store: mem, pid: 999999}, probes: &probes}}
	serving := rig.WithLiveness(func(context.Context, string, storage.Holder) rig.Liveness { return rig.LivenessServing })
	path := filepath.Join(t.TempDir(), "cache", "listing.json")
	first := rig.NewLister(store, serving)
	first.Keep(path)
	if _, _, err := first.List(t.Context()); err != nil || probes.Load() != 1 {
		t.Fatalf("the first process's listing: %v, %d probes of the store", err, probes.Load())
	}
	l := rig.NewLister(store, serving)
	l.Keep(path)
	l.RelistEvery, l.FullRelistEvery = time.Hour, time.Hour
	for i, want := range []struct {
		fresh  bool
		probes int32
	}{{true, 1}, {true, 2}, {false, 2}} {
		infos, fresh, err := l.List(t.Context())
		if err != nil || len(infos) != 1 || infos[0].State != rig.StateLive {
			t.Fatalf("call %d: List = %+v, %v", i+1, infos, err)
		}
		if fresh != want.fresh || probes.Load() != want.probes {
			t.Fatalf("call %d: fresh %v after %d listings of the store; want fresh %v after %d (the kept start, then one full listing)",
				i+1, fresh, probes.Load(), want.fresh, want.probes)
		}
	}
}

// Between listings a Lister asks only the holders of the sessions its view
// shows (Show): a holder stopped out of view is seen once its row is
// shown; Show(nil) asks them all again.
func TestListerAsksLivenessOfShownOnly(t *testing.T) {
	mem := memstore.New()
	a, b := liveSession(t, mem).SessionID().String(), liveSession(t, mem).SessionID().String()
	store := holderElsewhere{Store: mem, pid: 999999}
	var mu sync.Mutex
	asked := map[string]int{}
	stopped := map[string]bool{}
	l := rig.NewLister(store, rig.WithLiveness(func(_ context.Context, id string, _ storage.Holder) rig.Liveness {
		mu.Lock()
		defer mu.Unlock()
		asked[id]++
		if stopped[id] {
			return rig.LivenessStopped
		}
		return rig.LivenessServing
	}))
	l.RelistEvery, l.FullRelistEvery = time.Millisecond, time.Hour
	round := func(what string) (map[string]int, map[string]rig.SessionInfo) {
		t.Helper()
		mu.Lock()
		clear(asked)
		mu.Unlock()
		time.Sleep(5 * time.Millisecond) // RelistEvery passed
		infos, _, err := l.List(t.Context())
		if err != nil || len(infos) != 2 {
			t.Fatalf("%s: List = %+v, %v", what, infos, err)
		}
		rows := map[string]rig.SessionInfo{}
		for _, in := range infos {
			rows[in.ID] = in
		}
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(asked), rows
	}
	round("the first listing")
	l.Show([]string{a})
	mu.Lock()
	stopped[b] = true
	mu.Unlock()
	got, rows := round("a shown")
	if got[a] != 1 || got[b] != 0 {
		t.Fatalf("with only %s shown, asked %v; want it once, not %s", a, got, b)
	}
	if rows[b].NotAnswering {
		t.Fatalf("%s, not shown, was asked", b)
	}
	l.Show([]string{b})
	got, rows = round("b shown")
	if got[a] != 0 || got[b] != 1 || !rows[b].NotAnswering || rows[b].State != rig.StateHeld {
		t.Fatalf("with %s shown: asked %v, its row %+v; want it asked once and not answering", b, got, rows[b])
	}
	l.Show(nil)
	if got, _ = round("all shown"); got[a] != 1 || got[b] != 1 {
		t.Fatalf("with Show(nil), asked %v; want both once", got)
	}
}
