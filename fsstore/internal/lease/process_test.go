package lease

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"looprig/rig/storage"
)

// While a helper process holds the name the parent is refused with the
// helper's epoch and pid; once the helper is SIGKILLed the parent gets the
// next epoch on its first try: the kernel dropped the lock with the
// process, nothing waits for a timeout.
func TestCrossProcessHeldThenKilled(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 0, "")
	first := mustAcquire(t, m, dir, "sessions/x")
	mustRelease(t, first)

	h := startHelper(t, "hold", dir, "sessions/x")
	if h.epoch != 2 {
		t.Fatalf("helper epoch %d, want 2", h.epoch)
	}
	held := wantHeld(t, m, dir, "sessions/x", h.epoch)
	if held.Holder.PID != h.pid {
		t.Fatalf("holder pid %d, helper pid %d", held.Holder.PID, h.pid)
	}
	host, _ := os.Hostname()
	if held.Holder.Host != host {
		t.Fatalf("holder host %q, want %q", held.Holder.Host, host)
	}
	lockPath, epochPath := leasePaths(dir, "sessions/x")
	st, err := m.Probe(context.Background(), "sessions/x", lockPath, epochPath)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Held || st.Epoch != h.epoch || st.Holder.PID != h.pid {
		t.Fatalf("Probe while the helper holds: %+v", st)
	}

	h.kill(t)
	l := mustAcquire(t, m, dir, "sessions/x")
	if l.Epoch() != h.epoch+1 {
		t.Fatalf("epoch after the holder died: %d, want %d", l.Epoch(), h.epoch+1)
	}
	mustRelease(t, l)
}

// A Break from another process is seen by the holder's watchdog.
func TestBreakFromHelperProcess(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 0, "")
	l := mustAcquire(t, m, dir, "sessions/brk")
	h := startHelper(t, "break", dir, "sessions/brk")
	if h.epoch != l.Epoch()+1 {
		t.Fatalf("breaker epoch %d, want %d", h.epoch, l.Epoch()+1)
	}
	lost := waitLost(t, l)
	if lost.Reason != storage.LossReplaced || lost.NewEpoch != h.epoch {
		t.Fatalf("cause %+v, want replaced by epoch %d", lost, h.epoch)
	}
	mustRelease(t, l) // must not free the breaker
	held := wantHeld(t, m, dir, "sessions/brk", h.epoch)
	if held.Holder.PID != h.pid {
		t.Fatalf("holder %+v, want the breaker pid %d", held.Holder, h.pid)
	}
	h.stdin.Close() // the helper releases and exits
	if err := h.wait(t); err != nil {
		t.Fatalf("breaker: %v; stderr:\n%s", err, h.stderr)
	}
	l2 := mustAcquire(t, m, dir, "sessions/brk")
	if l2.Epoch() != h.epoch+1 {
		t.Fatalf("epoch %d, want %d", l2.Epoch(), h.epoch+1)
	}
	mustRelease(t, l2)
}

// Four processes take one name 500 times in all. Each holder checks and
// sets a marker file and appends its epoch to a shared log; the epochs must
// come out as exactly 1..500 in log order, and no holder may ever see
// another inside its critical section.
func TestCrossProcessLeaseRace(t *testing.T) {
	const (
		procs = 4
		each  = 125
	)
	dir := t.TempDir()
	marker := filepath.Join(dir, "holder")
	logPath := filepath.Join(dir, "epochs.log")
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	type proc struct {
		pid    int
		stderr *strings.Builder
		done   chan error
	}
	var ps []proc
	for i := 0; i < procs; i++ {
		cmd := helperCmd(t, "race", dir, "sessions/race",
			envCount+"="+strconv.Itoa(each), envMarker+"="+marker, envLog+"="+logPath)
		p := proc{stderr: new(strings.Builder), done: make(chan error, 1)}
		cmd.Stderr = p.stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		p.pid = cmd.Process.Pid
		go func() { p.done <- cmd.Wait() }()
		ps = append(ps, p)
	}
	for _, p := range ps {
		select {
		case err := <-p.done:
			if err != nil {
				t.Fatalf("racer pid %d: %v; stderr:\n%s", p.pid, err, p.stderr)
			}
		case <-time.After(helperTimeout):
			t.Fatalf("racer pid %d did not finish within %v", p.pid, helperTimeout)
		}
	}
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	perPID := map[int]int{}
	var last uint64
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var epoch uint64
		var pid int
		if _, err := fmt.Sscanf(sc.Text(), "%d %d", &epoch, &pid); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		n++
		if epoch != last+1 {
			t.Fatalf("log line %d: epoch %d after %d (want strictly increasing, unique, gap-free)", n, epoch, last)
		}
		last = epoch
		perPID[pid]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n != procs*each {
		t.Fatalf("%d grants logged, want %d", n, procs*each)
	}
	for _, p := range ps {
		if perPID[p.pid] != each {
			t.Fatalf("pid %d logged %d grants, want %d", p.pid, perPID[p.pid], each)
		}
	}
	if got := readEpoch(t, dir, "sessions/race"); got != uint64(n) {
		t.Fatalf("epoch file %d after %d grants", got, n)
	}
	if b, _ := os.ReadFile(marker); len(b) != 0 {
		t.Fatalf("marker left as %q", b)
	}
}
