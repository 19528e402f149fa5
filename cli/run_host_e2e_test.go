package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
)

// `looprig run` through a session's host: the turn runs in the host, run
// streams it and exits with its code, and the session stays live.

// hostByHand starts `looprig host ID` as a child of the test and returns
// its pid once it serves the session. The harness kills it at cleanup.
func (h *harness) hostByHand(id string) int {
	h.t.Helper()
	p := h.start("host", id)
	p.waitLine(h.t, "hosting session")
	return p.cmd.Process.Pid
}

// runAcked runs looprig with LOOPRIG_ACK_FD=3 and returns its result and
// the acknowledgements it wrote.
func (h *harness) runAcked(args ...string) (result, string) {
	h.t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		h.t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := h.command(ctx, args...)
	cmd.Env = append(cmd.Env, "LOOPRIG_ACK_FD=3")
	cmd.ExtraFiles = []*os.File{w}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	w.Close()
	acks := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		b.ReadFrom(r)
		acks <- b.String()
	}()
	code := 0
	if err := cmd.Wait(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			h.t.Fatalf("looprig %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}, <-acks
}

// afterLastFence returns the records from the last fence on.
func afterLastFence(recs []record) []record {
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Kind == "fence" {
			return recs[i:]
		}
	}
	return recs
}

// (a) A run through the host streams the turn, exits with its code and
// leaves the session live; its JSON lines have the in-process shape and
// its acknowledgements name journal records.
func TestRunThroughHost(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	pid := h.hostByHand(id)

	r := h.run("run", id[:8], "--", "sh -c 'echo hi; exit 3'")
	if r.code != 3 || r.stdout != "hi\n" || !strings.Contains(r.stderr, "turn 0 exited 3 in ") {
		t.Fatalf("run through the host: exit %d, stdout %q, stderr %q; want 3, \"hi\\n\", the closing line", r.code, r.stdout, r.stderr)
	}
	if row := h.row(id); row.State != "live" || row.Holder == nil || row.Holder.PID != pid || row.Epoch != 2 {
		t.Fatalf("ls after a run through the host: %+v, want live at epoch 2 held by the host %d", row, pid)
	}
	recs := afterLastFence(h.log(id))
	if !inOrder(types(recs), []string{"fence", "RestoreDone", "TurnStarted", "TurnOutput", "TurnDone"}) || slices.Contains(types(recs), "SessionStopped") {
		t.Fatalf("journal of the host's epoch: %v; want the turn and no SessionStopped", types(recs))
	}
	for _, rec := range recs {
		if rec.Type == "TurnOutput" && rec.Text != "hi\n" || rec.Type == "TurnDone" && (rec.ExitCode == nil || *rec.ExitCode != 3) {
			t.Fatalf("journal record %+v", rec)
		}
	}

	// --json: the turn's lines are an in-process run's, but for the
	// values that differ by session and time.
	local := h.newSession()
	input := "echo one; exit 2"
	want := lines[map[string]any](t, h.must(2, "run", "--in-process", local, "--json", "--", input).stdout)
	got := lines[map[string]any](t, h.must(2, "run", id, "--json", "--", input).stdout)
	durable := func(evs []map[string]any) (out []string) {
		for _, ev := range evs {
			if ev["seq"].(float64) == 0 || !strings.HasPrefix(ev["type"].(string), "Turn") {
				continue // deltas, and the session's own events (restore, stop)
			}
			keys := make([]string, 0, len(ev))
			for k := range ev {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			line := fmt.Sprint(ev["type"], keys)
			for _, k := range keys {
				switch k {
				case "seq", "session", "loop_id", "at", "turn_id", "index", "duration_ms", "type":
				default:
					line += fmt.Sprintf(" %s=%v", k, ev[k])
				}
			}
			out = append(out, line)
		}
		return out
	}
	if w, g := durable(want), durable(got); !slices.Equal(w, g) {
		t.Fatalf("run --json through the host:\n%v\nin process:\n%v", g, w)
	}

	// LOOPRIG_ACK_FD: one line per journal record seen, each one in the
	// journal with that type, the turn's end among them.
	r, acks := h.runAcked("run", id, "--", "echo acked")
	if r.code != 0 || r.stdout != "acked\n" {
		t.Fatalf("acked run: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	recs = h.log(id)
	var last string
	for _, l := range strings.Split(strings.TrimSpace(acks), "\n") {
		seq, typ, _ := strings.Cut(l, " ")
		n, err := strconv.Atoi(seq)
		if err != nil || n < 1 || n > len(recs) || recs[n-1].Type != typ {
			t.Fatalf("ack %q does not name a journal record (acks %q)", l, acks)
		}
		last = typ
	}
	if last != "TurnDone" {
		t.Fatalf("acks %q do not end with the turn's TurnDone", acks)
	}
	if !alive(pid) {
		t.Fatal("the host ended after the runs")
	}
	h.must(0, "stop", id)
}

// (b) A second run while the host's session runs a turn is refused as
// busy, naming the turn.
func TestRunThroughHostBusy(t *testing.T) {
	h := newHarness(t)
	id, _ := h.detached()
	p := h.start("run", id, "--", "echo started; sleep 30")
	p.waitLine(t, "started")
	turn := ""
	for _, rec := range h.log(id) {
		if rec.Type == "TurnStarted" {
			turn = rec.TurnID
		}
	}
	r := h.run("run", id, "--json", "--", "echo second")
	v := decode[struct {
		Error struct {
			Type   string `json:"type"`
			Kind   string `json:"kind"`
			TurnID string `json:"turn_id"`
			Index  int    `json:"index"`
		} `json:"error"`
	}](t, r.stdout)
	if r.code != 125 || v.Error.Type != "BusyError" || v.Error.Kind != "busy" || v.Error.TurnID != turn || turn == "" {
		t.Fatalf("second run: exit %d, %s; want 125 and busy with turn %s", r.code, r.stdout, turn)
	}
	r = h.run("run", id, "--", "echo second")
	if r.code != 125 || !strings.Contains(r.stderr, "is busy: turn 0") || !strings.Contains(r.stderr, "attach "+id[:8]) {
		t.Fatalf("second run, human: exit %d, %q", r.code, r.stderr)
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t, 10*time.Second); code != 130 {
		t.Fatalf("first run after SIGINT: exit %d; stderr %s", code, p.stderr.String())
	}
	for _, rec := range h.log(id) {
		if rec.Type == "TurnStarted" && rec.TurnID != turn {
			t.Fatalf("the busy run started a turn: %+v", rec)
		}
	}
}

// (c) Ctrl-C interrupts the turn in the host and waits for its end; the
// session stays live.
func TestRunThroughHostInterrupt(t *testing.T) {
	h := newHarness(t)
	id, pid := h.detached()
	p := h.start("run", id, "--", "echo started; sleep 30")
	p.waitLine(t, "started")
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t, 10*time.Second); code != 130 {
		t.Fatalf("run through the host after SIGINT: exit %d, want 130; stderr %s", code, p.stderr.String())
	}
	if s := p.stderr.String(); !strings.Contains(s, "interrupting the turn") || !strings.Contains(s, "turn 0 interrupted (user)") {
		t.Fatalf("stderr after SIGINT: %q", s)
	}
	reason := ""
	recs := h.log(id)
	for _, rec := range recs {
		if rec.Type == "TurnInterrupted" {
			reason = rec.Reason
		}
	}
	if reason != "user" || slices.Contains(types(recs), "SessionStopped") {
		t.Fatalf("journal after SIGINT: %v, interrupted by %q; want the turn interrupted by the user and no SessionStopped", types(recs), reason)
	}
	if row := h.row(id); row.State != "live" || row.Holder == nil || row.Holder.PID != pid {
		t.Fatalf("ls after the interrupted run: %+v, want live in host %d", row, pid)
	}
	if r := h.must(0, "run", id, "--", "echo again"); r.stdout != "again\n" {
		t.Fatalf("next run through the host: %q", r.stdout)
	}
}

// (d) run --detach restores an idle session in a new host, submits the
// turn and returns before it ends; the turn completes in the host. A
// second run --detach uses that host.
func TestRunDetach(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	r := h.must(0, "run", "--detach", "--json", id[:8], "--", "sleep 3; echo done")
	v := decode[struct {
		ID      string `json:"id"`
		ShortID string `json:"short_id"`
		TurnID  string `json:"turn_id"`
		Index   int    `json:"index"`
		PID     int    `json:"pid"`
	}](t, r.stdout)
	if v.ID != id || v.ShortID != id[:8] || v.TurnID == "" || v.Index != 0 || v.PID <= 0 {
		t.Fatalf("run --detach --json = %s", r.stdout)
	}
	started, done := false, false
	for _, rec := range h.log(id) {
		started = started || rec.Type == "TurnStarted" && rec.TurnID == v.TurnID
		done = done || rec.Type == "TurnDone"
	}
	if !started || done {
		t.Fatalf("right after run --detach: turn started %v, done %v; want started, not done", started, done)
	}
	if row := h.row(id); row.State != "live" || row.Holder == nil || row.Holder.PID != v.PID {
		t.Fatalf("ls after run --detach: %+v, want live in host %d", row, v.PID)
	}
	var out string
	for _, rec := range h.waitLog(id, "TurnDone") {
		if rec.Type == "TurnOutput" && rec.TurnID == v.TurnID {
			out += rec.Text
		}
		if rec.Type == "TurnDone" && (rec.TurnID != v.TurnID || rec.ExitCode == nil || *rec.ExitCode != 0) {
			t.Fatalf("TurnDone %+v", rec)
		}
	}
	if out != "done\n" {
		t.Fatalf("output of the detached turn: %q", out)
	}

	r = h.must(0, "run", id, "--detach", "--", "echo second")
	if _, err := uuid.Parse(strings.TrimSuffix(r.stdout, "\n")); err != nil || !strings.HasSuffix(r.stdout, "\n") {
		t.Fatalf("run --detach, human: stdout %q, want the turn's id and a newline", r.stdout)
	}
	if !strings.HasPrefix(r.stderr, "looprig: started turn 1 ("+strings.TrimSpace(r.stdout)+") in session "+id[:8]+"; follow it: looprig --store "+h.store+" attach "+id[:8]) {
		t.Fatalf("run --detach, human: stderr %q", r.stderr)
	}
	h.waitLog(id, "TurnDone")
	if row := h.row(id); row.State != "live" || row.Holder == nil || row.Holder.PID != v.PID {
		t.Fatalf("ls after a second run --detach: %+v, want still live in host %d", row, v.PID)
	}
	h.must(0, "stop", id)
	waitExit(t, v.PID)
}

// (e) A host killed while run follows its turn: run says the session is
// crashed and how to restore it, and exits 125.
func TestRunThroughHostKilled(t *testing.T) {
	h := newHarness(t)
	id, pid := h.detached()
	p := h.start("run", id, "--", "echo started; sleep 30")
	p.waitLine(t, "started")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	code := p.wait(t, 10*time.Second)
	s := p.stderr.String()
	if code != 125 || !strings.Contains(s, fmt.Sprintf("(pid %d)", pid)) || !strings.Contains(s, "crashed") ||
		!strings.Contains(s, "restore "+id[:8]) {
		t.Fatalf("run after its host was killed: exit %d, stderr %q; want 125 naming the host and restore", code, s)
	}
	waitExit(t, pid)
	if row := h.row(id); row.State != "crashed" {
		t.Fatalf("ls after the host was killed: %s, want crashed", row.State)
	}
	// Not hosted any more: run restores it in a new host, and says what
	// the restore closed.
	r := h.must(0, "run", id, "--", "echo after")
	if r.stdout != "after\n" || !strings.Contains(r.stderr, "closed 1 interrupted turn left open by a crash") {
		t.Fatalf("run after the crash: %q, %q", r.stdout, r.stderr)
	}
	if row := h.row(id); row.State != "live" || row.Holder == nil || row.Holder.PID == pid {
		t.Fatalf("ls after a run of the crashed session: %+v, want live in a new host", row)
	}
}

// A host whose session loses its lease mid-turn: run reports the lease
// lost, as for a session of its own process.
func TestRunThroughHostLeaseLost(t *testing.T) {
	h := newHarness(t)
	id, pid := h.detached()
	p := h.start("run", id, "--", "echo started; for i in $(seq 100); do sleep 0.1; done; echo finished")
	p.waitLine(t, "started")
	h.must(0, "lease", "break", id, "--yes")
	if code := p.wait(t, 10*time.Second); code != 125 {
		t.Fatalf("run exited %d after the host's lease was broken, want 125; stderr: %s", code, p.stderr.String())
	}
	if s := p.stderr.String(); !strings.Contains(s, "LEASE LOST: session "+id[:8]) {
		t.Fatalf("run stderr: %s", s)
	}
	waitExit(t, pid)
}

// Gates through the host: denied without a terminal, asked on one.
func TestRunThroughHostGates(t *testing.T) {
	h := newHarness(t)
	id, _ := h.detached()
	r := h.run("run", id, "--", "sudo", "true")
	if r.code != 1 || !strings.Contains(r.stderr, "denied: stdin is not a terminal") || !strings.Contains(r.stderr, "failed") {
		t.Fatalf("gated run through the host without a terminal: exit %d, %s", r.code, r.stderr)
	}
	if got := lastGateAction(t, h, id); got != "deny" {
		t.Fatalf("gate resolved with %q, want deny", got)
	}
	for _, tt := range []struct {
		answer string
		code   int
		action string
	}{{"y", 0, "approve"}, {"n", 1, "deny"}} {
		master, tty := openPTY(t)
		p := h.startWith(tty, "run", id, "--", "rm -rf ./not-there && echo ran")
		p.stderr.waitFor(t, "approve? [y/N] ")
		if _, err := master.Write([]byte(tt.answer + "\n")); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t, 10*time.Second); code != tt.code {
			t.Fatalf("answer %q: exit %d, want %d; stderr: %s", tt.answer, code, tt.code, p.stderr.String())
		}
		if got := lastGateAction(t, h, id); got != tt.action {
			t.Fatalf("answer %q: gate resolved with %q, want %q", tt.answer, got, tt.action)
		}
	}
	if row := h.row(id); row.State != "live" {
		t.Fatalf("after the gated runs: %s, want live", row.State)
	}
}

// A second Ctrl-C exits at once, while the host still interrupts the turn
// (one that ignores ^C and SIGTERM ends only at the grace period's SIGKILL).
func TestRunThroughHostSecondInterrupt(t *testing.T) {
	h := newHarness(t)
	id, pid := h.detached()
	p := h.start("run", id, "--", "trap '' INT TERM; echo started; sleep 30")
	p.waitLine(t, "started")
	p.cmd.Process.Signal(syscall.SIGINT)
	p.stderr.waitFor(t, "interrupting the turn")
	// As a person's second Ctrl-C: the host has the interrupt by then (it
	// gives up a request of a client that left before it was journaled).
	time.Sleep(500 * time.Millisecond)
	at := time.Now()
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t, 10*time.Second); code != 130 {
		t.Fatalf("run after a second SIGINT: exit %d, want 130; stderr %s", code, p.stderr.String())
	}
	if d := time.Since(at); d > 2*time.Second {
		t.Fatalf("run took %s to exit after the second SIGINT, want at once", d)
	}
	if slices.Contains(types(h.log(id)), "TurnInterrupted") {
		t.Fatal("the turn ended before its grace period: the test proves nothing")
	}
	recs := h.waitLog(id, "TurnInterrupted")
	if row := h.row(id); row.State != "live" || !alive(pid) || slices.Contains(types(recs), "SessionStopped") {
		t.Fatalf("after the interrupt: %s, host alive %v, journal %v; want live", row.State, alive(pid), types(recs))
	}
}
