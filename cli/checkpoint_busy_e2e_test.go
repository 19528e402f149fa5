package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A checkpoint held as long as a test wants: the binary the end-to-end
// tests build (tag looprig_e2e) holds every checkpoint, once its blobs
// are stored, while the file hold exists in the directory
// LOOPRIG_E2E_CHECKPOINT_HOLD names, and writes held-PID-N there when it
// does (testhooks_e2e.go). No wall clock decides how long it lasts.
type checkpointHold struct {
	t   *testing.T
	dir string
}

// holdCheckpoints makes every looprig h runs (and the hosts they start)
// hold their checkpoints while the hold is on.
func (h *harness) holdCheckpoints() *checkpointHold {
	h.t.Helper()
	ch := &checkpointHold{t: h.t, dir: h.t.TempDir()}
	h.env = append(h.env, "LOOPRIG_E2E_CHECKPOINT_HOLD="+ch.dir)
	h.t.Cleanup(ch.release)
	return ch
}

// on holds the next checkpoints until release.
func (ch *checkpointHold) on() {
	ch.t.Helper()
	if err := os.WriteFile(filepath.Join(ch.dir, "hold"), nil, 0o600); err != nil {
		ch.t.Fatal(err)
	}
}

// release lets every held checkpoint go on (and the next ones).
func (ch *checkpointHold) release() { os.Remove(filepath.Join(ch.dir, "hold")) }

// waitHeld waits until n checkpoints in all have been held.
func (ch *checkpointHold) waitHeld(n int) {
	ch.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		held, _ := filepath.Glob(filepath.Join(ch.dir, "held-*"))
		if len(held) >= n {
			return
		}
		if time.Now().After(deadline) {
			ch.t.Fatalf("%d checkpoints held, waiting for %d", len(held), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// bgCmd is a looprig running in the background whose output is kept
// (nothing reads a pipe of it): it can be waited for from the start, so
// whether it has ended is known at any moment.
type bgCmd struct {
	stdout, stderr *syncBuffer
	done           chan struct{}
	err            error // once done is closed
}

func (h *harness) background(args ...string) *bgCmd {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := h.command(ctx, args...)
	b := &bgCmd{stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = b.stdout, b.stderr
	if err := cmd.Start(); err != nil {
		cancel()
		h.t.Fatal(err)
	}
	go func() {
		b.err = cmd.Wait()
		cancel()
		close(b.done)
	}()
	h.t.Cleanup(func() {
		cmd.Process.Kill()
		<-b.done
	})
	return b
}

// ended reports whether the command has ended.
func (b *bgCmd) ended() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// wait waits for the command's end (within d) and returns its exit code.
func (b *bgCmd) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(d):
		t.Fatalf("looprig did not end within %s\n%s", d, b.stderr.String())
	}
	if b.err == nil {
		return 0
	}
	if ee, ok := b.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatalf("looprig: %v", b.err)
	return -1
}

// manyFiles is a turn that makes 3,000 small files.
const manyFiles = `mkdir -p d && i=0; while [ $i -lt 3000 ]; do echo $i > d/f$i; i=$((i+1)); done`

// checkpointingRow is what ls --json says of a checkpoint in progress.
type checkpointingRow struct {
	ID            string  `json:"id"`
	State         string  `json:"state"`
	OpenTurn      *string `json:"open_turn"`
	Checkpointing *struct {
		Trigger   string `json:"trigger"`
		TurnID    string `json:"turn_id"`
		Files     int    `json:"files"`
		FilesDone int    `json:"files_done"`
	} `json:"checkpointing"`
}

// waitCheckpointingRow waits until ls --json says session id is
// checkpointing and has stored every file (its host writes the row once
// the checkpoint has run for half a second, then once a second), and
// returns the row.
func (h *harness) waitCheckpointingRow(id string) checkpointingRow {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, r := range decode[[]checkpointingRow](h.t, h.must(0, "ls", "--json").stdout) {
			// The catalog is rewritten once a second while a checkpoint
			// runs: the row of a checkpoint held once it stored every file
			// may first say less.
			if r.ID == id && r.Checkpointing != nil && r.Checkpointing.Files > 0 && r.Checkpointing.FilesDone == r.Checkpointing.Files {
				return r
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("ls --json never said session %s is checkpointing", id)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// While the checkpoint after a turn's end runs (held here for longer than
// any bound a client had: the 10 s that made every run fail with a bare
// "context deadline exceeded"), a run of the next turn waits for it,
// saying so and how far it is, then runs; ls says the session is
// checkpointing, not that the ended turn runs; wait --for idle returns
// only once the checkpoint is over.
func TestRunDuringALongCheckpoint(t *testing.T) {
	h := newHarness(t)
	hold := h.holdCheckpoints()
	id, _ := h.detached()
	hold.on()
	first := strings.TrimSpace(h.must(0, "run", id, "--detach", "--", manyFiles).stdout)
	hold.waitHeld(1)

	run := h.background("run", id, "--", "ls d | wc -l")
	idle := h.background("wait", id, "--for", "idle")
	row := h.waitCheckpointingRow(id)
	if row.State != "live" || row.OpenTurn != nil || row.Checkpointing.TurnID != first || row.Checkpointing.Trigger != "turn" ||
		row.Checkpointing.Files != 3000 || row.Checkpointing.FilesDone != 3000 {
		t.Errorf("ls --json while the turn's checkpoint runs: %+v %+v", row, *row.Checkpointing)
	}
	text := h.must(0, "ls").stdout
	if !strings.Contains(text, "checkpointing: 3,000 of 3,000 files") {
		t.Errorf("ls while checkpointing:\n%s", text)
	}
	run.stderr.waitFor(t, "looprig: waiting for the checkpoint of the last turn: 3,000 of 3,000 files…\n")

	// Past the 10 s a submit had, and the host's 30 s request bound is
	// not what bounds it either (the wait is the checkpoint's).
	time.Sleep(12 * time.Second)
	if run.ended() {
		t.Fatalf("run ended while the checkpoint is held: %v\n%s", run.err, run.stderr.String())
	}
	if idle.ended() {
		t.Fatalf("wait --for idle returned while the checkpoint is held: %v\n%s", idle.err, idle.stdout.String())
	}
	hold.release()
	if code := run.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("run queued behind the checkpoint: exit %d\n%s", code, run.stderr.String())
	}
	if out := run.stdout.String(); strings.TrimSpace(out) != "3000" {
		t.Errorf("the queued turn printed %q", out)
	}
	if s := run.stderr.String(); strings.Contains(s, "deadline") || strings.Count(s, "waiting for the checkpoint") != 1 {
		t.Errorf("run's stderr (a pipe: the wait said once):\n%s", s)
	}
	if code := idle.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("wait --for idle: exit %d\n%s", code, idle.stderr.String())
	}
	// The journal: the first turn's checkpoint, then idle, then the next
	// turn.
	var seq []string
	for _, r := range h.log(id) {
		switch {
		case r.Type == "WorkspaceCheckpointed" && r.TurnID == first, r.Type == "SessionIdle", r.Type == "TurnStarted":
			seq = append(seq, r.Type)
		}
	}
	if !inOrder(seq, []string{"TurnStarted", "WorkspaceCheckpointed", "SessionIdle", "TurnStarted"}) {
		t.Errorf("journal order %v (first %s)\n%s", seq, first, h.must(0, "log", id, "--json").stdout)
	}
	if row := decode[[]checkpointingRow](t, h.must(0, "ls", "--json").stdout); len(row) != 1 || row[0].Checkpointing != nil {
		t.Errorf("ls --json after the checkpoint: %+v", row)
	}
	h.must(0, "stop", id)
}

// stop during the checkpoint after a turn's end waits for it, saying so,
// and stops the session once it is over, its checkpoint on record.
func TestStopDuringALongCheckpoint(t *testing.T) {
	h := newHarness(t)
	hold := h.holdCheckpoints()
	id, pid := h.detached()
	hold.on()
	first := strings.TrimSpace(h.must(0, "run", id, "--detach", "--", manyFiles).stdout)
	hold.waitHeld(1)
	stop := h.background("stop", id)
	stop.stderr.waitFor(t, "looprig: waiting for the checkpoint of the last turn: 3,000 of 3,000 files…\n")
	time.Sleep(time.Second)
	if stop.ended() {
		t.Fatalf("stop ended while the checkpoint is held: %v\n%s", stop.err, stop.stderr.String())
	}
	hold.release()
	if code := stop.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("stop: exit %d\n%s", code, stop.stderr.String())
	}
	waitExit(t, pid)
	ckpt := false
	for _, r := range h.log(id) {
		ckpt = ckpt || r.Type == "WorkspaceCheckpointed" && r.TurnID == first
	}
	if !ckpt || h.row(id).State != "idle" {
		t.Errorf("after stop: checkpoint of the turn on record %v, state %s", ckpt, h.row(id).State)
	}
}

// take on B while the holder on A checkpoints the workspace after a turn:
// take says it waits for the checkpoint, and then takes the session, with
// its files.
func TestTakeDuringALongCheckpoint(t *testing.T) {
	a, b := twoHomesOnNATS(t)
	hold := a.holdCheckpoints()
	id, aPID := a.detached()
	hold.on()
	a.must(0, "run", id, "--detach", "--", manyFiles)
	hold.waitHeld(1)
	take := b.background("take", id, "--timeout", "20s")
	// On a pipe the line is printed once, with what the holder's catalog
	// entry said then: it may be written while the files are still read.
	take.stderr.waitFor(t, "looprig: waiting for the checkpoint of the last turn: ")
	take.stderr.waitFor(t, " of 3,000 files…\n")
	hold.release()
	if code := take.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("take: exit %d\n%s", code, take.stderr.String())
	}
	waitExit(t, aPID)
	if r := b.must(0, "run", id, "--", "ls d | wc -l"); strings.TrimSpace(r.stdout) != "3000" {
		t.Errorf("the files on B: %q", r.stdout)
	}
	b.must(0, "stop", id)
}
