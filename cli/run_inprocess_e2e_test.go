package cli_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// When no host can serve the session here (the socket directory is
// unusable: its looprig level is not mode 0700), run says so on stderr
// and runs the turn in this process: restore, run, shut down. run
// --detach, which needs a host, fails.
func TestRunWithoutHost(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	if err := os.Mkdir(filepath.Join(h.runtime, "looprig"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := h.must(0, "run", id, "--", "echo here")
	if r.stdout != "here\n" || !strings.Contains(r.stderr, "no host can serve session "+id[:8]+" on this machine: refusing socket directory") ||
		!strings.Contains(r.stderr, "running the turn in this process instead") || !strings.Contains(r.stderr, "turn 0 exited 0") {
		t.Fatalf("run without a host: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	if row := h.row(id); row.State != "idle" || row.Epoch != 2 {
		t.Fatalf("after run in process: %+v, want idle at epoch 2", row)
	}
	recs := afterLastFence(h.log(id))
	if !inOrder(types(recs), []string{"fence", "RestoreDone", "TurnStarted", "TurnDone", "shutdown", "SessionStopped"}) {
		t.Fatalf("journal of the run: %v", types(recs))
	}

	r = h.must(125, "run", id, "--detach", "--json", "--", "echo there")
	if e := decode[errorShape](t, r.stdout); !strings.Contains(e.Error.Message, "no host can serve session") {
		t.Fatalf("run --detach without a host: %s", r.stdout)
	}
	if row := h.row(id); row.State != "idle" || row.Epoch != 2 {
		t.Fatalf("after the refused run --detach: %+v, want idle at epoch 2, untouched", row)
	}
}

// run --in-process runs the turn in this process even when a host could
// serve it, and leaves the session idle; on a session live in a host it is
// refused (a usage error: the host runs that session's turns), and so is
// --in-process with --detach.
func TestRunInProcess(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	r := h.must(0, "run", "--in-process", id, "--", "echo here")
	if r.stdout != "here\n" || strings.Contains(r.stderr, "host") {
		t.Fatalf("run --in-process: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	if row := h.row(id); row.State != "idle" {
		t.Fatalf("after run --in-process: %+v, want idle", row)
	}
	h.must(2, "run", "--in-process", "--detach", id, "--", "echo no")

	live, pid := h.detached()
	r = h.must(2, "run", "--in-process", live, "--", "echo no")
	if !strings.Contains(r.stderr, "is live in host pid "+strconv.Itoa(pid)) || !strings.Contains(r.stderr, "stop "+live[:8]) {
		t.Fatalf("run --in-process of a live session: %q", r.stderr)
	}
	if row := h.row(live); row.State != "live" || row.Holder == nil || row.Holder.PID != pid {
		t.Fatalf("after the refused run --in-process: %+v, want live in host %d", row, pid)
	}
}
