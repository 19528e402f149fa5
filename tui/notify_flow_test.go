package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"looprig/rig"
)

// waitCount waits until out holds want announcements seq, then checks
// that no more arrive over a few listings.
func waitCount(t *testing.T, out *lockedBuffer, seq string, want int, what string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for strings.Count(out.String(), seq) < want && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(2500 * time.Millisecond) // two more listings: nothing is announced twice
	if got := strings.Count(out.String(), seq); got != want {
		t.Fatalf("%s: %d announcements %q, want %d (output %q)", what, got, seq, want, out.String())
	}
}

// A gate opened and a long turn ended in sessions in the background ring
// the bell once each; the same in the session in front of the user, or a
// turn shorter than notify_after, do not; what was open when the TUI
// started is not news.
func TestFlowNotifyBell(t *testing.T) {
	st := memstoreNew()
	opts := flowOptions(t, st)
	out := &lockedBuffer{}
	opts.Notify, opts.NotifyAfter, opts.NotifyTo = "bell", 300*time.Millisecond, out
	gated := opts.Profiles["gated"]
	r := testRig(t, st, opts, rig.WithProfile(gated))
	ctx := context.Background()
	newSession := func(title string) *rig.Session {
		s, err := r.NewSession(ctx, rig.WithTitle(title))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Shutdown(context.Background()) })
		return s
	}
	old := newSession("old gate")
	if _, err := old.Submit(ctx, "touch before"); err != nil {
		t.Fatal(err)
	}
	waitGate(t, old)
	back := newSession("background")
	front := newSession("front") // newest: at the top, selected

	f := startFlow(t, st, opts)
	f.waitView("front", "background", "? gate")
	f.inspect(func(m Model) {
		if s := m.list.selected(); s == nil || s.listing.title != "front" {
			t.Errorf("selected %v, want the front session", s)
		}
	})

	// a gate in the background: one bell
	if _, err := back.Submit(ctx, "touch it"); err != nil {
		t.Fatal(err)
	}
	waitCount(t, out, "\a", 1, "a gate opened in the background")
	// a gate in front of the user: none
	if _, err := front.Submit(ctx, "touch here"); err != nil {
		t.Fatal(err)
	}
	waitGate(t, front)
	waitCount(t, out, "\a", 1, "a gate opened in front of the user")

	// the background gate answered; a long turn's end rings, a short one's not
	answer(t, back)
	waitIdleSession(t, back)
	if _, err := back.Submit(ctx, "sleep 0.5"); err != nil {
		t.Fatal(err)
	}
	waitIdleSession(t, back)
	waitCount(t, out, "\a", 2, "a long turn ended in the background")
	if _, err := back.Submit(ctx, "true"); err != nil {
		t.Fatal(err)
	}
	waitIdleSession(t, back)
	waitCount(t, out, "\a", 2, "a short turn ended in the background")
	f.quit()
}

func waitGate(t *testing.T, s *rig.Session) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if g := s.Status().Gate; g != nil {
			return g.ID
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no gate opened")
	return ""
}

func answer(t *testing.T, s *rig.Session) {
	t.Helper()
	if err := s.RespondGate(context.Background(), waitGate(t, s), true, rig.ThisProcess("test")); err != nil {
		t.Fatal(err)
	}
}

func waitIdleSession(t *testing.T, s *rig.Session) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.Status().Turn != nil {
		if time.Now().After(deadline) {
			t.Fatal("the turn did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// With notify = "osc9", a gate in the background is one OSC 9 desktop
// notification naming the session and the gate's question, with what the
// session printed in it reduced to printable text.
func TestFlowNotifyOSC9(t *testing.T) {
	st := memstoreNew()
	opts := flowOptions(t, st)
	out := &lockedBuffer{}
	opts.Notify, opts.NotifyTo = "osc9", out
	r := testRig(t, st, opts, rig.WithProfile(opts.Profiles["gated"]))
	ctx := context.Background()
	var sessions []*rig.Session
	for _, title := range []string{"deploy\x1b]0;evil\x07", "front"} {
		s, err := r.NewSession(ctx, rig.WithTitle(title))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Shutdown(context.Background()) })
		sessions = append(sessions, s)
	}
	f := startFlow(t, st, opts)
	f.waitView("front", "deploy")
	if _, err := sessions[0].Submit(ctx, "touch prod"); err != nil {
		t.Fatal(err)
	}
	waitCount(t, out, "\x1b]9;", 1, "a gate opened in the background")
	want := "\x1b]9;looprig: deploy ]0;evil : waits at a gate: run command matching gate policy \"touch\"? touch prod\x07"
	if got := out.String(); got != want {
		t.Fatalf("written %q, want %q", got, want)
	}
	f.quit()
}
