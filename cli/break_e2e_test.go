package cli_test

// A lease break and the turn of the holder it takes the session from: no
// turn of an earlier epoch runs beside the new owner on this machine.

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// appendLoop is a turn that appends "TAG N" to the file f of its
// workspace every 20 ms, for a minute at most; it ignores SIGHUP, so that
// only a signal meant for it ends it.
func appendLoop(tag string) string {
	return `trap '' HUP; i=0; while [ $i -lt 3000 ]; do i=$((i+1)); echo "` + tag + ` $i" >> f; sleep 0.02; done`
}

// countLines counts the lines of path that begin with tag.
func countLines(t *testing.T, path, tag string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, tag+" ") {
			n++
		}
	}
	return n
}

// waitLines waits until path has at least n lines beginning with tag.
func waitLines(t *testing.T, path, tag string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for countLines(t, path, tag) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: fewer than %d %q lines after 30s", path, n, tag)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// detachedIn is detached, with the session's workspace.
func (h *harness) detachedIn() (id string, pid int, workspace string) {
	h.t.Helper()
	r := h.must(0, "new", "--detach", "--json", "--scratch")
	v := decode[struct {
		ID        string `json:"id"`
		PID       int    `json:"pid"`
		Workspace string `json:"workspace"`
	}](h.t, r.stdout)
	if v.PID <= 0 || v.Workspace == "" {
		h.t.Fatalf("new --detach --json = %s", r.stdout)
	}
	return v.ID, v.PID, v.Workspace
}

// submit starts a turn in the host of session id and returns its id.
func (h *harness) submit(id, input string) string {
	h.t.Helper()
	c := h.dialHost(id)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ti, err := c.Submit(ctx, input)
	if err != nil {
		h.t.Fatalf("submit to the host of %s: %v", id, err)
	}
	return ti.ID
}

// stopProcess SIGSTOPs pid; the test's cleanup continues and kills it.
func stopProcess(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(pid, syscall.SIGKILL)
		syscall.Kill(pid, syscall.SIGCONT)
	})
}

// interruptions returns the reasons of the TurnInterrupted records of
// turn in recs.
func interruptions(recs []record, turn string) []string {
	var out []string
	for _, r := range recs {
		if r.Type == "TurnInterrupted" && r.TurnID == turn {
			out = append(out, r.Reason)
		}
	}
	return out
}

// A host stopped (SIGSTOP) in the middle of a turn that appends to a file
// of its workspace: lease break stops that turn before it returns, so the
// successor's turn, in a host restored at once, writes that file alone.
// Before, the old turn went on for as long as its host was stopped.
func TestBreakStopsAStoppedHoldersTurn(t *testing.T) {
	h := newHarness(t)
	id, pid, ws := h.detachedIn()
	f := filepath.Join(ws, "f")
	old := h.submit(id, appendLoop("old"))
	waitLines(t, f, "old", 5)
	stopProcess(t, pid)

	start := time.Now()
	r := h.must(0, "lease", "break", id, "--yes")
	atBreak := countLines(t, f, "old")
	t.Logf("lease break took %s; it said:\n%s", time.Since(start).Round(time.Millisecond), r.stdout)
	if !strings.Contains(r.stdout, "stopped") || !strings.Contains(r.stdout, "process group") {
		t.Errorf("lease break does not say it stopped the turn's process group: %s", r.stdout)
	}

	h.must(0, "restore", "--detach", id)
	h.submit(id, `for i in $(seq 30); do echo "new $i" >> f; sleep 0.02; done`)
	h.waitLog(id, "TurnDone")
	time.Sleep(300 * time.Millisecond) // time for a survivor to show itself
	after := countLines(t, f, "old") - atBreak
	t.Logf("writes of the old turn after the break returned: %d (the successor wrote %d)", after, countLines(t, f, "new"))
	if after != 0 {
		t.Errorf("the old turn wrote %d lines after the break returned, want 0", after)
	}
	// The journal says why the old turn ended: the break, not a crash.
	if got := interruptions(h.log(id), old); len(got) != 1 || got[0] != "lease_lost" {
		t.Errorf("the old turn's TurnInterrupted reasons = %v, want [lease_lost]", got)
	}
}

// A running host whose lease is broken mid-turn: the journal records the
// turn as interrupted by the lost lease, and no later restore calls it a
// crash.
func TestBreakOfARunningHostRecordsLeaseLost(t *testing.T) {
	h := newHarness(t)
	id, pid, ws := h.detachedIn()
	turn := h.submit(id, appendLoop("old"))
	waitLines(t, filepath.Join(ws, "f"), "old", 3)
	h.must(0, "lease", "break", id, "--yes")
	waitExit(t, pid)
	h.must(0, "restore", id)
	recs := h.log(id)
	if got := interruptions(recs, turn); len(got) != 1 || got[0] != "lease_lost" {
		t.Fatalf("the turn's TurnInterrupted reasons = %v, want [lease_lost]; journal: %v", got, types(recs))
	}
}

// watcherOf returns the pid of the shell engine's watcher of process
// group pgid (its command line names it: looprig-watch PGID).
func watcherOf(t *testing.T, pgid int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc: cannot find the watcher")
	}
	want := "looprig-watch\x00" + strconv.Itoa(pgid) + "\x00"
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), want) {
			return pid
		}
	}
	t.Fatalf("no watcher of process group %d", pgid)
	return 0
}

// turnGroup returns the process group of the running turn whose file
// line tag the test knows: the process writing it is found by its
// LOOPRIG_TURN.
func turnGroup(t *testing.T, turn string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc: cannot find the turn's processes")
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !strings.Contains("\x00"+string(env), "\x00LOOPRIG_TURN="+turn+"\x00") {
			continue
		}
		pgid, err := syscall.Getpgid(atoi(e.Name()))
		if err == nil {
			return pgid
		}
	}
	t.Fatalf("no process of turn %s", turn)
	return 0
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// A turn that outlived its holder (its watcher stopped, so nothing killed
// it when the host died) keeps a restore away: the restore is refused with
// turn_running, naming the process group, until lease break stops it.
func TestRestoreRefusedWhileAnEarlierTurnRuns(t *testing.T) {
	h := newHarness(t)
	id, pid, ws := h.detachedIn()
	f := filepath.Join(ws, "f")
	turn := h.submit(id, appendLoop("old"))
	waitLines(t, f, "old", 3)
	pgid := turnGroup(t, turn)
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	stopProcess(t, watcherOf(t, pgid))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExit(t, pid)
	n := countLines(t, f, "old")
	waitLines(t, f, "old", n+3) // the turn outlived its host

	r := h.run("restore", id, "--json")
	e := decode[struct {
		Error struct {
			Type   string `json:"type"`
			Kind   string `json:"kind"`
			PGID   int    `json:"pgid"`
			TurnID string `json:"turn_id"`
		} `json:"error"`
	}](t, r.stdout)
	// Exit 4, as documented (README, Exit codes): the session's workspace
	// is held, here by a turn, not a failed restore (3).
	if r.code != 4 || e.Error.Type != "RestoreError" || e.Error.Kind != "turn_running" || e.Error.PGID != pgid || e.Error.TurnID != turn {
		t.Fatalf("restore while the earlier turn runs: exit %d (want 4), %s%s", r.code, r.stdout, r.stderr)
	}
	r = h.run("restore", id)
	if r.code != 4 || !strings.Contains(r.stderr, strconv.Itoa(pgid)) || !strings.Contains(r.stderr, "lease break") {
		t.Errorf("restore's words do not name the process group and the remedy, or it did not exit 4 (%d): %s", r.code, r.stderr)
	}
	if row := h.row(id); row.State != "crashed" {
		t.Errorf("after the refused restores the session is %s, want crashed", row.State)
	}

	r = h.must(0, "lease", "break", id, "--yes")
	stoppedAt := countLines(t, f, "old")
	if !strings.Contains(r.stdout, "stopped") {
		t.Errorf("lease break of the free lease does not say it stopped the turn: %s", r.stdout)
	}
	h.must(0, "restore", id)
	time.Sleep(200 * time.Millisecond)
	if got := countLines(t, f, "old"); got != stoppedAt {
		t.Errorf("the earlier turn wrote %d lines after the break", got-stoppedAt)
	}
}
