package tui

import (
	"context"
	"strings"
	"testing"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

// adoptionsIn counts the ConfigurationAdopted events of session id.
func adoptionsIn(t *testing.T, st *memstore.Store, id string) int {
	t.Helper()
	rp, err := journal.NewEventReplayer(context.Background(), st, storage.SessionName(id), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rp.Close()
	n := 0
	for rp.Next() {
		if _, ok := rp.Envelope().Event.(event.ConfigurationAdopted); ok {
			n++
		}
	}
	if err := rp.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// The drift dialog is shown once per drift: accepted, the adopted
// configuration is the session's baseline, and the next restore under the
// same profile goes through without asking (and journals no adoption).
func TestFlowDriftAcceptedOnce(t *testing.T) {
	st := memstore.New()
	opts := flowOptions(t, st)
	r := testRig(t, st, opts)
	s, err := r.NewSession(context.Background(), rig.WithTitle("drifting"))
	if err != nil {
		t.Fatal(err)
	}
	id := s.SessionID().String()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The default profile now runs the demo engine: warn-level drift.
	changed := rig.DefaultProfile()
	changed.Engine = "demo"
	opts.Profiles["default"] = changed

	f := startFlow(t, st, opts)
	f.waitView("drifting", "idle")
	f.typeText("r")
	f.waitView("config_rejected", "engine")
	f.typeText("r")
	f.waitView("Accept configuration drift", "Accept and restore")
	f.key("right")
	f.key("enter")
	f.selectedLive()
	f.waitView("configuration adopted by tui confirm")
	if n := adoptionsIn(t, st, id); n != 1 {
		t.Fatalf("%d ConfigurationAdopted after accepting, want 1", n)
	}

	f.typeText("X")
	f.waitView("Shut down session")
	f.key("right")
	f.key("enter")
	f.waitModel("the shutdown", func(m Model) bool { return !m.sessions[id].attached() && !m.busy() })

	f.typeText("r")
	f.selectedLive()
	f.inspect(func(m Model) {
		if m.dialog != nil {
			t.Errorf("a dialog opened on the second restore:\n%s", m.View())
		}
		if v := m.sessions[id]; v.failed != nil {
			t.Errorf("second restore failed: %v", v.failed.err)
		}
	})
	if screen := f.waitView("restored here at epoch 4"); strings.Count(screen, "configuration adopted") != 1 {
		t.Errorf("the events pane shows %d adoptions, want the one accepted:\n%s", strings.Count(screen, "configuration adopted"), screen)
	}
	if n := adoptionsIn(t, st, id); n != 1 {
		t.Fatalf("%d ConfigurationAdopted after the second restore, want still 1", n)
	}
	f.quit()
}
