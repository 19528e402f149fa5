package cli_test

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

type waitOut struct {
	TurnID   string `json:"turn_id"`
	End      string `json:"end"`
	ExitCode *int   `json:"exit_code"`
	Prompt   string `json:"prompt"`
	For      string `json:"for"`
}

// wait's outcomes and exit codes, on a live session (its host's events)
// and on sessions that are not running.
func TestWait(t *testing.T) {
	h := newHarness(t)
	id, pid := h.detached()

	// A turn started with run --detach: wait reports its end.
	started := decode[struct {
		TurnID string `json:"turn_id"`
	}](t, h.must(0, "run", id, "--detach", "--json", "--", "sleep 0.3; exit 3").stdout)
	// It exits as run would have: with the turn's exit code.
	w := decode[waitOut](t, h.must(3, "wait", id, "--json").stdout)
	if w.TurnID != started.TurnID || w.End != "done" || w.ExitCode == nil || *w.ExitCode != 3 {
		t.Fatalf("wait = %+v, want turn %s done with exit code 3", w, started.TurnID)
	}
	// It ended: waiting for it again, or for the last turn, answers at once.
	if w := decode[waitOut](t, h.must(3, "wait", id, "--json", "--turn", started.TurnID[:8]).stdout); w.End != "done" {
		t.Fatalf("wait --turn = %+v", w)
	}
	if r := h.must(3, "wait", id); !strings.Contains(r.stdout, "exited 3") {
		t.Fatalf("wait: %q", r.stdout)
	}
	h.must(0, "wait", id, "--for", "idle")
	h.must(2, "wait", id, "--for", "sometime")
	h.must(2, "wait", id, "--turn", "ffffffff")

	// A gate: the question comes back.
	h.must(0, "run", id, "--detach", "--", "echo x; rm -rf ./nothing-here")
	if w := decode[waitOut](t, h.must(0, "wait", id, "--for", "gate", "--json").stdout); !strings.Contains(w.Prompt, "rm -rf") {
		t.Fatalf("wait --for gate = %+v, want the gate's question", w)
	}
	// Not reached in time: 124.
	r := h.must(124, "wait", id, "--for", "idle", "--timeout", "300ms", "--json")
	if !strings.Contains(r.stdout, `"kind":"timeout"`) {
		t.Errorf("wait timeout: %s", r.stdout)
	}
	// Denied at the gate, the turn failed: wait exits 1, as run does.
	h.must(0, "gate", id, "deny")
	if w := decode[waitOut](t, h.must(1, "wait", id, "--json").stdout); w.End != "failed" {
		t.Fatalf("wait for a turn denied at its gate = %+v, want failed", w)
	}
	h.must(0, "run", id, "--detach", "--", "sleep 30") // busy again, for what follows

	// The host dies while wait waits: 5, crashed.
	p := h.start("wait", id, "--for", "idle")
	time.Sleep(300 * time.Millisecond)
	syscall.Kill(pid, syscall.SIGKILL)
	if code := p.wait(t, 20*time.Second); code != 5 {
		t.Fatalf("wait when the host died: exit %d, want 5 (crashed)", code)
	}
	// Not running: a gate cannot come (6), idle is not either (it crashed).
	h.must(5, "wait", id, "--for", "gate")

	// Another process takes the lease while wait waits: 4.
	id2, _ := h.detached()
	h.must(0, "run", id2, "--detach", "--", "sleep 30")
	p = h.start("wait", id2)
	time.Sleep(300 * time.Millisecond)
	h.must(0, "lease", "break", id2, "--yes")
	if code := p.wait(t, 20*time.Second); code != 4 {
		t.Fatalf("wait when the lease was broken: exit %d, want 4 (lease lost)", code)
	}

	// A session shut down cleanly: idle at once, no gate (6).
	idle := h.newSession()
	h.must(0, "wait", idle, "--for", "idle")
	h.must(6, "wait", idle, "--for", "gate")
	// It has run no turn, and none can start while it is not running.
	if r := h.must(6, "wait", idle); !strings.Contains(r.stderr, "not running") {
		t.Errorf("wait on a stopped session without turns: %q", r.stderr)
	}
}
