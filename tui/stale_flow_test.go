package tui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/storage/memstore"
)

// TestFlowMadeLiveElsewhere (issue 35, "a long-open TUI goes stale"): a
// session this TUI read while it was idle, and then left for another
// one, is made live by another process (as `looprig restore --detach` or
// `looprig run` in another terminal would), which runs a turn and then
// opens a gate in it. After the next listing, its row shows the running
// turn, then the gate, and needs:me lists it, as `ls` does; its journal,
// folded while it was idle, is older than its listing and says nothing
// of either.
func TestFlowMadeLiveElsewhere(t *testing.T) {
	st := memstore.New()
	opts, _ := flowEnv(t, st)
	ctx := context.Background()
	r := testRig(t, st, opts)
	var ids []string
	for _, title := range []string{"the other one", "looked at idle"} {
		s, err := r.NewSession(ctx, rig.WithTitle(title))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.SessionID().String())
		if err := s.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	idle := ids[1]

	f := startFlow(t, st, opts)
	f.waitModel("the idle session read", func(m Model) bool {
		v := m.list.selected()
		return v != nil && v.id == idle && v.journal.state.loaded()
	})
	f.key("down")
	f.waitModel("the other session selected", func(m Model) bool { return m.list.selected() != nil && m.list.selected().id == ids[0] })

	// Another process restores it and runs a turn that waits for a file,
	// then one the gated profile asks about.
	gated := rig.DefaultProfile()
	gated.Name, gated.GatePolicy = "gated", []string{"touch"}
	other := testRig(t, st, opts, rig.WithProfile(gated))
	s, err := other.RestoreSession(ctx, uuid.MustParse(idle))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	goOn := filepath.Join(t.TempDir(), "go-on")
	if _, err := s.Submit(ctx, "until [ -e "+goOn+" ]; do sleep 0.05; done"); err != nil {
		t.Fatal(err)
	}

	row := func(m Model) string {
		for _, l := range strings.Split(m.View(), "\n") {
			if strings.Contains(l, "looked at idle") {
				return l
			}
		}
		return ""
	}
	f.waitModel("the running turn on its row (ls: "+lsTurn(t, st, idle)+")", func(m Model) bool {
		mark, _ := turnMark(m.attn.seen, m.sessions[idle], m.now())
		return strings.HasPrefix(mark, "▶") && strings.Contains(row(m), "▶")
	})

	if err := os.WriteFile(goOn, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitIdleSession(t, s)
	if _, err := s.Submit(ctx, "touch "+filepath.Join(t.TempDir(), "x")); err != nil {
		t.Fatal(err)
	}
	f.waitModel("the gate on its row and in needs:me (ls: "+lsTurn(t, st, idle)+")", func(m Model) bool {
		v := m.sessions[idle]
		mark, _ := turnMark(m.attn.seen, v, m.now())
		needs := false
		for _, n := range m.attn.needing(m.list.rows) {
			needs = needs || n == v
		}
		return strings.HasPrefix(mark, "? gate") && strings.Contains(row(m), "? gate") && needs
	})
	f.typeText("/" + needsFilter)
	f.key("enter")
	f.waitView("looked at idle", "? gate")
	f.inspect(func(m Model) {
		if strings.Contains(m.View(), "the other one") {
			t.Errorf("needs:me lists the session that needs nothing:\n%s", m.View())
		}
	})
	f.quit()
}

// lsTurn is what `ls` says of session id's turn and gate.
func lsTurn(t *testing.T, st *memstore.Store, id string) string {
	t.Helper()
	infos, err := rig.ListSessions(context.Background(), st)
	if err != nil {
		return err.Error()
	}
	for _, i := range infos {
		if i.ID == id {
			return "turn " + i.OpenTurn + " gate " + i.OpenGate
		}
	}
	return "not listed"
}
