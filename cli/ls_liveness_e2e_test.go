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

// ls learns a held session's liveness without a connection to its host
// (host.HolderLiveness: the process table and the socket directory): a
// host that runs and serves lists live, and ls wakes it not once; a host
// stopped by SIGSTOP lists held and not answering, in ls and ls --json;
// SIGCONT makes it live again; SIGKILL makes it crashed.
func TestLsLivenessWithoutConnecting(t *testing.T) {
	h := newHarness(t)
	id, pid := h.detached()
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	if row := h.row(id); row.State != "live" || row.Reason != "" {
		t.Fatalf("ls of a serving host: %s %q, want live", row.State, row.Reason)
	}
	before := settledWakeups(t, pid)
	for range 5 {
		h.must(0, "ls")
		h.must(0, "ls", "--json")
	}
	if woke := wakeups(t, pid) - before; woke > 3 {
		t.Errorf("10 listings woke the host %d times: a listing connects to it", woke)
	}

	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, pid)
	row := h.row(id)
	if row.State != "held" || !strings.Contains(row.Reason, "not answering") || !strings.Contains(row.Reason, strconv.Itoa(pid)) {
		t.Errorf("ls --json of a stopped host: %s %q, want held, not answering", row.State, row.Reason)
	}
	out := h.must(0, "ls").stdout
	if !strings.Contains(out, "◆ held") || !strings.Contains(out, id[:8]+" held: not answering") {
		t.Errorf("ls of a stopped host does not say it is not answering:\n%s", out)
	}

	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if row := h.row(id); row.State != "live" || row.Reason != "" {
		t.Errorf("ls after SIGCONT: %s %q, want live", row.State, row.Reason)
	}

	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExit(t, pid)
	if row := h.row(id); row.State != "crashed" {
		t.Errorf("ls after SIGKILL of the host: %s, want crashed", row.State)
	}
}

// settledWakeups waits until host pid, just started, has trimmed its
// memory (once it has been idle for 2 s: host's idleTrimAfter) and then
// gone a second without a wakeup, and returns its wakeups then: the host's
// own work is not counted against the listings.
func settledWakeups(t *testing.T, pid int) int {
	t.Helper()
	time.Sleep(2500 * time.Millisecond)
	n := wakeups(t, pid)
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		time.Sleep(time.Second)
		m := wakeups(t, pid)
		if m == n {
			return m
		}
		n = m
	}
	return n
}

// wakeups is how many times process pid's threads were scheduled
// (voluntary and involuntary context switches, every thread).
func wakeups(t *testing.T, pid int) int {
	t.Helper()
	tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/status")
	if err != nil || len(tasks) == 0 {
		t.Skipf("cannot count the wakeups of process %d: %v", pid, err)
	}
	n := 0
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // a thread that ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				c, _ := strconv.Atoi(strings.TrimSpace(v))
				n += c
			}
		}
	}
	return n
}
