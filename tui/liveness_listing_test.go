package tui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/rig"
	"looprig/rig/storage"
)

// A listing that says a holder on this machine serves a session (the
// lister's rig.WithLiveness) makes it live with no probe at all; one that
// says the holder is stopped shows it not answering, and only that one is
// probed again on an idle tick; an idle tick probes nothing else.
func TestListingLiveness(t *testing.T) {
	now := fixedNow
	m := newModel(Options{Store: memstoreNew(), StoreKey: "liveness-test", Now: func() time.Time { return now }}, asciiRenderer())
	m.send(tea.WindowSizeMsg{Width: 140, Height: 30})
	served, stopped := fakeID(1), fakeID(2)
	holder := func(pid int) *storage.Holder { return &storage.Holder{PID: pid, Host: m.h.hostname} }
	infos := []rig.SessionInfo{
		{ID: served, State: rig.StateLive, Title: "served", Epoch: 2, Holder: holder(99), Created: fixedNow},
		{ID: stopped, State: rig.StateHeld, Title: "stopped", Epoch: 3, Holder: holder(98), Created: fixedNow.Add(-time.Minute),
			Reason: rig.NotAnsweringReason(98), NotAnswering: true},
	}
	m.send(listMsg{infos: infos})
	v, w := m.sessions[served], m.sessions[stopped]
	if v.state() != rig.StateLive || v.hostPID() != 99 || v.listing.probe.asking {
		t.Fatalf("a session listed served: state %s, probe %+v", v.state(), v.listing.probe)
	}
	m.send(tea.WindowSizeMsg{Width: 90, Height: 30}) // the list alone: its HOLDER column shows
	if w.state() != rig.StateHeld || !strings.Contains(m.View(), "not answering ") {
		t.Fatalf("a session listed not answering: state %s\n%s", w.state(), m.View())
	}
	m.send(tea.WindowSizeMsg{Width: 140, Height: 30})
	m.keys("down")
	if !strings.Contains(m.View(), "held — not answering: its holder, pid 98, is stopped") {
		t.Fatalf("the detail of a session not answering does not say so\n%s", m.View())
	}
	if len(m.unserved) != 1 || !m.unserved[stopped] {
		t.Fatalf("unserved = %v, want the stopped one only", m.unserved)
	}
	now = now.Add(reprobeEvery)
	m.send(listMsg{infos: infos, same: true})
	if !w.listing.probe.asking || v.listing.probe.asking {
		t.Fatalf("an idle tick after reprobeEvery: probes %+v, %+v; want the stopped one probed only", v.listing.probe, w.listing.probe)
	}
	// It runs again and serves: live, and no longer looked at.
	m.send(probedMsg{id: stopped, key: "3/98", pid: 98})
	if w.state() != rig.StateLive || len(m.unserved) != 0 || strings.Contains(m.View(), "not answering") {
		t.Fatalf("after SIGCONT: state %s, unserved %v\n%s", w.state(), m.unserved, m.View())
	}
}

// The lister is asked about the holders of the rows on screen only (the
// selection's included), scrolled or not: the sessions whose liveness it
// asks between listings (rig.Lister.Show).
func TestShownIDsAreTheRowsOnScreen(t *testing.T) {
	m := withManySessions(fakeModel(t, 200, 30, asciiRenderer()), 300)
	n := m.list.rowsShown(m.listSpace())
	if n < 10 || n > 30 {
		t.Fatalf("%d rows shown in a 30-line window", n)
	}
	check := func(what string) {
		t.Helper()
		ids := m.list.shownIDs(m.listSpace())
		if len(ids) != n+1 || ids[0] != m.list.vis[m.list.top].id || ids[n-1] != m.list.vis[m.list.top+n-1].id ||
			ids[n] != m.list.selected().id {
			t.Fatalf("%s: shown %d ids from %s; want the %d rows from row %d (%s) and the selection",
				what, len(ids), ids[0], n, m.list.top, m.list.vis[m.list.top].id)
		}
		view := m.View()
		for _, id := range ids {
			if !strings.Contains(view, id[:8]) {
				t.Fatalf("%s: %s is not on the screen", what, id[:8])
			}
		}
	}
	check("the top")
	for range 150 {
		m.Update(keyMsg("j"))
	}
	if m.list.top == 0 {
		t.Fatal("150 rows down, the list did not scroll")
	}
	check("scrolled")
}
