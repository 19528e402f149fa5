package tui

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

// Sessions outlive the TUI: they run in hosts, and the TUI attaches to
// them and detaches from them.

// createSession creates a session with n (title) and waits until the TUI
// is attached to it.
func (f *flow) createSession(title string) string {
	f.t.Helper()
	f.typeText("n")
	f.waitView("New session")
	f.typeText(title)
	f.key("enter")
	return f.selectedLive()
}

// waitJournal waits until session id's journal has an event cond accepts.
func waitJournal(t *testing.T, st storage.Store, id, what string, cond func(event.Event) bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		for _, r := range records(t, st, id) {
			if r.Kind == journal.KindEvent && cond(r.Event) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the journal has no %s:%s", what, describeRecords(records(t, st, id)))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func isTurnDone(index int) func(event.Event) bool {
	started := ""
	return func(ev event.Event) bool {
		switch e := ev.(type) {
		case event.TurnStarted:
			if e.Index == index {
				started = e.TurnID
			}
		case event.TurnDone:
			return started != "" && e.TurnID == started
		}
		return false
	}
}

// TestFlowDetachKeepsRunning: q while a turn runs asks, then detaches: the
// host keeps the session, the turn ends with no TUI attached and its end
// lands in the journal. A new TUI on the same store lists the session live
// with the host's pid, attaches to it when it is opened (the history from
// the journal, then the host's live stream), and its turns run.
func TestFlowDetachKeepsRunning(t *testing.T) {
	st := memstore.New()
	opts, th := flowEnv(t, st)
	f := startFlow(t, st, opts)
	id := f.createSession("outlives")
	// The turn goes on until the test says so, after the TUI quit.
	gate := filepath.Join(t.TempDir(), "go-on")
	f.typeText("i")
	f.typeText("echo started-$(echo here); until [ -e " + gate + " ]; do sleep 0.05; done; echo done-$(echo while-away)")
	f.key("enter")
	f.waitView("started-here")
	f.typeText("q")
	f.waitView("1 turn still running", "Quitting detaches")
	f.key("right")
	f.key("enter")
	f.finished()
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitJournal(t, st, id, "TurnDone of turn 0", isTurnDone(0))
	if !journalHas(t, st, id, "done-while-away") {
		t.Error("the turn's output after the detach is not in the journal")
	}
	select {
	case <-th.host(id).done:
		t.Fatal("the host ended when the TUI quit")
	default:
	}

	pid := strconv.Itoa(os.Getpid()) // the hosts run in this process
	g := startFlow(t, st, opts)
	g.waitView("● live", "live · pid "+pid, "1 live in the background")
	if got := g.selectedLive(); got != id {
		t.Fatalf("attached to %s, want %s", got, id)
	}
	g.waitView("started-here", "done-while-away", "turn 0 done: exit 0", "live · pid "+pid+" (attached)")
	g.typeText("i")
	g.typeText("echo tail-after-attach")
	g.key("enter")
	g.waitView("tail-after-attach", "turn 1 done: exit 0")
	g.quit()
	if infos, _ := rig.ListSessions(context.Background(), st); len(infos) != 1 || infos[0].State != rig.StateLive {
		t.Fatalf("after the second TUI quit: %+v", infos)
	}
}

// TestFlowTwoTUIsOneSession: two TUIs attached to one session both see
// what either runs.
func TestFlowTwoTUIsOneSession(t *testing.T) {
	st := memstore.New()
	opts := flowOptions(t, st)
	a := startFlow(t, st, opts)
	id := a.createSession("shared")
	b := startFlow(t, st, opts)
	if got := b.selectedLive(); got != id {
		t.Fatalf("B attached to %s, want %s", got, id)
	}
	a.typeText("i")
	a.typeText("echo from-a")
	a.key("enter")
	a.waitView("from-a", "turn 0 done: exit 0")
	b.waitView("from-a", "turn 0 done: exit 0")
	b.typeText("i")
	b.typeText("echo from-b")
	b.key("enter")
	b.waitView("from-b", "turn 1 done: exit 0")
	a.waitView("from-b", "turn 1 done: exit 0")
	a.quit()
	b.waitView("from-b") // B is still attached after A left
	b.inspect(func(m Model) {
		if !m.sessions[id].takesCommands() {
			t.Error("B lost the session when A detached")
		}
	})
	b.quit()
}

// TestFlowShutdownStopsHost: X asks the host to shut the session down: it
// journals SessionStopped, releases the lease, removes its socket and ends.
func TestFlowShutdownStopsHost(t *testing.T) {
	st := memstore.New()
	opts, th := flowEnv(t, st)
	f := startFlow(t, st, opts)
	id := f.createSession("to stop")
	h := th.host(id)
	if _, err := os.Stat(h.socket); err != nil {
		t.Fatalf("the host's socket: %v", err)
	}
	f.typeText("X")
	f.waitView("Shut down session", "Its host (pid "+strconv.Itoa(os.Getpid())+") stops")
	f.key("right")
	f.key("enter")
	f.waitModel("the detach", func(m Model) bool { return !m.sessions[id].attached() && !m.busy() })
	f.waitView("session stopped cleanly")
	h.wait(t, 10*time.Second)
	if h.err != nil {
		t.Errorf("Serve: %v", h.err)
	}
	recs := records(t, st, id)
	if last := recs[len(recs)-1]; last.Kind != journal.KindEvent || last.Event.Type() != event.TypeSessionStopped {
		t.Fatalf("the journal does not end with SessionStopped:%s", describeRecords(recs))
	}
	if _, err := os.Stat(h.socket); !os.IsNotExist(err) {
		t.Errorf("the socket after the shutdown: %v", err)
	}
	if a, r := st.LeaseStats(storage.SessionName(id)); a != r {
		t.Errorf("lease acquired %d times, released %d", a, r)
	}
	f.waitView("○ idle")
	f.quit()
}

// TestFlowHostGone: the host ends while attached (told to stop, as by a
// signal): the TUI detaches, says so, and the listing shows how the
// session ended.
func TestFlowHostGone(t *testing.T) {
	st := memstore.New()
	opts, th := flowEnv(t, st)
	f := startFlow(t, st, opts)
	id := f.createSession("short-lived")
	h := th.host(id)
	h.stop()
	h.wait(t, 10*time.Second)
	f.waitModel("the detach", func(m Model) bool { return !m.sessions[id].attached() })
	f.waitView("detached: host pid "+strconv.Itoa(os.Getpid())+" went away", "○ idle")
	f.typeText("i")
	f.waitView("(not live)", "enter restores it and runs this")
	f.key("esc")
	f.quit()
}

// TestFlowDriftThroughHost: the drift rejection comes from the host as a
// *host.RemoteError (not the runtime's *rig.RestoreRejectedError); the
// dialog reads the changes from its classification, and the accept starts
// the host again with AcceptDrift. (TestFlowDriftAcceptedOnce goes on from
// there.)
func TestFlowDriftThroughHost(t *testing.T) {
	st := memstore.New()
	opts := flowOptions(t, st)
	s, err := testRig(t, st, opts).NewSession(context.Background(), rig.WithTitle("drifting"))
	if err != nil {
		t.Fatal(err)
	}
	id := s.SessionID().String()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	changed := rig.DefaultProfile()
	changed.Engine = "demo"
	opts.Profiles["default"] = changed

	f := startFlow(t, st, opts)
	f.waitView("drifting", "idle")
	f.typeText("r")
	f.waitView("config_rejected", "engine", "shell", "demo")
	f.inspect(func(m Model) {
		err := m.sessions[id].failed.err
		var remote *host.RemoteError
		var rejected *rig.RestoreRejectedError
		if !errors.As(err, &remote) || errors.As(err, &rejected) {
			t.Errorf("the restore failure is %T, want the host's *host.RemoteError", err)
		}
	})
	f.typeText("r")
	screen := f.waitView("Accept configuration drift", "Accept and restore")
	if !strings.Contains(screen, "engine") || !strings.Contains(screen, "warn") {
		t.Errorf("the dialog does not list the change:\n%s", screen)
	}
	f.key("right")
	f.key("enter")
	f.selectedLive()
	f.waitView("configuration adopted by tui confirm")
	f.quit()
}

// TestProbeHolders: a session held by a process on this machine is probed
// (host.Probe, in a command); when a host answers it is live with the
// host's pid and is not probed again for that holding; when none answers
// (a host restoring it holds the lease before it serves) it is probed
// again after reprobeEvery. A holder on another machine is never probed.
func TestProbeHolders(t *testing.T) {
	now := fixedNow
	m := newModel(Options{Store: memstoreNew(), StoreKey: "probe-test", Now: func() time.Time { return now }}, asciiRenderer())
	m.send(tea.WindowSizeMsg{Width: 120, Height: 30})
	here, elsewhere := fakeID(1), fakeID(2)
	list := func() {
		m.send(listMsg{infos: []rig.SessionInfo{
			{ID: here, State: rig.StateHeld, Title: "here", Epoch: 2, Holder: &storage.Holder{PID: 99, Host: m.h.hostname}, Created: fixedNow},
			{ID: elsewhere, State: rig.StateHeld, Title: "elsewhere", Epoch: 5, Holder: &storage.Holder{PID: 7, Host: "other-" + m.h.hostname}, Created: fixedNow.Add(-time.Minute)},
		}})
	}
	list()
	v, w := m.sessions[here], m.sessions[elsewhere]
	if v.listing.probe.key != "2/99" || !v.listing.probe.at.Equal(now) || w.listing.probe.key != "" {
		t.Fatalf("after the first listing: probes %+v, %+v", v.listing.probe, w.listing.probe)
	}
	m.send(probedMsg{id: here, key: "2/99", err: host.ErrNotHosted})
	if v.state() != rig.StateHeld {
		t.Fatalf("no host answered, state %s", v.state())
	}
	now = now.Add(time.Second)
	list()
	if !v.listing.probe.at.Equal(fixedNow) {
		t.Fatal("probed again before reprobeEvery")
	}
	now = now.Add(reprobeEvery)
	list()
	if !v.listing.probe.at.Equal(now) {
		t.Fatal("not probed again after reprobeEvery")
	}
	m.send(probedMsg{id: here, key: "2/99", pid: 4242})
	if v.state() != rig.StateHeld {
		t.Fatal("a host that does not hold the lease counts")
	}
	now = now.Add(reprobeEvery)
	list()
	m.send(probedMsg{id: here, key: "2/99", pid: 99})
	if v.state() != rig.StateLive || !strings.Contains(m.View(), "live · pid 99") || !strings.Contains(m.View(), "1 live in the background") {
		t.Fatalf("a host answered: state %s\n%s", v.state(), m.View())
	}
	at := v.listing.probe.at
	now = now.Add(10 * reprobeEvery)
	list()
	if !v.listing.probe.at.Equal(at) {
		t.Fatal("a holding a host answered for was probed again")
	}
	// A stale answer (for a holding that changed) is dropped.
	m.send(probedMsg{id: here, key: "1/98", pid: 1})
	if v.hostPID() != 99 {
		t.Fatalf("a stale probe changed the pid to %d", v.hostPID())
	}
}

// A shutdown (X) whose reply lost the race with the connection's end (the
// host stopped the session and closed; the client closed on the stream's
// end) is a clean shutdown, not an error; one that failed is an error.
func TestShutdownWithoutItsReply(t *testing.T) {
	for _, c := range []struct {
		name    string
		stopped bool
		err     error
		want    string
	}{
		{"client closed after SessionStopped", true, host.ErrClientClosed, "shut down a0000001 cleanly"},
		{"host said it stopped the session", false, &host.HostClosedError{Reason: host.ReasonSessionStopped}, "shut down a0000001 cleanly"},
		{"client closed, the session not stopped", false, host.ErrClientClosed, "shutdown of"},
		{"the host refused", true, errors.New("engine stuck"), "shutdown of"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := fakeModel(t, 120, 40, asciiRenderer())
			m = withMixedList(t, m)
			v := m.sessions[fakeID(1)]
			if c.stopped {
				m.send(streamMsg{id: v.id, gen: v.live.gen, envs: []event.Envelope{{Seq: 11, At: fixedNow, Event: event.SessionStopped{}}}})
			}
			m.send(shutdownMsg{id: v.id, c: v.live.c, err: c.err})
			if view := m.View(); !strings.Contains(view, c.want) {
				t.Errorf("the status does not say %q:\n%s", c.want, view)
			}
		})
	}
}
