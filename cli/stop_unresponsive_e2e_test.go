package cli_test

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stop of a host that does not answer (stopped with SIGSTOP) gives up
// within the shutdown grace and a second with HostUnresponsiveError,
// naming the host and the lease break that takes the session from it;
// once the host runs again, stop works.
func TestStopUnresponsiveHost(t *testing.T) {
	h := newHarness(t)
	id, pid := h.detached()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	waitStopped(t, pid) // or a thread not stopped yet may still answer the hello

	start := time.Now()
	r := h.run("stop", id, "--json")
	took := time.Since(start)
	e := decode[struct {
		Error struct {
			Type    string `json:"type"`
			Kind    string `json:"kind"`
			PID     int    `json:"pid"`
			Request string `json:"request"`
			Hint    string `json:"hint"`
		} `json:"error"`
	}](t, r.stdout)
	if r.code != 4 || e.Error.Type != "HostUnresponsiveError" || e.Error.Kind != "host_unresponsive" || e.Error.PID != pid ||
		e.Error.Request != "hello" || !strings.Contains(e.Error.Hint, "lease break "+id[:8]+" --yes") ||
		!strings.Contains(e.Error.Hint, "kill -CONT "+strconv.Itoa(pid)) {
		t.Errorf("stop of a stopped host: exit %d, %s", r.code, r.stdout)
	}
	if took > 10500*time.Millisecond {
		t.Errorf("stop of a stopped host took %s, want within the grace (8 s) and a second", took)
	}
	r = h.run("stop", id)
	if r.code != 4 || !strings.Contains(r.stderr, "said nothing") || !strings.Contains(r.stderr, "hint:") {
		t.Errorf("stop of a stopped host, for people: exit %d\n%s", r.code, r.stderr)
	}
	t.Logf("stop said:\n%s", r.stderr)

	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	h.must(0, "stop", id)
	waitExit(t, pid)
}

// waitStopped waits until process pid is stopped (state T in
// /proc/PID/stat): every thread of it has taken the SIGSTOP.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Skipf("cannot tell whether process %d is stopped: %v", pid, err)
		}
		if i := bytes.LastIndexByte(b, ')'); i > 0 && bytes.HasPrefix(bytes.TrimSpace(b[i+1:]), []byte("T")) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not stop: %s", pid, b)
		}
	}
}
