package tui

import (
	"strings"
	"testing"

	"looprig/rig/storage/memstore"
)

// i on a session that is not live opens the input line all the same, so
// that what is typed next never runs as key bindings: on an idle session
// enter restores it and runs the line once it is live; the keys typed
// meanwhile (r, n, t: bindings of their own) went into the line only.
func TestFlowInputOnASessionNotLive(t *testing.T) {
	st := memstore.New()
	f := startFlow(t, st, flowOptions(t, st))
	id := f.newLiveSession()
	f.typeText("X")
	f.waitView("Shut down session")
	f.key("right")
	f.key("enter")
	f.waitModel("the shutdown", func(m Model) bool { return !m.sessions[id].attached() && !m.busy() })

	f.typeText("i")
	f.waitView("(not live)", "enter restores it and runs this")
	f.typeText("echo ran-after-restore; true n t r")
	f.inspect(func(m Model) {
		if m.dialog != nil || m.sessions[id].busy != notBusy {
			t.Fatalf("keys typed into the line ran as bindings:\n%s", m.View())
		}
	})
	f.key("enter")
	f.waitView("ran-after-restore", "turn 0 done: exit 0")
	f.inspect(func(m Model) {
		if v := m.sessions[id]; v.pendingInput != "" || !v.attached() {
			t.Fatalf("after the restore: pending %q, attached %v", v.pendingInput, v.attached())
		}
	})

	// Esc on such a line runs nothing, and leaves nothing pending.
	f.typeText("X")
	f.waitView("Shut down session")
	f.key("right")
	f.key("enter")
	f.waitModel("the second shutdown", func(m Model) bool { return !m.sessions[id].attached() && !m.busy() })
	f.typeText("i")
	f.waitView("(not live)")
	f.typeText("echo never")
	f.key("esc")
	f.waitModel("the line to close", func(m Model) bool { return m.input == nil })
	f.inspect(func(m Model) {
		if v := m.sessions[id]; v.pendingInput != "" || v.attached() || strings.Contains(m.View(), "never") {
			t.Fatalf("esc left %q pending (attached %v)", v.pendingInput, v.attached())
		}
	})
	f.quit()
}
