package tui

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

// R through the real program, with hosts this process serves (testHosts):
// every crashed session restored once, each into its own host; two TUIs
// pressing R at once; a restore another process wins, one that finds the
// session not crashed any more and one that fails.

// crashN makes n crashed sessions, each with a turn cut by the crash.
func crashN(t *testing.T, st *memstore.Store, opts Options, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		out := "before-crash-" + string(rune('a'+i))
		ids[i] = crashSession(t, st, opts, "crashed "+string(rune('a'+i)), "echo "+out+"; sleep 30", out)
	}
	return ids
}

// restores counts the restores in session id's journal (RestoreStarted,
// written under the lease by the one restore that took it).
func restores(t *testing.T, st *memstore.Store, id string) int {
	t.Helper()
	n := 0
	for _, r := range records(t, st, id) {
		if r.Kind != journal.KindEvent {
			continue
		}
		if _, ok := r.Event.(event.RestoreStarted); ok {
			n++
		}
	}
	return n
}

// countStarts wraps opts.StartHost to count its calls per session and
// check that R asks for crashed-only restores.
type countStarts struct {
	mu    sync.Mutex
	calls map[string]int
	plain int // restores without OnlyIfCrashed
}

func (c *countStarts) wrap(start func(context.Context, HostRequest) (host.Ready, error)) func(context.Context, HostRequest) (host.Ready, error) {
	return func(ctx context.Context, req HostRequest) (host.Ready, error) {
		c.mu.Lock()
		if c.calls == nil {
			c.calls = map[string]int{}
		}
		c.calls[req.Session]++
		if req.Session != "" && !req.OnlyIfCrashed {
			c.plain++
		}
		c.mu.Unlock()
		return start(ctx, req)
	}
}

// raDone waits until the R dialog says its run is done, and returns the
// screen.
func (f *flow) raDone(summary string) string {
	f.t.Helper()
	f.waitModel("the R run to end", func(m Model) bool {
		r := m.status.run
		return r != nil && r.phase == raDone
	})
	return f.waitView("done: "+summary, "Close")
}

// TestFlowRestoreAll: three crashed sessions; the TUI says so and offers
// R; R lists them, enter alone cancels; Restore restores each once, in
// its own host, without attaching; they list live.
func TestFlowRestoreAll(t *testing.T) {
	st := memstore.New()
	opts, th := flowEnv(t, st)
	ids := crashN(t, st, opts, 3)
	var starts countStarts
	opts.StartHost = starts.wrap(opts.StartHost)
	f := startFlow(t, st, opts)
	f.waitView("3 crashed — R restores them")

	f.typeText("R")
	f.waitView("Restore crashed sessions", "[ Restore 3 ]", "crashed a", "#0 running")
	f.key("enter") // Cancel is the default
	f.waitModel("the dialog to close", func(m Model) bool { return m.dialog == nil })
	f.inspect(func(m Model) {
		if m.status.run != nil {
			t.Error("Cancel started a run")
		}
	})

	f.typeText("R")
	f.waitView("[ Restore 3 ]")
	f.key("right")
	f.key("enter")
	screen := f.raDone("3 restored · 0 restored elsewhere · 0 failed")
	if n := strings.Count(screen, "✓ live · pid"); n != 3 {
		t.Errorf("%d sessions shown restored, want 3:\n%s", n, screen)
	}
	f.key("esc")
	f.waitModel("every session live in a host", func(m Model) bool {
		for _, id := range ids {
			if v := m.sessions[id]; v == nil || v.state() != rig.StateLive || v.failed != nil {
				return false
			}
		}
		return m.dialog == nil
	})
	for _, id := range ids {
		if n := restores(t, st, id); n != 1 {
			t.Errorf("%s restored %d times", id[:8], n)
		}
		if h := th.host(id); h == nil {
			t.Errorf("%s has no host", id[:8])
		}
	}
	starts.mu.Lock()
	for _, id := range ids {
		if starts.calls[id] != 1 {
			t.Errorf("%s: %d hosts started, want 1", id[:8], starts.calls[id])
		}
	}
	if starts.plain != 0 {
		t.Errorf("%d restores without OnlyIfCrashed", starts.plain)
	}
	starts.mu.Unlock()
	f.quit()
	infos, err := rig.ListSessions(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		if info.State != rig.StateLive {
			t.Errorf("%s is %s after the TUI quit, want live in its host", info.ShortID(), info.State)
		}
	}
}

// TestFlowRestoreAllTwoTUIs: two TUIs press R at once: every session is
// restored once; what the other TUI restored first is said calmly, not
// as a failure.
func TestFlowRestoreAllTwoTUIs(t *testing.T) {
	st := memstore.New()
	opts, _ := flowEnv(t, st)
	ids := crashN(t, st, opts, 4)
	a := startFlow(t, st, opts)
	b := startFlow(t, st, opts)
	for _, f := range []*flow{a, b} {
		f.typeText("R")
		f.waitView("[ Restore 4 ]")
		f.key("right")
	}
	a.key("enter")
	b.key("enter")
	restored := 0
	for _, f := range []*flow{a, b} {
		f.waitModel("the R run to end", func(m Model) bool { r := m.status.run; return r != nil && r.phase == raDone })
		f.inspect(func(m Model) {
			t.Logf("outcomes: %s", m.status.run.summary())
			for _, row := range m.status.run.rows {
				switch row.outcome {
				case raRestored:
					restored++
				case raFailed:
					t.Errorf("%s failed: %s", row.short, row.note)
				}
				if v := m.sessions[row.id]; v != nil && v.failed != nil {
					t.Errorf("%s shows a failure: %v", row.short, v.failed.err)
				}
			}
		})
		if strings.Contains(f.view(), "✗ failed") {
			t.Errorf("a failure is shown:\n%s", f.view())
		}
	}
	if restored != len(ids) {
		t.Errorf("%d restores across both TUIs, want %d", restored, len(ids))
	}
	for _, id := range ids {
		if n := restores(t, st, id); n != 1 {
			t.Errorf("%s restored %d times", id[:8], n)
		}
	}
	for _, f := range []*flow{a, b} {
		f.key("esc")
		f.waitModel("the dialog to close", func(m Model) bool { return m.dialog == nil })
		f.quit()
	}
}

// TestFlowRestoreAllLosers: of four crashed sessions, another process
// restores one first (its lease is held when the host tries), one was
// restored and shut down meanwhile (the host refuses it: not crashed),
// one cannot be restored (its profile is gone) and one is restored. The
// first two are said calmly; the failure is r's, with its kind, cause and
// remedy in the strip.
func TestFlowRestoreAllLosers(t *testing.T) {
	st := memstore.New()
	opts, _ := flowEnv(t, st)
	ids := crashN(t, st, opts, 3)
	taken, gone, fine := ids[0], ids[1], ids[2]
	gated := crashSessionWith(t, st, opts, opts.Profiles["gated"], "gated one")
	delete(opts.Profiles, "gated") // the hosts and the TUI share the map

	// Another process takes taken as the TUI's host starts for it; gone's
	// host finds it shut down cleanly.
	var (
		mu    sync.Mutex
		other *rig.Session
	)
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if other != nil {
			other.Shutdown(context.Background())
		}
	})
	start := opts.StartHost
	opts.StartHost = func(ctx context.Context, req HostRequest) (host.Ready, error) {
		switch req.Session {
		case taken:
			s, err := testRig(t, st, opts).RestoreSession(ctx, uuid.MustParse(taken))
			if err != nil {
				t.Errorf("the other process's restore: %v", err)
			}
			mu.Lock()
			other = s
			mu.Unlock()
		case gone:
			s, err := testRig(t, st, opts).RestoreSession(ctx, uuid.MustParse(gone))
			if err != nil {
				t.Errorf("the other process's restore: %v", err)
			} else if err := s.Shutdown(ctx); err != nil {
				t.Errorf("shut down: %v", err)
			}
			// What the host does with OnlyIfCrashed (testHosts does not
			// ask it of rig).
			_, err = testRig(t, st, opts).RestoreSession(ctx, uuid.MustParse(gone), rig.OnlyIfCrashed())
			return host.Ready{}, remoteErr(err)
		}
		return start(ctx, req)
	}
	f := startFlow(t, st, opts)
	f.waitView("4 crashed — R restores them")
	f.typeText("R")
	f.waitView("[ Restore 4 ]")
	f.key("right")
	f.key("enter")
	screen := f.raDone("1 restored · 2 restored elsewhere · 1 failed")
	for _, want := range []string{
		rig.ShortID(taken) + "  crashed a",
		"– restored by another process",
		"– no longer crashed",
		"✗ failed: unknown_profile",
		"✓ live · pid",
		"select a failed one in the list",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("no %q:\n%s", want, screen)
		}
	}
	f.inspect(func(m Model) {
		for _, id := range []string{taken, gone, fine} {
			if v := m.sessions[id]; v.failed != nil {
				t.Errorf("%s shows a failure: %v", id[:8], v.failed.err)
			}
		}
		if v := m.sessions[gated]; v.failed == nil || v.failed.op != opRestore {
			t.Errorf("the failed restore of %s is not its failed restore: %+v", gated[:8], v.failed)
		}
	})
	f.key("esc")
	f.waitModel("the dialog to close", func(m Model) bool { return m.dialog == nil })
	f.inspect(func(m Model) { m.list.selectID(gated, m.listSpace()) })
	f.waitView("unknown_profile", `the profile it was created with, "gated", is not configured any more`, "define \"gated\" in config.toml again")
	for _, id := range []string{taken, gone, fine} {
		if n := restores(t, st, id); n != 1 {
			t.Errorf("%s restored %d times", id[:8], n)
		}
	}
	if n := restores(t, st, gated); n != 0 {
		t.Errorf("the gated session was restored %d times", n)
	}
	f.quit()
}

// crashSessionWith is crashSession for a session of profile p, crashed
// between turns.
func crashSessionWith(t *testing.T, st *memstore.Store, opts Options, p rig.Profile, title string) string {
	t.Helper()
	ctx := context.Background()
	r := testRig(t, st, opts, rig.WithProfile(p))
	s, err := r.NewSession(ctx, rig.WithTitle(title))
	if err != nil {
		t.Fatal(err)
	}
	id := s.SessionID().String()
	l, err := st.Break(ctx, storage.SessionName(id))
	if err != nil {
		t.Fatal(err)
	}
	<-s.Done()
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	s.Shutdown(ctx)
	return id
}
