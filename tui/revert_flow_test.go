package tui

import (
	"os"
	"path/filepath"
	"testing"

	"looprig/rig/storage/memstore"
)

// u in the changes view (c) puts the workspace back as it was before the
// turn shown, after a confirm: its files as at the end of the turn
// before, what the turn made gone.
func TestFlowRevertFromTheChangesView(t *testing.T) {
	st := memstore.New()
	f := startFlow(t, st, flowOptions(t, st))
	id := f.newLiveSession()
	var ws string
	f.inspect(func(m Model) { ws = m.sessions[id].live.status.Workspace })
	f.submit(id, "echo one > f.txt")
	f.waitView("turn 0 done: exit 0")
	f.submit(id, "echo two > f.txt; echo new > g.txt")
	f.waitView("turn 1 done: exit 0")

	f.typeText("c")
	f.waitView("Changes of", "turn 1", "g.txt")
	f.typeText("u")
	f.waitView("Revert", "back as it was before turn 1")
	f.key("right")
	f.key("enter")
	f.waitView("workspace reverted to before turn 1")
	if b, err := os.ReadFile(filepath.Join(ws, "f.txt")); err != nil || string(b) != "one\n" {
		t.Fatalf("f.txt after the revert: %q, %v; want one", b, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "g.txt")); !os.IsNotExist(err) {
		t.Fatalf("g.txt, which turn 1 made, is still there: %v", err)
	}
	f.key("esc")
	f.quit()
}

// F in the changes view forks the session at the turn shown, after a
// confirm: a new session, live and selected, whose files are as after
// that turn; ] past the last turn says so and keeps the view.
func TestFlowForkFromTheChangesView(t *testing.T) {
	st := memstore.New()
	f := startFlow(t, st, flowOptions(t, st))
	id := f.newLiveSession()
	f.submit(id, "echo one > f.txt")
	f.waitView("turn 0 done: exit 0")
	f.submit(id, "echo two > f.txt; echo new > g.txt")
	f.waitView("turn 1 done: exit 0")

	f.typeText("c")
	f.waitView("Changes of", "turn 1", "g.txt")
	f.typeText("]")
	f.waitView("turn 1 is the last")
	f.typeText("[")
	f.waitView("Changes of", "turn 0")
	f.typeText("F")
	f.waitView("Fork", "was after turn 0")
	f.key("right")
	f.key("enter")
	var fork, ws string
	f.waitModel("the fork live", func(m Model) bool {
		for sid, v := range m.sessions {
			if sid != id && v.attached() {
				fork, ws = sid, v.live.status.Workspace
				return true
			}
		}
		return false
	})
	if b, err := os.ReadFile(filepath.Join(ws, "f.txt")); err != nil || string(b) != "one\n" {
		t.Fatalf("the fork's f.txt: %q, %v; want one (as after turn 0)", b, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "g.txt")); !os.IsNotExist(err) {
		t.Fatalf("the fork has g.txt, which turn 1 made: %v", err)
	}
	f.inspect(func(m Model) {
		if sel := m.list.selected(); sel == nil || sel.id != fork {
			t.Errorf("the fork is not selected")
		}
	})
	f.quit()
}
