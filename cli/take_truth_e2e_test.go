package cli_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A take that gives up (its --timeout passes while the holder's turn
// runs, without --interrupt) withdraws its request, and the holder calls
// the hand-over off: when the turn ends later, the session neither hands
// over nor shuts down; it stays live in its host, serving turns.
func TestTakeThatGaveUpLeavesTheSessionLive(t *testing.T) {
	a, b := twoHomesOnNATS(t)
	id, pid, ws := a.detachedIn()
	turn := strings.TrimSpace(a.must(0, "run", id, "--detach", "--", "echo started && while [ ! -e go ]; do sleep 0.05; done && echo finished").stdout)
	a.waitLog(id, "TurnOutput")

	r := b.run("take", id, "--timeout", "2s", "--json")
	e := decode[errorShape](t, r.stdout)
	if r.code != 4 || e.Error.Type != "HandOffTimeoutError" || e.Error.Kind != "handoff_timeout" {
		t.Fatalf("take that times out: exit %d, %s", r.code, r.stdout)
	}
	if !strings.Contains(r.stdout, "lease break "+id[:8]) || !strings.Contains(r.stdout, "withdrawn") {
		t.Errorf("take that times out does not say the request is withdrawn and how to force it: %s", r.stdout)
	}
	time.Sleep(2500 * time.Millisecond) // the holder looks every second
	if err := os.WriteFile(filepath.Join(ws, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	a.waitLog(id, "SessionIdle")
	time.Sleep(2500 * time.Millisecond) // a hand-over still pending would have begun
	if row := a.row(id); row.State != "live" || row.Holder == nil || row.Holder.PID != pid {
		t.Fatalf("after the take gave up and the turn ended, the session is %+v; want live in host %d", row, pid)
	}
	if r := a.must(0, "run", id, "--", "echo still-serving"); r.stdout != "still-serving\n" {
		t.Errorf("a turn after the take gave up: %q", r.stdout)
	}
	for _, rec := range a.log(id) {
		if rec.Type == "HandedOff" || rec.Type == "SessionStopped" {
			t.Errorf("the journal has %s after the take gave up", rec.Type)
		}
		if rec.Type == "TurnDone" && rec.TurnID == turn && (rec.ExitCode == nil || *rec.ExitCode != 0) {
			t.Errorf("the awaited turn ended %+v", rec)
		}
	}
}

// On NATS a stopped (SIGSTOP) holder does not answer, and its lease
// expires: take then restores the session, and says the truth: no
// hand-over happened, its lease expired, and the workspace is the last
// checkpoint. It never says "took over from".
func TestTakeFromStoppedHolderSaysItsLeaseExpired(t *testing.T) {
	a, b := twoHomesOnNATS(t)
	id, pid := a.detached()
	a.must(0, "run", id, "--", "printf 'kept\n' > kept.txt")
	a.waitLog(id, "SessionIdle")
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL); syscall.Kill(pid, syscall.SIGCONT) })

	r := b.run("take", id, "--timeout", "25s")
	if r.code != 0 {
		t.Fatalf("take from a stopped holder whose lease expires: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("take said:\n%s%s", r.stdout, r.stderr)
	if strings.Contains(r.stdout, "took session") || !strings.Contains(r.stdout, "was not handed over") ||
		!strings.Contains(r.stdout, "lease expired") || !strings.Contains(r.stdout, "last checkpoint") {
		t.Errorf("take from a stopped holder says:\n%s", r.stdout)
	}
	recs := b.log(id)
	for _, rec := range recs {
		if rec.Type == "HandedOff" {
			t.Errorf("the journal records a hand-over that did not happen: %+v", rec)
		}
	}
	row := b.row(id)
	if row.State != "live" || row.Holder == nil || row.Holder.PID == pid {
		t.Fatalf("after the take, the session is %+v", row)
	}
	if last := recs[len(recs)-1]; last.Type != "RestoreDone" || !strings.HasPrefix(last.Holder, strconv.Itoa(row.Holder.PID)+"@") {
		t.Errorf("the journal ends %+v, want RestoreDone naming B's host %d", last, row.Holder.PID)
	}
	if r := b.must(0, "run", id, "--", "cat kept.txt"); r.stdout != "kept\n" {
		t.Errorf("the last checkpoint on B: %q", r.stdout)
	}
}
