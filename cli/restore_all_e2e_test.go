package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// crashedSessions leaves n sessions crashed: live in hosts, the hosts
// killed with SIGKILL.
func (h *harness) crashedSessions(n int) []string {
	h.t.Helper()
	ids := make([]string, n)
	for i := range ids {
		id, pid := h.detached("--title", fmt.Sprintf("crashed %d", i))
		ids[i] = id
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, id := range ids { // the kernel drops a killed host's flock with its last thread
		h.waitState(id, "crashed")
	}
	return ids
}

// waitState waits until ls shows session id in state.
func (h *harness) waitState(id, state string) {
	h.t.Helper()
	waitUntil(h.t, "session "+id+" "+state, func() bool { return h.row(id).State == state })
}

type allCrashedLine struct {
	ID      string   `json:"id"`
	Outcome string   `json:"outcome"`
	Reason  string   `json:"reason"`
	Epoch   uint64   `json:"epoch"`
	Interr  []string `json:"interrupted"`
	Error   *struct {
		Kind string `json:"kind"`
	} `json:"error"`
}

// Two callers of restore --all-crashed at once: every crashed session is
// restored exactly once (the other caller skips it), its journal gains one
// restore, and every session ends idle.
func TestRestoreAllCrashedTwoCallers(t *testing.T) {
	h := newHarness(t)
	ids := h.crashedSessions(6)
	idle := h.newSession() // not crashed: left alone
	var wg sync.WaitGroup
	outs := make([][]byte, 2)
	codes := make([]int, 2)
	for i := range outs {
		wg.Go(func() {
			cmd := h.command(t.Context(), "restore", "--all-crashed", "--json")
			var out bytes.Buffer
			cmd.Stdout = &out
			err := cmd.Run()
			codes[i] = 0
			if ee, ok := err.(*exec.ExitError); ok {
				codes[i] = ee.ExitCode()
			} else if err != nil {
				t.Error(err)
			}
			outs[i] = out.Bytes()
		})
	}
	wg.Wait()
	restored := map[string]int{}
	for i, out := range outs {
		if codes[i] != 0 {
			t.Errorf("caller %d: exit %d\n%s", i, codes[i], out)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if line == "" {
				continue
			}
			var l allCrashedLine
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				t.Fatalf("caller %d: %q: %v", i, line, err)
			}
			switch l.Outcome {
			case "restored":
				restored[l.ID]++
				if len(l.Interr) != 0 || l.Epoch < 2 {
					t.Errorf("restored %+v", l)
				}
			case "skipped":
			default:
				t.Errorf("caller %d: %s", i, line)
			}
		}
	}
	for _, id := range ids {
		if restored[id] != 1 {
			t.Errorf("session %s restored %d times, want once", id, restored[id])
		}
		starts := 0
		for _, r := range h.log(id) {
			if r.Type == "RestoreStarted" {
				starts++
			}
		}
		if starts != 1 {
			t.Errorf("session %s: %d RestoreStarted records, want 1", id, starts)
		}
		if st := h.row(id).State; st != "idle" {
			t.Errorf("session %s is %s after the restore, want idle", id, st)
		}
	}
	if restored[idle] != 0 {
		t.Errorf("a session shut down cleanly was restored")
	}
	// Nothing left: the next call says so.
	if r := h.must(0, "restore", "--all-crashed"); !strings.Contains(r.stdout, "no crashed sessions") {
		t.Errorf("restore --all-crashed with none: %q", r.stdout)
	}
	h.must(2, "restore", "--all-crashed", ids[0])
	h.must(2, "restore", "--all-crashed", "--hold")
}

// --detach leaves each restored session live in its own host.
func TestRestoreAllCrashedDetach(t *testing.T) {
	h := newHarness(t)
	ids := h.crashedSessions(3)
	r := h.must(0, "restore", "--all-crashed", "--detach")
	if !strings.Contains(r.stdout, "restored 3 of 3 crashed sessions (0 skipped, 0 failed)") {
		t.Fatalf("restore --all-crashed --detach: %s", r.stdout)
	}
	for _, id := range ids {
		if st := h.row(id).State; st != "live" {
			t.Errorf("session %s is %s, want live in a host", id, st)
		}
	}
}

// waitUntil polls cond for up to 20 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
