package cli_test

// End-to-end tests: they build the real looprig binary once and run it
// against temporary stores, as scripts and users do.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/host"
	"looprig/internal/testbin"
)

var binary string

func TestMain(m *testing.M) {
	// Main run inside this binary (TestMainInProcess) starts hosts that are
	// this binary: each ends at once without a report, as a host that
	// cannot start does, and run falls back to running the turn itself.
	if os.Getenv(host.ReadyFDEnv) != "" {
		os.Exit(3)
	}
	// The build tag looprig_e2e builds in the tests' hooks (testhooks_e2e.go).
	var err error
	if binary, err = testbin.Build("looprig_e2e"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// harness is a temporary store, home directory and runtime directory (the
// hosts' sockets) for one test.
type harness struct {
	t       *testing.T
	store   string
	home    string
	runtime string
	// cwd is where commands run: a project directory of the test's own,
	// where 'new' puts a session (never the package's source tree).
	cwd string
	env []string // more environment for every command (an agent's server)
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	t.Parallel()
	return newHome(t)
}

// newHome is a harness of its own in test t (one that already has one:
// a second home, as another machine's).
func newHome(t *testing.T) *harness {
	t.Helper()
	root := t.TempDir()
	// Short: a socket path holds at most 103 bytes, t.TempDir's are long.
	rt, err := os.MkdirTemp("", "lr")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(rt, 0o700); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, store: filepath.Join(root, "store"), home: filepath.Join(root, "home"), runtime: rt, cwd: filepath.Join(root, "project")}
	if err := os.Mkdir(h.cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.killHosts()
		os.RemoveAll(rt)
	})
	return h
}

// killHosts kills every host still serving a session of the store: no
// process outlives its test.
func (h *harness) killHosts() {
	if _, err := os.Stat(h.store); err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := h.command(ctx, "ls", "--json").Output()
	if err != nil {
		return
	}
	var rows []sessionRow
	if json.Unmarshal(out, &rows) != nil {
		return
	}
	var killed []int
	for _, r := range rows {
		if r.State == "live" && r.Holder != nil && r.Holder.PID > 0 {
			// Its process group: a host leads one (setsid), and the
			// indexing process it starts between turns is in it.
			if syscall.Kill(-r.Holder.PID, syscall.SIGKILL) != nil {
				syscall.Kill(r.Holder.PID, syscall.SIGKILL)
			}
			killed = append(killed, r.Holder.PID)
		}
	}
	// Until they are gone: a process being killed can still write the
	// store the test's cleanup is about to remove.
	for _, pgid := range killed {
		for end := time.Now().Add(10 * time.Second); groupRuns(pgid) && time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// groupRuns reports whether a process of process group pgid runs (is not
// a zombie), from /proc.
func groupRuns(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and parens.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

type result struct {
	code           int
	stdout, stderr string
}

func (h *harness) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binary, append([]string{"--store", h.store}, args...)...)
	cmd.Dir = h.cwd
	cmd.Env = append(os.Environ(), "HOME="+h.home, "XDG_CONFIG_HOME="+filepath.Join(h.home, "config"),
		"XDG_STATE_HOME="+filepath.Join(h.home, "state"), "LOOPRIG_STORE=", "XDG_RUNTIME_DIR="+h.runtime)
	cmd.Env = append(cmd.Env, h.env...)
	return cmd
}

// writeConfig makes text h's configuration file (where looprig looks by
// default, under h's XDG_CONFIG_HOME).
func (h *harness) writeConfig(text string) {
	h.t.Helper()
	dir := filepath.Join(h.home, "config", "looprig")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(text), 0o600); err != nil {
		h.t.Fatal(err)
	}
}

// run runs looprig to completion (at most 30s).
func (h *harness) run(args ...string) result {
	h.t.Helper()
	return h.runIn("", args...)
}

func (h *harness) runIn(stdin string, args ...string) result {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := h.command(ctx, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Stdin = strings.NewReader(stdin)
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			h.t.Fatalf("looprig %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// must runs looprig and fails the test unless it exits with want.
func (h *harness) must(want int, args ...string) result {
	h.t.Helper()
	r := h.run(args...)
	if r.code != want {
		h.t.Fatalf("looprig %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
	}
	return r
}

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return v
}

func lines[T any](t *testing.T, s string) []T {
	t.Helper()
	var out []T
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l != "" {
			out = append(out, decode[T](t, l))
		}
	}
	return out
}

type sessionRow struct {
	ID      string `json:"id"`
	ShortID string `json:"short_id"`
	State   string `json:"state"`
	Title   string `json:"title"`
	Profile string `json:"profile"`
	Epoch   uint64 `json:"epoch"`
	Holder  *struct {
		PID  int    `json:"pid"`
		Host string `json:"host"`
	} `json:"holder"`
	OpenTurn *string `json:"open_turn"`
	Reason   string  `json:"reason"`
	LastEnd  *struct {
		Index    int    `json:"index"`
		Outcome  string `json:"outcome"`
		ExitCode *int   `json:"exit_code"`
	} `json:"last_end"`
}

type record struct {
	Seq      uint64 `json:"seq"`
	Kind     string `json:"kind"`
	Type     string `json:"type"`
	Epoch    uint64 `json:"epoch"`
	Text     string `json:"text"`
	Reason   string `json:"reason"`
	TurnID   string `json:"turn_id"`
	ExitCode *int   `json:"exit_code"`
	Holder   string `json:"holder"` // RestoreDone's
	To       string `json:"to"`     // HandedOff's
}

type errorShape struct {
	Error struct {
		Type        string `json:"type"`
		Kind        string `json:"kind"`
		Message     string `json:"message"`
		HolderEpoch uint64 `json:"holder_epoch"`
		Holder      struct {
			PID int `json:"pid"`
		} `json:"holder"`
		File    string `json:"file"`
		Line    int    `json:"line"`
		Field   string `json:"field"`
		Known   []string
		Changes []change `json:"changes"`
	} `json:"error"`
}

type change struct {
	Field     string `json:"field"`
	Persisted string `json:"persisted"`
	Live      string `json:"live"`
	Level     string `json:"level"`
}

// newSession creates a session (idle) and returns its id; in a scratch
// directory of its own in the store unless args place it (--root,
// --placement or --rig): a test makes many, and TestNewWorksInTheCurrentDirectory
// tests the default place.
func (h *harness) newSession(args ...string) string {
	h.t.Helper()
	r := h.must(0, append([]string{"new", "--json"}, scratchUnlessPlaced(args)...)...)
	v := decode[struct {
		ID    string `json:"id"`
		Epoch uint64 `json:"epoch"`
	}](h.t, r.stdout)
	if _, err := uuid.Parse(v.ID); err != nil || v.Epoch != 1 {
		h.t.Fatalf("new --json = %s", r.stdout)
	}
	return v.ID
}

func (h *harness) ls() []sessionRow {
	h.t.Helper()
	return decode[[]sessionRow](h.t, h.must(0, "ls", "--json").stdout)
}

func (h *harness) row(id string) sessionRow {
	h.t.Helper()
	for _, r := range h.ls() {
		if r.ID == id {
			return r
		}
	}
	h.t.Fatalf("session %s not listed", id)
	return sessionRow{}
}

func (h *harness) log(id string) []record {
	h.t.Helper()
	recs := lines[record](h.t, h.must(0, "log", id, "--json").stdout)
	for i, r := range recs {
		if r.Seq != uint64(i+1) {
			h.t.Fatalf("log: record %d has seq %d: seqs are not contiguous", i, r.Seq)
		}
	}
	return recs
}

// types returns the types of recs, fences as "fence".
func types(recs []record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Type
	}
	return out
}

// inOrder reports whether want appears in got as a subsequence.
func inOrder(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// background starts looprig and returns it with a line reader on stdout.
type proc struct {
	cmd    *exec.Cmd
	out    *bufio.Reader
	stderr *syncBuffer
	cancel context.CancelFunc

	waitOnce sync.Once
	exited   chan struct{} // closed when cmd.Wait returned (waitErr)
	waitErr  error
}

// reap calls cmd.Wait once, whoever asks first (wait, or the cleanup).
func (p *proc) reap() <-chan struct{} {
	p.waitOnce.Do(func() {
		go func() {
			p.waitErr = p.cmd.Wait()
			close(p.exited)
		}()
	})
	return p.exited
}

func (h *harness) start(args ...string) *proc {
	h.t.Helper()
	return h.startWith(nil, args...)
}

// startWith starts looprig with stdin (nil: /dev/null).
func (h *harness) startWith(stdin *os.File, args ...string) *proc {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	cmd := h.command(ctx, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		h.t.Fatal(err)
	}
	errb := &syncBuffer{}
	cmd.Stderr = errb
	if stdin != nil {
		cmd.Stdin = stdin
	}
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	p := &proc{cmd: cmd, out: bufio.NewReader(out), stderr: errb, cancel: cancel, exited: make(chan struct{})}
	h.t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.reap()
		cancel()
	})
	return p
}

// syncBuffer is written by exec's copying goroutine while the test reads
// it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until the buffer contains want (10s at most).
func (s *syncBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %q; got %q", want, s.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitLine reads stdout lines until one contains want (10s at most).
func (p *proc) waitLine(t *testing.T, want string) string {
	t.Helper()
	type res struct {
		line string
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		for {
			l, err := p.out.ReadString('\n')
			if err != nil || strings.Contains(l, want) {
				ch <- res{l, err}
				return
			}
		}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("waiting for %q on stdout: %v", want, r.err)
		}
		return r.line
	case <-time.After(10 * time.Second):
		t.Fatalf("waiting for %q on stdout: timed out", want)
	}
	return ""
}

// wait waits for p to exit (within d) and returns its exit code.
func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	go io.Copy(io.Discard, p.out)
	select {
	case <-p.reap():
		err := p.waitErr
		if err == nil {
			return 0
		}
		if ee, ok := err.(*exec.ExitError); ok {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return ee.ExitCode()
		}
		t.Fatalf("wait: %v", err)
	case <-time.After(d):
		t.Fatalf("process did not exit within %s", d)
	}
	return -1
}

func TestNewRunLog(t *testing.T) {
	h := newHarness(t)
	id := h.newSession("--title", "e2e")
	r := h.must(0, "run", id[:8], "--", "echo", "hello", "world")
	if r.stdout != "hello world\n" {
		t.Fatalf("run stdout = %q", r.stdout)
	}
	if !strings.Contains(r.stderr, "turn 0 exited 0 in ") || !strings.Contains(r.stderr, "started for this run: it stays live after the turn") {
		t.Fatalf("run stderr = %q, want the host's note and the closing line", r.stderr)
	}
	recs := h.log(id)
	want := []string{"fence", "SessionStarted", "LoopStarted", "TurnStarted", "TurnOutput", "TurnDone"}
	if !inOrder(types(recs), want) {
		t.Fatalf("log types %v do not contain %v in order", types(recs), want)
	}
	if recs[0].Kind != "fence" || recs[0].Epoch != 1 {
		t.Fatalf("first record %+v, want fence at epoch 1", recs[0])
	}
	for _, rec := range recs {
		if rec.Type == "TurnOutput" && rec.Text != "hello world\n" {
			t.Fatalf("TurnOutput text %q", rec.Text)
		}
		if rec.Type == "TurnDone" && (rec.ExitCode == nil || *rec.ExitCode != 0) {
			t.Fatalf("TurnDone %+v", rec)
		}
	}
	// run restored the session in a host of its own, where it stays live.
	// (run ends with the turn; the host's catalog update may follow.)
	var row sessionRow
	waitUntil(t, "the listing to show turn 0's end", func() bool { row = h.row(id); return row.LastEnd != nil })
	if row.State != "live" || row.Holder == nil || !alive(row.Holder.PID) || row.Title != "e2e" || row.Profile != "default" || row.Epoch != 2 {
		t.Fatalf("ls row %+v, want live in a host at epoch 2", row)
	}
	if e := row.LastEnd; e == nil || e.Index != 0 || e.Outcome != "done" || e.ExitCode == nil || *e.ExitCode != 0 {
		t.Fatalf("ls last_end %+v, want turn 0 done exit 0", e)
	}
	h.must(0, "stop", id)
	waitExit(t, row.Holder.PID)
	// Human forms.
	if out := h.must(0, "ls").stdout; !strings.Contains(out, "○ idle") || !strings.Contains(out, id[:8]) || !strings.Contains(out, "e2e") {
		t.Fatalf("ls:\n%s", out)
	}
	if out := h.must(0, "log", id).stdout; !strings.Contains(out, "TurnDone") || !strings.Contains(out, `"hello world^J"`) {
		t.Fatalf("log:\n%s", out)
	}
}

func TestRunJSONAndHostileOutput(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	r := h.must(0, "run", id, "--json", "--", `printf 'a\033]52;c;ZXZpbA==\007b\n'`)
	evs := lines[map[string]any](t, r.stdout)
	var seen []string
	for _, ev := range evs {
		seen = append(seen, ev["type"].(string))
		for _, k := range []string{"seq", "type", "session", "loop_id", "at"} {
			if _, ok := ev[k]; !ok {
				t.Fatalf("event %v has no %q", ev, k)
			}
		}
		if ev["type"] == "TurnOutput" && ev["text"] != "a\x1b]52;c;ZXZpbA==\x07b\n" {
			t.Fatalf("JSON keeps the bytes exactly (escaped by JSON): %q", ev["text"])
		}
	}
	if !inOrder(seen, []string{"TurnStarted", "TurnOutput", "TurnDone"}) {
		t.Fatalf("run --json types %v", seen)
	}
	// Human mode: the turn's output is rendered (termrender): the OSC 52
	// is dropped, the bidi control shown, neither interpreted.
	r = h.must(0, "run", id, "--", `printf 'a\033]52;c;ZXZpbA==\007b\n'; printf '\342\200\256x\n'`)
	if r.stdout != "ab\n<U+202E>x\n" {
		t.Fatalf("run stdout = %q", r.stdout)
	}
}

func TestCrashThenRestore(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	p := h.start("run", id, "--", `for i in $(seq 100); do echo "line $i"; sleep 0.2; done`)
	p.waitLine(t, "line 1")
	time.Sleep(700 * time.Millisecond) // past an output checkpoint
	h.killHostOf(id)                   // the host run started: the process that runs the session
	if code := p.wait(t, 10*time.Second); code != 125 {
		t.Fatalf("run exited %d after its host was killed, want 125", code)
	}

	before := h.row(id)
	if before.State != "crashed" || before.Holder != nil || before.OpenTurn == nil {
		t.Fatalf("after SIGKILL: %+v, want crashed with an open turn", before)
	}
	r := h.must(0, "restore", id, "--json")
	out := decode[struct {
		ID          string   `json:"id"`
		Epoch       uint64   `json:"epoch"`
		Interrupted []string `json:"interrupted"`
		GatesClosed []string `json:"gates_closed"`
	}](t, r.stdout)
	if out.ID != id || len(out.Interrupted) != 1 || out.Epoch <= before.Epoch || out.GatesClosed == nil {
		t.Fatalf("restore --json = %s; epoch before %d", r.stdout, before.Epoch)
	}
	recs := h.log(id)
	var tail []string
	var interrupted record
	for _, rec := range recs {
		if rec.Kind == "fence" && rec.Epoch == out.Epoch {
			tail = nil
		}
		tail = append(tail, rec.Type)
		if rec.Type == "TurnInterrupted" {
			interrupted = rec
		}
	}
	if !inOrder(tail, []string{"fence", "RestoreStarted", "TurnInterrupted", "RestoreDone"}) {
		t.Fatalf("records of the restore: %v", tail)
	}
	if interrupted.Reason != "crash" || interrupted.TurnID != out.Interrupted[0] {
		t.Fatalf("TurnInterrupted = %+v", interrupted)
	}
	var text string
	for _, rec := range recs {
		if rec.Type == "TurnOutput" {
			text += rec.Text
		}
	}
	if !strings.HasPrefix(text, "line 1\n") {
		t.Fatalf("output recorded before the crash: %q", text)
	}
	if r := h.must(0, "run", id[:8], "--", "echo", "after"); r.stdout != "after\n" {
		t.Fatalf("run after restore: %q", r.stdout)
	}
	// (run ends with the turn; the host's catalog update may follow.)
	waitUntil(t, "the listing to show no open turn", func() bool { return h.row(id).OpenTurn == nil })
	if row := h.row(id); row.State != "live" {
		t.Fatalf("after the run: %+v, want live in its host", row)
	}
}

func TestHeldSession(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	holder := h.start("restore", id, "--hold", "--json")
	out := decode[struct {
		Epoch uint64 `json:"epoch"`
		PID   int    `json:"pid"`
		Held  bool   `json:"held"`
	}](t, holder.waitLine(t, `"epoch"`))
	if !out.Held || out.PID != holder.cmd.Process.Pid {
		t.Fatalf("restore --hold --json first line: %+v (pid %d)", out, holder.cmd.Process.Pid)
	}

	r := h.must(4, "restore", id, "--json")
	e := decode[errorShape](t, r.stdout)
	if e.Error.Type != "RestoreError" || e.Error.Kind != "lease_failed" || e.Error.HolderEpoch != out.Epoch || e.Error.Holder.PID != out.PID {
		t.Fatalf("second restore: %s", r.stdout)
	}
	r = h.must(4, "restore", id[:8])
	if !strings.Contains(r.stderr, fmt.Sprintf("held by pid %d@", out.PID)) || !strings.Contains(r.stderr, "lease break "+id[:8]+" --yes") {
		t.Fatalf("human error: %s", r.stderr)
	}
	if r := h.must(125, "run", id, "--", "true"); !strings.Contains(r.stderr, "lease_failed") {
		t.Fatalf("run on a held session: %s", r.stderr)
	}
	row := h.row(id)
	if row.State != "held" || row.Holder == nil || row.Holder.PID != out.PID || row.Epoch != out.Epoch {
		t.Fatalf("ls while held: %+v", row)
	}
	if recs := h.log(id); recs[len(recs)-1].Type != "RestoreDone" {
		t.Fatalf("log while held ends with %+v", recs[len(recs)-1])
	}

	// SIGINT releases it cleanly.
	holder.cmd.Process.Signal(syscall.SIGINT)
	if code := holder.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("holder exited %d after SIGINT", code)
	}
	if row := h.row(id); row.State != "idle" {
		t.Fatalf("after the holder's SIGINT: %+v", row)
	}
}

func TestLeaseBreak(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	holder := h.start("restore", id, "--hold")
	holder.waitLine(t, "holding session")

	r := h.must(2, "lease", "break", id)
	if !strings.Contains(r.stderr, "without --yes") || !strings.Contains(r.stderr, "LEASE LOST") {
		t.Fatalf("lease break without --yes: %s", r.stderr)
	}
	if row := h.row(id); row.State != "held" {
		t.Fatalf("refused break changed the lease: %+v", row)
	}
	start := time.Now()
	broke := decode[map[string]any](t, h.must(0, "lease", "break", id[:8], "--yes", "--json").stdout)
	if want := []string{"id", "broken", "epoch", "previous_epoch", "previous_holder", "fenced"}; len(broke) != len(want) {
		t.Fatalf("lease break --json = %v, want the keys %q", broke, want)
	}
	prev, _ := broke["previous_holder"].(map[string]any)
	if broke["id"] != id || broke["broken"] != true || broke["fenced"] != true || broke["epoch"] != broke["previous_epoch"].(float64)+1 ||
		prev["pid"] == nil || prev["host"] == nil {
		t.Fatalf("lease break --json = %v", broke)
	}
	code := holder.wait(t, 5*time.Second)
	if code == 0 || !strings.Contains(holder.stderr.String(), "LEASE LOST") {
		t.Fatalf("holder exited %d after the break; stderr: %s", code, holder.stderr.String())
	}
	t.Logf("holder noticed the break in %s", time.Since(start).Round(time.Millisecond))
	r = h.must(0, "restore", id, "--json")
	if recs := h.log(id); !inOrder(types(recs), []string{"RestoreDone", "fence", "fence", "RestoreStarted", "RestoreDone", "SessionStopped"}) {
		t.Fatalf("journal after break and restore: %v", types(recs))
	}
	if r := h.must(0, "lease", "break", id, "--yes"); !strings.Contains(r.stdout, "not held") {
		t.Fatalf("breaking a free lease: %s", r.stdout)
	}
	free := decode[map[string]any](t, h.must(0, "lease", "break", id, "--yes", "--json").stdout)
	if free["broken"] != false || free["previous_holder"] != nil || free["epoch"].(float64) < broke["epoch"].(float64)+1 {
		t.Fatalf("lease break --json of a free lease = %v", free)
	}
}

func TestRestoreUnknownID(t *testing.T) {
	h := newHarness(t)
	h.must(0, "ls") // creates the store
	random := uuid.NewString()
	r := h.must(3, "restore", random, "--json")
	e := decode[errorShape](t, r.stdout)
	if e.Error.Type != "RestoreError" || e.Error.Kind != "discovery_failed" {
		t.Fatalf("restore of an unknown id: %s", r.stdout)
	}
	r = h.must(3, "restore", "abcd1234")
	if !strings.Contains(r.stderr, "discovery_failed") {
		t.Fatalf("restore of an unknown prefix: %s", r.stderr)
	}
	h.must(125, "run", random, "--", "true")
	h.must(1, "log", random)
	h.must(1, "lease", "break", random, "--yes")
	if rows := h.ls(); len(rows) != 0 {
		t.Fatalf("ls after restoring unknown ids: %+v", rows)
	}
	filepath.WalkDir(h.store, func(path string, d os.DirEntry, err error) error {
		if strings.Contains(path, random) {
			t.Errorf("the store gained %s", path)
		}
		return nil
	})
}

func TestBadInputs(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o600)
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o777)
	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte("[profiles.work]\nengine = \"shell\"\nenigne = \"demo\"\n"), 0o600)

	tests := []struct {
		name string
		args []string
		code int
		want []string // substrings of stderr
	}{
		{"malformed id", []string{"restore", "zz!"}, 2, []string{`not a session id: "zz!"`, "hint:"}},
		{"malformed id for run", []string{"run", "../etc", "--", "true"}, 2, []string{"not a session id"}},
		{"store under a file", []string{"--store", filepath.Join(file, "store"), "ls"}, 1, []string{"not a directory", "--store"}},
		{"world-writable store", []string{"--store", open, "ls"}, 1, []string{"writable by group or others", "chmod 700"}},
		{"bad config", []string{"--config", cfg, "new"}, 1, []string{cfg + ":3: profiles.work.enigne: unknown key \"enigne\""}},
		{"bad config for ls", []string{"--config", cfg, "ls"}, 1, []string{cfg + ":3: "}},
		{"missing config", []string{"--config", filepath.Join(dir, "nope.toml"), "new"}, 1, []string{"nope.toml", "no such file"}},
		{"missing config for log", []string{"log", id, "--config", filepath.Join(dir, "nope.toml")}, 1, []string{"nope.toml"}},
		{"unknown profile", []string{"new", "--rig", "nope"}, 2, []string{`unknown profile "nope"`, "default, demo"}},
		{"run without input", []string{"run", id}, 2, []string{"missing input"}},
		{"run with empty input", []string{"run", id, "--"}, 2, []string{"missing input"}},
		{"run without --", []string{"run", id, "echo", "hi"}, 2, []string{`put the input after "--"`}},
		{"run without id", []string{"run"}, 2, []string{"missing session id"}},
		{"unknown command", []string{"frobnicate"}, 2, []string{`unknown command "frobnicate"`, "looprig --help"}},
		{"typo'd command", []string{"stpo", id}, 2, []string{`unknown command "stpo"; did you mean "stop"?`, "looprig --help"}},
		{"typo'd command, two edits", []string{"resotr"}, 2, []string{`unknown command "resotr"; did you mean "restore"?`}},
		{"typo'd help", []string{"help", "wiat"}, 2, []string{`did you mean "wait"?`}},
		{"unknown flag", []string{"ls", "--frob"}, 2, []string{"unknown flag --frob", "looprig ls --help"}},
		{"unknown global flag", []string{"--frob", "ls"}, 2, []string{"unknown flag --frob"}},
		{"placement without root", []string{"new", "--placement", "exclusive"}, 2, []string{"--placement exclusive needs --root"}},
		{"bad placement", []string{"new", "--placement", "moon"}, 2, []string{"--placement must be"}},
		{"lease without break", []string{"lease"}, 2, []string{"lease break"}},
		{"extra argument", []string{"log", id, "more"}, 2, []string{`unexpected argument "more"`}},
	}
	for _, tt := range tests {
		r := h.run(tt.args...)
		if r.code != tt.code {
			t.Errorf("%s: looprig %v exited %d, want %d; stderr: %s", tt.name, tt.args, r.code, tt.code, r.stderr)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr %q does not contain %q", tt.name, r.stderr, w)
			}
		}
		if tt.code != 0 && !strings.HasPrefix(r.stderr, "looprig: ") {
			t.Errorf("%s: stderr %q does not start with \"looprig: \"", tt.name, r.stderr)
		}
	}

	// The same failures as JSON on stdout.
	jsonTests := []struct {
		args      []string
		code      int
		typ, kind string
	}{
		{[]string{"restore", "zz!", "--json"}, 2, "BadIDError", "bad_id"},
		{[]string{"--store", filepath.Join(file, "s"), "ls", "--json"}, 1, "StoreError", "store_unavailable"},
		{[]string{"--store", open, "ls", "--json"}, 1, "StoreError", "unsafe_store"},
		{[]string{"--config", cfg, "new", "--json"}, 1, "ConfigError", "config_invalid"},
		{[]string{"new", "--rig", "nope", "--json"}, 2, "UnknownProfileError", "unknown_profile"},
		{[]string{"run", id, "--json"}, 2, "UsageError", "usage"},
	}
	for _, tt := range jsonTests {
		r := h.run(tt.args...)
		e := decode[errorShape](t, r.stdout)
		if r.code != tt.code || e.Error.Type != tt.typ || e.Error.Kind != tt.kind || e.Error.Message == "" {
			t.Errorf("looprig %v: exit %d, %s", tt.args, r.code, r.stdout)
		}
		if tt.typ == "ConfigError" && (e.Error.File != cfg || e.Error.Line != 3 || e.Error.Field != "profiles.work.enigne") {
			t.Errorf("ConfigError fields: %s", r.stdout)
		}
	}
}

func TestDemo(t *testing.T) {
	h := newHarness(t)
	start := time.Now()
	r := h.must(0, "demo")
	if d := time.Since(start); d > 6*time.Second {
		t.Errorf("demo took %s", d)
	}
	rows := h.ls()
	if len(rows) != 1 || rows[0].State != "crashed" || rows[0].Title != "demo: crashed mid-turn" {
		t.Fatalf("ls after demo: %+v", rows)
	}
	short := rows[0].ShortID
	// The hints name the binary that ran: the test's looprig is not on the
	// PATH (as ./looprig built in a checkout is not).
	if !strings.Contains(r.stdout, binary+" --store "+h.store+" restore "+short) {
		t.Fatalf("demo output does not show how to restore with %s:\n%s", binary, r.stdout)
	}
	// When the PATH finds it (by a link named looprig), its name is enough.
	h2 := newHome(t)
	bin := t.TempDir()
	if err := os.Symlink(binary, filepath.Join(bin, "looprig")); err != nil {
		t.Fatal(err)
	}
	h2.env = append(h2.env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if r := h2.must(0, "demo"); !strings.Contains(r.stdout, " looprig --store "+h2.store+" restore ") {
		t.Fatalf("demo output with looprig on the PATH:\n%s", r.stdout)
	}
	r = h.must(0, "restore", short)
	if !strings.Contains(r.stdout, "interrupted 1 turn") || !strings.Contains(r.stdout, "| line 3") {
		t.Fatalf("restore of the demo session:\n%s", r.stdout)
	}
	recs := h.log(rows[0].ID)
	if !inOrder(types(recs), []string{"TurnStarted", "TurnOutput", "fence", "RestoreStarted", "TurnInterrupted", "RestoreDone"}) {
		t.Fatalf("demo journal: %v", types(recs))
	}
}

func TestRunExitCodes(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	h.must(7, "run", id, "--", "exit 7")
	h.must(137, "run", id, "--", "kill -9 $$")
	r := h.must(1, "run", id, "--", "sudo", "true")
	if !strings.Contains(r.stderr, "denied: stdin is not a terminal") || !strings.Contains(r.stderr, "failed") {
		t.Fatalf("gated run: %s", r.stderr)
	}
	recs := h.log(id)
	if !inOrder(types(recs), []string{"GateOpened", "GateResolved", "TurnFailed"}) {
		t.Fatalf("gated run journal: %v", types(recs))
	}
}

// SIGINT interrupts the turn, and run exits 130. In the host run started,
// the session stays live; in process (--in-process), run shuts it down.
func TestRunInterrupt(t *testing.T) {
	for _, inProcess := range []bool{false, true} {
		name := "in its host"
		if inProcess {
			name = "in process"
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			id := h.newSession()
			args := []string{"run", id, "--", `echo started; sleep 30`}
			if inProcess {
				args = slices.Insert(args, 1, "--in-process")
			}
			p := h.start(args...)
			p.waitLine(t, "started")
			p.cmd.Process.Signal(syscall.SIGINT)
			if code := p.wait(t, 10*time.Second); code != 130 {
				t.Fatalf("run exited %d after SIGINT, want 130; stderr: %s", code, p.stderr.String())
			}
			last, state := "SessionIdle", "live" // the host journals it after the turn's end, run's last event
			if inProcess {
				last, state = "SessionStopped", "idle"
			}
			recs := h.waitLog(id, last)
			var reason string
			for _, r := range recs {
				if r.Type == "TurnInterrupted" {
					reason = r.Reason
				}
			}
			if reason != "user" || recs[len(recs)-1].Type != last {
				t.Fatalf("after SIGINT: interrupted %q, journal %v; want interrupted \"user\", ending with %s", reason, types(recs), last)
			}
			if row := h.row(id); row.State != state {
				t.Fatalf("after SIGINT: %+v, want %s", row, state)
			}
		})
	}
}

func TestLogFollow(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	f := h.start("log", id, "--follow", "--json")
	f.waitLine(t, `"SessionStopped"`)
	h.must(0, "run", id, "--", "echo", "followed")
	f.waitLine(t, `"followed\n"`)
	f.waitLine(t, `"TurnDone"`)
	f.cmd.Process.Signal(syscall.SIGINT)
	if code := f.wait(t, 5*time.Second); code != 0 {
		t.Fatalf("log --follow exited %d", code)
	}
}

func TestDrift(t *testing.T) {
	h := newHarness(t)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	write := func(s string) { os.WriteFile(cfg, []byte(s), 0o600) }
	write("default_profile = \"work\"\n[profiles.work]\nengine = \"shell\"\ngate_policy = [\"rm -rf\"]\n")
	id := h.newSession("--config", cfg)
	if row := h.row(id); row.Profile != "work" {
		t.Fatalf("profile %q", row.Profile)
	}
	countAdopted := func() int {
		n := 0
		for _, r := range h.log(id) {
			if r.Type == "ConfigurationAdopted" {
				n++
			}
		}
		return n
	}
	// Info-level drift (gate policy) is accepted by default, once, and
	// says so in its own words; it is the baseline from then on.
	write("default_profile = \"work\"\n[profiles.work]\nengine = \"shell\"\ngate_policy = []\n")
	r := h.must(0, "--config", cfg, "restore", id)
	if !strings.Contains(r.stdout, "adopted info-level configuration drift") || strings.Contains(r.stdout, "--accept-drift") {
		t.Fatalf("info-level drift adopted by default, human: %s", r.stdout)
	}
	r = h.must(0, "--config", cfg, "restore", id)
	if strings.Contains(r.stdout, "adopted") || countAdopted() != 1 {
		t.Fatalf("second restore under the same profile adopted again (%d ConfigurationAdopted): %s", countAdopted(), r.stdout)
	}
	// Warn-level drift (engine) is refused with the change table, measured
	// against the adopted baseline: only the engine changed since.
	write("[profiles.work]\nengine = \"demo\"\ngate_policy = []\n")
	r = h.must(3, "--config", cfg, "restore", id, "--json")
	e := decode[errorShape](t, r.stdout)
	if e.Error.Type != "RestoreRejectedError" || e.Error.Kind != "config_rejected" || len(e.Error.Changes) != 1 ||
		e.Error.Changes[0] != (change{"engine", "shell", "demo", "warn"}) {
		t.Fatalf("drift: %s", r.stdout)
	}
	if !strings.Contains(r.stdout, `{"field":"engine","persisted":"shell","live":"demo","level":"warn"}`) {
		t.Fatalf("change objects keep their documented key order: %s", r.stdout)
	}
	r = h.must(3, "--config", cfg, "restore", id)
	if !strings.Contains(r.stderr, "FIELD") || !strings.Contains(r.stderr, "--accept-drift") {
		t.Fatalf("drift, human: %s", r.stderr)
	}
	r = h.must(0, "--config", cfg, "restore", id, "--accept-drift")
	if !strings.Contains(r.stdout, "adopted configuration drift (--accept-drift)") {
		t.Fatalf("accepted drift, human: %s", r.stdout)
	}
	if !inOrder(types(h.log(id)), []string{"RestoreStarted", "ConfigurationAdopted", "RestoreDone"}) || countAdopted() != 2 {
		t.Fatalf("no ConfigurationAdopted for --accept-drift")
	}
	// Accepted once: a plain restore under the same profile succeeds and
	// adopts nothing.
	r = h.must(0, "--config", cfg, "restore", id, "--json")
	if v := decode[struct {
		Adopted []change `json:"adopted"`
	}](t, r.stdout); len(v.Adopted) != 0 || countAdopted() != 2 {
		t.Fatalf("plain restore after --accept-drift adopted %+v (%d ConfigurationAdopted)", v.Adopted, countAdopted())
	}
	// Changed again: the new drift is measured against the adopted demo
	// engine, not the shell engine the session was created with.
	write("[profiles.work]\nengine = \"shell\"\ngate_policy = [\"sudo\"]\n")
	r = h.must(3, "--config", cfg, "restore", id, "--json")
	e = decode[errorShape](t, r.stdout)
	if len(e.Error.Changes) != 2 || e.Error.Changes[0] != (change{"engine", "demo", "shell", "warn"}) ||
		e.Error.Changes[1] != (change{"gate_policy", "", "sudo", "info"}) {
		t.Fatalf("drift after an adoption: %s", r.stdout)
	}
	// The profile is gone: the error says so and how to go on.
	write("")
	r = h.must(3, "--config", cfg, "restore", id)
	if !strings.Contains(r.stderr, `profile "work"`) || !strings.Contains(r.stderr, "--rig NAME") {
		t.Fatalf("profile gone: %s", r.stderr)
	}
	h.must(0, "--config", cfg, "restore", id, "--rig", "demo", "--accept-drift")
}

func TestHelpAndVersion(t *testing.T) {
	h := newHarness(t)
	for _, args := range [][]string{{"--help"}, {"help"}, {"ls", "--help"}, {"new", "-h"}, {"run", "--help"},
		{"restore", "--help"}, {"log", "--help"}, {"rm", "--help"}, {"lease", "break", "--help"}, {"demo", "--help"}, {"version", "--help"}, {"help", "run"}} {
		r := h.must(0, args...)
		if !strings.Contains(r.stdout, "Usage:") || !strings.Contains(r.stdout, "Example") {
			t.Errorf("looprig %v:\n%s", args, r.stdout)
		}
	}
	if r := h.must(0, "version"); !strings.Contains(r.stdout, "looprig ") || !strings.Contains(r.stdout, "go1.") {
		t.Errorf("version: %s", r.stdout)
	}
	// Without a terminal the UI cannot start: a usage error that names the
	// headless commands instead.
	if r := h.must(2); !strings.Contains(r.stderr, "needs a terminal") || !strings.Contains(r.stderr, "looprig ls") {
		t.Errorf("no subcommand without a terminal: %s", r.stderr)
	}
}

func TestLeaseBreakDuringRun(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	p := h.start("run", id, "--", `echo started; for i in $(seq 100); do sleep 0.1; done; echo finished`)
	p.waitLine(t, "started")
	h.must(0, "lease", "break", id, "--yes")
	if code := p.wait(t, 5*time.Second); code != 125 {
		t.Fatalf("run exited %d after its lease was broken, want 125; stderr: %s", code, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "LEASE LOST") {
		t.Fatalf("run stderr: %s", p.stderr.String())
	}
	// The break closed the turn the broken holder was running (it stopped
	// its processes): the restore has nothing left to close.
	r := h.must(0, "restore", id, "--json")
	if !strings.Contains(r.stdout, `"interrupted":[]`) {
		t.Fatalf("the restore closed a turn after the break: %s", r.stdout)
	}
	ended := 0
	for _, rec := range h.log(id) {
		switch rec.Type {
		case "TurnDone":
			t.Fatalf("the broken holder recorded the end of its turn: %+v", rec)
		case "TurnInterrupted":
			if ended++; rec.Reason != "lease_lost" {
				t.Fatalf("the turn ended as %+v, want interrupted by the lost lease", rec)
			}
		}
	}
	if ended != 1 {
		t.Fatalf("%d ends of the one turn", ended)
	}
}

func TestBrokenSessions(t *testing.T) {
	h := newHarness(t)
	good := h.newSession("--title", "good")
	badCatalog := h.newSession("--title", "bad catalog")
	badJournal := h.newSession("--title", "bad journal")
	h.must(0, "run", "--in-process", badJournal, "--", "echo", "one") // idle afterwards: no host holds its journal

	catalogs, _ := filepath.Glob(filepath.Join(h.store, "kv", "sessions", badCatalog, "catalog*"))
	if len(catalogs) != 1 {
		t.Fatalf("catalog file of %s: %v", badCatalog, catalogs)
	}
	os.WriteFile(catalogs[0], []byte("garbage"), 0o600)
	journals, _ := filepath.Glob(filepath.Join(h.store, "ledgers", "sessions", badJournal+"*"))
	if len(journals) != 1 {
		t.Fatalf("journal of %s: %v", badJournal, journals)
	}
	b, _ := os.ReadFile(journals[0])
	b[len(b)/2] ^= 0xff
	os.WriteFile(journals[0], b, 0o600)

	rows := h.ls()
	states := map[string]sessionRow{}
	for _, r := range rows {
		states[r.ID] = r
	}
	if len(rows) != 3 || states[good].State != "idle" || states[badCatalog].State != "broken" || states[badCatalog].Reason == "" {
		t.Fatalf("ls with a broken catalog: %+v", rows)
	}
	if out := h.must(0, "ls").stdout; !strings.Contains(out, "⊘ broken") || !strings.Contains(out, badCatalog[:8]+" broken: ") {
		t.Fatalf("ls:\n%s", out)
	}
	r := h.must(3, "restore", badJournal)
	if !strings.Contains(r.stderr, "journal is damaged") || !strings.Contains(r.stderr, "broken journal") {
		t.Fatalf("restore of a damaged journal: %s", r.stderr)
	}
	r = h.must(1, "log", badJournal, "--json")
	if e := decode[errorShape](t, lastLine(r.stdout)); e.Error.Type != "CorruptError" || e.Error.Kind != "corrupt" {
		t.Fatalf("log of a damaged journal: %s", r.stdout)
	}
	h.must(0, "run", good, "--", "true") // the others are unaffected
}

func lastLine(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return ls[len(ls)-1]
}

func TestRunGateOnTerminal(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	for _, tt := range []struct {
		answer string
		code   int
		action string
	}{{"y", 0, "approve"}, {"n", 1, "deny"}, {"", 1, "deny"}} {
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
}

func lastGateAction(t *testing.T, h *harness, id string) string {
	t.Helper()
	action := ""
	for _, m := range lines[map[string]any](t, h.must(0, "log", id, "--json").stdout) {
		if m["type"] == "GateResolved" && m["reason"] == "user" {
			action, _ = m["action"].(string)
		}
	}
	return action
}

func TestRm(t *testing.T) {
	h := newHarness(t)
	keep := h.newSession("--title", "keep")
	doomed := h.newSession("--title", "doomed")
	h.must(0, "run", "--in-process", doomed, "--", "echo data > file.txt") // idle afterwards
	ws := filepath.Join(h.store, "workspaces", doomed)
	if _, err := os.Stat(filepath.Join(ws, "file.txt")); err != nil {
		t.Fatalf("the turn's file: %v", err)
	}

	// Without --yes: says what would go, exits 2, removes nothing.
	r := h.must(2, "rm", doomed[:8])
	if !strings.Contains(r.stderr, "without --yes") || !strings.Contains(r.stderr, `"doomed"`) || !strings.Contains(r.stderr, ws) {
		t.Fatalf("rm without --yes: %s", r.stderr)
	}
	if row := h.row(doomed); row.State != "idle" {
		t.Fatalf("refused rm changed the session: %+v", row)
	}

	// Held elsewhere: exit 4, typed, nothing removed.
	holder := h.start("restore", doomed, "--hold")
	holder.waitLine(t, "holding session")
	r = h.must(4, "rm", doomed, "--yes", "--json")
	if e := decode[errorShape](t, r.stdout); e.Error.Type != "LeaseHeldError" || e.Error.Kind != "lease_held" || e.Error.Holder.PID != holder.cmd.Process.Pid {
		t.Fatalf("rm of a held session: %s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(ws, "file.txt")); err != nil {
		t.Fatalf("workspace after a refused rm: %v", err)
	}
	holder.cmd.Process.Signal(syscall.SIGINT)
	if code := holder.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("holder exited %d after SIGINT", code)
	}

	r = h.must(0, "rm", doomed[:8], "--yes", "--json")
	out := decode[struct {
		ID        string  `json:"id"`
		Deleted   bool    `json:"deleted"`
		Journal   bool    `json:"journal"`
		Catalog   bool    `json:"catalog"`
		Workspace *string `json:"workspace"`
	}](t, r.stdout)
	if out.ID != doomed || !out.Deleted || !out.Journal || !out.Catalog || out.Workspace == nil || *out.Workspace != ws {
		t.Fatalf("rm --json: %s", r.stdout)
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Fatalf("workspace after rm: %v", err)
	}
	rows := h.ls()
	if len(rows) != 1 || rows[0].ID != keep {
		t.Fatalf("ls after rm: %+v", rows)
	}
	if r := h.must(1, "rm", doomed, "--yes"); !strings.Contains(r.stderr, "looprig ls") {
		t.Fatalf("rm of a deleted session: %s", r.stderr)
	}
	if r := h.must(3, "restore", doomed); !strings.Contains(r.stderr, "discovery_failed") {
		t.Fatalf("restore of a deleted session: %s", r.stderr)
	}
	h.must(2, "rm")
	h.must(0, "run", keep, "--", "true") // the other session is untouched

	// A session whose journal and catalog entry are damaged is what rm is
	// often for: it goes too.
	broken := h.newSession("--title", "broken")
	h.must(0, "run", "--in-process", broken, "--", "echo one; echo two") // idle afterwards: rm may take it
	journal := filepath.Join(h.store, "ledgers", "sessions", broken+".log")
	b, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x40
	if err := os.WriteFile(journal, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.store, "kv", "sessions", broken, "catalog.kv"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := h.must(2, "rm", broken[:8]); !strings.Contains(r.stderr, "damaged journal") {
		t.Fatalf("rm of a damaged session without --yes: %s", r.stderr)
	}
	h.must(0, "rm", broken[:8], "--yes")
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Fatalf("damaged journal after rm: %v", err)
	}
	if rows := h.ls(); len(rows) != 1 || rows[0].ID != keep {
		t.Fatalf("ls after removing the damaged session: %+v", rows)
	}
}

// scratchUnlessPlaced is args with --scratch, unless they say where the
// session works (--root, --placement) or choose a profile (--rig), which
// may pin its placement.
func scratchUnlessPlaced(args []string) []string {
	for _, a := range args {
		switch a {
		case "--root", "--placement", "--rig", "--scratch":
			return args
		}
	}
	return append([]string{"--scratch"}, args...)
}
