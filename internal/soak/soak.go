// Package soak is looprig's crash soak: it drives the real looprig binary
// through many trials, each a chatty `looprig run --in-process` (the
// process that writes the session's journal) that is SIGKILLed at a
// random moment, followed by `looprig restore` and a check of what the
// store kept against what the killed process had acknowledged. (A plain
// `looprig run` would run the turn in a host it starts, which its kill
// leaves running: hosts mode kills hosts.)
//
// The killed process reports acknowledgements on a side channel
// (LOOPRIG_ACK_FD, see cli/ackfd.go): one "SEQ TYPE" line per journal
// record it saw delivered, which the runtime does only after the record's
// fdatasync. A trial then checks, from `looprig log --json` and
// `looprig ls --json`:
//
//   - lost: every acknowledged record of the session, over all its trials
//     so far, is in the journal at its sequence with its type;
//   - sequences are contiguous from 1;
//   - every TurnStarted has exactly one terminal record (TurnDone,
//     TurnFailed or TurnInterrupted) after it, and no terminal record
//     closes a turn that did not start;
//   - fence epochs strictly increase. The one exception rig allows is a
//     second fence at the same epoch written by a restore that failed and
//     re-opened its journal to record RestoreErrored (rig/restore.go,
//     recordRestoreErrored): it is accepted only when RestoreErrored
//     follows it directly (or nothing does but another fence, if a crash
//     came between the two appends);
//   - the restore committed (exit 0, RestoreDone at the restore's epoch,
//     which is the journal's last fence) and no session of the store is
//     listed as broken.
//
// With Config.Hosts (scripts/soak --hosts) the session lives in a host
// process and each trial SIGKILLs either the client or the host; see
// hosts.go.
//
// scripts/soak runs it from the command line; a short version runs in
// `go test` (soak_test.go).
package soak

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DefaultInput is the chatty turn every trial runs.
const DefaultInput = `for i in $(seq 100000); do echo $i; done`

// Config describes a soak.
type Config struct {
	// Binary is the looprig binary to drive. Required.
	Binary string
	// Dir holds the store, a home directory and the acknowledgement
	// files. Required; it should be empty.
	Dir string
	// Trials is the number of kill trials (default 200).
	Trials int
	// PerSession is how many consecutive trials share one session
	// (default 5), so restores follow restores and epochs pile up.
	PerSession int
	// KillWithin bounds the random kill moment, measured from the start
	// of `looprig run`. Zero adapts it: 1.25 times the median duration of
	// the last nine runs that ended by themselves (five calibration runs
	// first).
	KillWithin time.Duration
	// Input is the turn each run submits (default DefaultInput).
	Input string
	// Seed seeds the kill moments (0: random).
	Seed uint64
	// Log receives one line per trial and diagnostics; nil discards.
	Log io.Writer
	// CommandTimeout bounds every looprig command (default 60s).
	CommandTimeout time.Duration
	// Hosts runs the soak through hosts (hosts.go): the session is live
	// in a background host (`looprig host`), each `looprig run` goes
	// through it, and each trial SIGKILLs either that client or the host.
	Hosts bool
	// RuntimeDir is XDG_RUNTIME_DIR for the driven binary in hosts mode
	// (the hosts' sockets and logs). It must be short: a socket path holds
	// at most 103 bytes. Empty: a new private directory under os.TempDir,
	// removed at the end.
	RuntimeDir string
}

// Result counts what a soak saw.
type Result struct {
	Trials     int
	Lost       int // acknowledged records missing or changed after restore
	Failed     int // trials with any other failure
	Killed     int // runs SIGKILLed (one per trial that got that far)
	Completed  int // runs that ended by themselves before their kill moment
	Acked      int // acknowledgements read, over all trials
	Sessions   int
	KillWithin time.Duration
	Elapsed    time.Duration
	Failures   []string // one line per failed trial (first 50)

	// Hosts mode only.
	KilledClients int // trials that SIGKILLed the client (`looprig run`)
	KilledHosts   int // trials that SIGKILLed the session's host
	FellBack      int // runs whose host was killed before they reached it, which restored the session in a new host
	Stopped       int // hosts shut down with `looprig stop` (and checked)
}

// Summary is the last line scripts/soak prints.
func (r Result) Summary() string {
	return fmt.Sprintf("soak: %d trials, %d lost, %d failed", r.Trials, r.Lost, r.Failed)
}

type soaker struct {
	cfg    Config
	store  string
	env    []string
	rng    *rand.Rand
	log    io.Writer
	fixed  bool            // cfg.KillWithin was given
	window time.Duration   // the current kill window
	recent []time.Duration // durations of the last runs that ended by themselves

	// Hosts mode.
	runtime    string         // XDG_RUNTIME_DIR of the driven binary
	ownRuntime bool           // runtime was made by the soak: remove it at the end
	hosts      map[string]int // session id -> pid of its host, for every host the soak believes live
}

// Run runs the soak. Its error is for setup failures only; trial failures
// are counted in the result.
func Run(ctx context.Context, cfg Config) (res Result, err error) {
	if cfg.Binary == "" || cfg.Dir == "" {
		return Result{}, errors.New("soak: Config needs Binary and Dir")
	}
	if cfg.Trials <= 0 {
		cfg.Trials = 200
	}
	if cfg.PerSession <= 0 {
		cfg.PerSession = 5
	}
	if cfg.Input == "" {
		cfg.Input = DefaultInput
	}
	if cfg.CommandTimeout <= 0 {
		cfg.CommandTimeout = 60 * time.Second
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	s := &soaker{cfg: cfg, store: filepath.Join(cfg.Dir, "store"), rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), log: cfg.Log}
	if s.log == nil {
		s.log = io.Discard
	}
	home := filepath.Join(cfg.Dir, "home")
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "acks"), 0o700); err != nil {
		return Result{}, err
	}
	s.env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"XDG_STATE_HOME="+filepath.Join(home, "state"), "LOOPRIG_STORE=")
	if cfg.Hosts {
		if err := s.setupHosts(); err != nil {
			return Result{}, err
		}
		// No host outlives the soak, whatever ends it.
		defer s.endHosts(&res)
	}
	start := time.Now()
	res = Result{KillWithin: cfg.KillWithin}
	fmt.Fprintf(s.log, "soak: seed %d, store %s\n", seed, s.store)
	if cfg.Hosts {
		fmt.Fprintf(s.log, "soak: hosts mode, runtime directory %s\n", s.runtime)
	}
	if res.KillWithin > 0 {
		s.fixed, s.window = true, res.KillWithin
	} else if cfg.Hosts {
		if err := s.calibrateHosts(ctx); err != nil {
			return res, err
		}
	} else if err := s.calibrate(ctx); err != nil {
		return res, err
	}
	res.KillWithin = s.window
	fmt.Fprintf(s.log, "soak: killing within %v of each run's start\n", s.window.Round(time.Millisecond))
	if cfg.Hosts {
		err := s.runHosts(ctx, &res)
		res.Elapsed = time.Since(start)
		return res, err
	}

	var sess *session
	for i := 0; i < cfg.Trials; i++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if sess == nil || i%cfg.PerSession == 0 {
			id, err := s.newSession(ctx, fmt.Sprintf("soak %d", i/cfg.PerSession))
			if err != nil {
				res.Trials++
				res.fail(i, "new: "+err.Error())
				sess = nil
				continue
			}
			sess = &session{id: id, acked: map[uint64]string{}}
			res.Sessions++
		}
		tr := s.trial(ctx, i, sess)
		res.Trials++
		res.Acked += tr.acked
		res.Lost += tr.lost
		if tr.killed {
			res.Killed++
		}
		res.Completed += tr.completed
		status := "ok"
		if tr.err != nil {
			res.fail(i, tr.err.Error())
			status = "FAILED: " + tr.err.Error()
		}
		how := fmt.Sprintf("killed after %v", tr.after.Round(time.Millisecond))
		if tr.completed > 0 {
			how += fmt.Sprintf(" (after %d runs that ended by themselves)", tr.completed)
		}
		for _, step := range tr.steps {
			how += ", " + step
		}
		fmt.Fprintf(s.log, "trial %d: session %.8s, %s, %d acked (%d so far), %d records, %d lost: %s\n",
			i+1, sess.id, how, tr.acked, len(sess.acked), tr.records, tr.lost, status)
		if tr.err != nil {
			sess = nil // start the next trial on a fresh session
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

func (r *Result) fail(i int, msg string) {
	r.failf("trial %d: %s", i+1, msg)
}

// failf counts a failure outside a trial too (hosts left running).
func (r *Result) failf(format string, args ...any) {
	r.Failed++
	if len(r.Failures) < 50 {
		r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
	}
}

// session is a session under soak and everything acknowledged for it.
type session struct {
	id    string
	acked map[uint64]string // seq -> record type

	// Hosts mode.
	pid      int    // its host's, 0 when no host serves it
	epoch    uint64 // the epoch of its last fence: its host's, or its last restore's
	restored bool   // a RestoreDone at epoch is in the journal (not so after new)
	kinds    [2]int // trials that killed the client, the host
}

type trialResult struct {
	killed    bool
	victim    int // the pid killed
	after     time.Duration
	completed int // runs of the trial that ended before their kill moment
	acked     int
	records   int
	lost      int
	err       error

	// Hosts mode.
	target   killTarget
	fellBack bool     // the killed host's client ran the turn itself
	stopped  int      // hosts stopped by the trial
	steps    []string // what the trial did, for its log line
}

// looprig runs the binary to completion.
func (s *soaker) looprig(ctx context.Context, args ...string) (stdout, stderr []byte, code int, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.cfg.Binary, append([]string{"--store", s.store}, args...)...)
	cmd.Env = s.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.Bytes(), errb.Bytes(), ee.ExitCode(), nil
	}
	return out.Bytes(), errb.Bytes(), 0, err
}

func (s *soaker) newSession(ctx context.Context, title string) (string, error) {
	out, errb, code, err := s.looprig(ctx, "new", "--scratch", "--json", "--title", title)
	if err != nil {
		return "", err
	}
	if code != 0 {
		return "", fmt.Errorf("exit %d: %s", code, firstLine(errb, out))
	}
	var v struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(out, &v); err != nil || v.ID == "" {
		return "", fmt.Errorf("new --json said %q: %v", out, err)
	}
	return v.ID, nil
}

// calibrate times five unkilled runs on a scratch session to set the first
// kill window.
func (s *soaker) calibrate(ctx context.Context) error {
	id, err := s.newSession(ctx, "soak calibration")
	if err != nil {
		return fmt.Errorf("soak: calibration: %w", err)
	}
	for i := 0; i < 5; i++ {
		start := time.Now()
		_, errb, code, err := s.looprig(ctx, "run", "--in-process", id, "--", s.cfg.Input)
		if err != nil || code != 0 {
			return fmt.Errorf("soak: calibration run: exit %d %v: %s", code, err, firstLine(errb))
		}
		s.ranFor(time.Since(start))
	}
	return nil
}

// ranFor records the duration of a run that ended by itself. Unless the
// window is fixed it is 1.25 times the median of the last nine such runs,
// so that most runs are killed, at any of their phases (start, restore, the
// turn, shutdown), and the window follows the machine's load.
func (s *soaker) ranFor(d time.Duration) {
	s.recent = append(s.recent, d)
	if len(s.recent) > 9 {
		s.recent = s.recent[1:]
	}
	if s.fixed {
		return
	}
	sorted := append([]time.Duration(nil), s.recent...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a] < sorted[b] })
	s.window = sorted[len(sorted)/2] * 5 / 4
}

// trial runs one chatty turn, kills it at a random moment, restores and
// checks the session.
func (s *soaker) trial(ctx context.Context, i int, sess *session) (tr trialResult) {
	ackPath, ackFile, err := s.openAcks(i)
	if err != nil {
		tr.err = err
		return tr
	}
	defer ackFile.Close()
	// The runs, and what the dead process (and the runs before it)
	// promised.
	if tr.err = runUntilKilled(&tr, sess, ackPath, func() error { return s.killOneRun(sess, ackFile, &tr) }); tr.err != nil {
		return tr
	}

	// Restore: must commit.
	out, errOut, code, err := s.restoreAfterKill(ctx, sess.id, &tr)
	if err != nil || code != 0 {
		tr.err = fmt.Errorf("restore: exit %d %v: %s", code, err, firstLine(out, errOut))
		return tr
	}
	var restored struct {
		Epoch uint64 `json:"epoch"`
	}
	if err := json.Unmarshal(firstJSON(out), &restored); err != nil || restored.Epoch == 0 {
		tr.err = fmt.Errorf("restore --json said %q: %v", out, err)
		return tr
	}

	// The journal.
	out, errOut, code, err = s.looprig(ctx, "log", sess.id, "--json")
	if err != nil || code != 0 {
		tr.err = fmt.Errorf("log: exit %d %v: %s", code, err, firstLine(errOut, out))
		return tr
	}
	recs, err := parseLog(out)
	if err != nil {
		tr.err = err
		return tr
	}
	tr.records = len(recs)
	lost, err := check(recs, sess.acked, restored.Epoch)
	tr.lost = lost
	if err != nil {
		tr.err = err
		return tr
	}
	if lost > 0 {
		tr.err = fmt.Errorf("%d acknowledged records lost", lost)
		return tr
	}

	// The listing.
	out, errOut, code, err = s.looprig(ctx, "ls", "--json")
	if err != nil || code != 0 {
		tr.err = fmt.Errorf("ls: exit %d %v: %s", code, err, firstLine(errOut, out))
		return tr
	}
	var rows []struct {
		ID     string `json:"id"`
		State  string `json:"state"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		tr.err = fmt.Errorf("ls --json: %v", err)
		return tr
	}
	found := false
	for _, r := range rows {
		if r.State == "broken" {
			tr.err = fmt.Errorf("ls: session %s is broken: %s", r.ID, r.Reason)
			return tr
		}
		if r.ID == sess.id {
			found = true
			if r.State != "idle" {
				tr.err = fmt.Errorf("ls: session is %s after a clean restore, want idle", r.State)
				return tr
			}
		}
	}
	if !found {
		tr.err = errors.New("ls: the session is not listed")
	}
	return tr
}

// heldWait bounds how long a restore refused for the lease of the process
// a trial killed is retried (restoreAfterKill).
const heldWait = 5 * time.Second

// restoreAfterKill restores session id after tr's kill. The lease of the
// killed process can outlive it for a moment: its lock is still in
// /proc/locks after the process was reaped, and gone within a second
// (seen at about one restore in forty right after a kill early in a run;
// the cause is not pinned down). A restore refused for a lease held by
// that dead process is retried, for heldWait at most; tr.steps says how
// often. A holder that is alive, or any other refusal, fails the trial.
func (s *soaker) restoreAfterKill(ctx context.Context, id string, tr *trialResult) (stdout, stderr []byte, code int, err error) {
	deadline := time.Now().Add(heldWait)
	for retries := 0; ; retries++ {
		stdout, stderr, code, err = s.looprig(ctx, "restore", id, "--json")
		var refused struct {
			Error struct {
				Kind   string `json:"kind"`
				Holder struct {
					PID int `json:"pid"`
				} `json:"holder"`
			} `json:"error"`
		}
		if err != nil || code == 0 || json.Unmarshal(firstJSON(stdout), &refused) != nil || refused.Error.Kind != "lease_failed" ||
			tr.victim == 0 || refused.Error.Holder.PID != tr.victim || alive(tr.victim) || time.Now().After(deadline) {
			if retries > 0 {
				tr.steps = append(tr.steps, fmt.Sprintf("restore retried %d times: the dead process's lease was still held", retries))
			}
			return stdout, stderr, code, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// maxRunsPerTrial bounds the runs of one trial that end by themselves.
const maxRunsPerTrial = 20

// runUntilKilled calls run (one run of the session, killed at its kill
// moment unless it ends first) until a run is killed: runs that end before
// their kill moment are followed by another run of the same session, so
// that every trial is a kill. Then it reads what the runs acknowledged in
// ackPath, the trial's ack file, into sess.acked (tr.acked counts the
// lines).
func runUntilKilled(tr *trialResult, sess *session, ackPath string, run func() error) error {
	for !tr.killed {
		if tr.completed == maxRunsPerTrial {
			return fmt.Errorf("%d runs in a row ended before their kill moment", tr.completed)
		}
		if err := run(); err != nil {
			return err
		}
	}
	n, err := readAcks(ackPath, sess.acked)
	tr.acked = n
	return err
}

// openAcks creates (or empties) trial i's ack file, for the trial's runs
// to acknowledge on as their LOOPRIG_ACK_FD.
func (s *soaker) openAcks(i int) (string, *os.File, error) {
	path := filepath.Join(s.cfg.Dir, "acks", fmt.Sprintf("%04d", i+1))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o600)
	return path, f, err
}

// startedRun is a `looprig run` started by startRun, to be killed when
// timer fires (after, a random moment in the kill window from start)
// unless done delivers its Wait's result first.
type startedRun struct {
	cmd   *exec.Cmd
	errb  *tailBuffer // the tail of its stderr
	after time.Duration
	start time.Time
	done  chan error
	timer *time.Timer
}

// startRun starts looprig with the store and args, acknowledging on
// ackFile as its fd 3, and draws its kill moment. The caller stops
// r.timer.
func (s *soaker) startRun(ackFile *os.File, args ...string) (*startedRun, error) {
	cmd := exec.Command(s.cfg.Binary, append([]string{"--store", s.store}, args...)...)
	cmd.Env = append(s.env, "LOOPRIG_ACK_FD=3")
	cmd.ExtraFiles = []*os.File{ackFile}
	errb := &tailBuffer{}
	cmd.Stdout, cmd.Stderr = io.Discard, errb
	after := time.Duration(s.rng.Int64N(int64(s.window) + 1))
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start run: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return &startedRun{cmd: cmd, errb: errb, after: after, start: start, done: done, timer: time.NewTimer(after)}, nil
}

// killOneRun starts `looprig run --in-process` and SIGKILLs it at a random
// moment in the kill window from its start, unless it ends first
// (tr.completed counts those; a run that ends with an error fails the
// trial).
func (s *soaker) killOneRun(sess *session, ackFile *os.File, tr *trialResult) error {
	r, err := s.startRun(ackFile, "run", "--in-process", sess.id, "--", s.cfg.Input)
	if err != nil {
		return err
	}
	defer r.timer.Stop()
	var waitErr error
	killed := false
	select {
	case waitErr = <-r.done:
	case <-r.timer.C:
		killed = true
		_ = r.cmd.Process.Signal(syscall.SIGKILL)
		waitErr = <-r.done
	}
	exit := 0
	var ee *exec.ExitError
	switch {
	case errors.As(waitErr, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL && killed {
			tr.killed, tr.victim, tr.after = true, r.cmd.Process.Pid, r.after
			return nil
		}
		exit = ee.ExitCode()
	case waitErr != nil:
		return fmt.Errorf("run: %w", waitErr)
	}
	if exit != 0 {
		return fmt.Errorf("run ended by itself with exit %d after %v: %s", exit, time.Since(r.start).Round(time.Millisecond), r.errb.String())
	}
	tr.completed++ // ended (exit 0) before the kill moment, or just as the kill came
	s.ranFor(time.Since(r.start))
	return nil
}

// readAcks adds the acknowledgements in path to acked and returns how many
// lines it read. A line acknowledging a sequence already acknowledged with
// another type is an error (the writer would have promised two records).
func readAcks(path string, acked map[uint64]string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		seqStr, typ, ok := strings.Cut(sc.Text(), " ")
		seq, err := strconv.ParseUint(seqStr, 10, 64)
		if !ok || err != nil || seq == 0 || typ == "" {
			return n, fmt.Errorf("ack file %s: bad line %q", path, sc.Text())
		}
		if old, ok := acked[seq]; ok && old != typ {
			return n, fmt.Errorf("seq %d acknowledged as %s and as %s", seq, old, typ)
		}
		acked[seq] = typ
		n++
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		return n, fmt.Errorf("ack file %s ends in half a line", path)
	}
	return n, sc.Err()
}

// record is what the soak reads of one `log --json` line.
type record struct {
	Seq    uint64 `json:"seq"`
	Kind   string `json:"kind"`
	Type   string `json:"type"`
	Epoch  uint64 `json:"epoch"`
	TurnID string `json:"turn_id"`
	// ExitCode is a TurnDone's (hosts mode).
	ExitCode *int `json:"exit_code"`
}

func parseLog(out []byte) ([]record, error) {
	var recs []record
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var r record
		if err := json.Unmarshal(l, &r); err != nil {
			return nil, fmt.Errorf("log --json line %q: %v", l, err)
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// check verifies a restored journal. It returns how many acknowledged
// records are missing or changed, and an error for any other violation.
func check(recs []record, acked map[uint64]string, restoreEpoch uint64) (lost int, err error) {
	return checkJournal(recs, acked, restoreEpoch, true)
}

// checkJournal is check for a journal whose last fence has epoch, and
// which has a RestoreDone at that epoch when restored (a session live in
// a host since `new --detach` has none).
func checkJournal(recs []record, acked map[uint64]string, epoch uint64, restored bool) (lost int, err error) {
	restoreEpoch := epoch
	bySeq := make(map[uint64]record, len(recs))
	var problems []string
	for i, r := range recs {
		if r.Seq != uint64(i+1) {
			problems = append(problems, fmt.Sprintf("record %d has seq %d: sequences are not contiguous from 1", i+1, r.Seq))
			break
		}
		bySeq[r.Seq] = r
	}
	seqs := make([]uint64, 0, len(acked))
	for seq := range acked {
		seqs = append(seqs, seq)
	}
	sort.Slice(seqs, func(a, b int) bool { return seqs[a] < seqs[b] })
	for _, seq := range seqs {
		r, ok := bySeq[seq]
		if !ok || r.Type != acked[seq] {
			lost++
			if lost <= 5 {
				problems = append(problems, fmt.Sprintf("acknowledged %d %s is %s", seq, acked[seq], describe(r, ok)))
			}
		}
	}

	// Fences.
	var lastFence uint64
	var fences int
	for i, r := range recs {
		if r.Kind != "fence" {
			continue
		}
		fences++
		switch {
		case r.Epoch > lastFence:
		case r.Epoch == lastFence && (i+1 == len(recs) || recs[i+1].Type == "RestoreErrored" || recs[i+1].Kind == "fence"):
			// A failed restore re-fencing at its own epoch to record why
			// (RestoreErrored follows, unless a crash came first).
		default:
			problems = append(problems, fmt.Sprintf("fence at seq %d has epoch %d after epoch %d", r.Seq, r.Epoch, lastFence))
		}
		lastFence = r.Epoch
	}
	if fences == 0 {
		problems = append(problems, "no fence in the journal")
	}
	if lastFence != restoreEpoch {
		problems = append(problems, fmt.Sprintf("last fence has epoch %d, the restore said %d", lastFence, restoreEpoch))
	}

	// Turns: one terminal record each, after its start.
	open := map[string]bool{}
	ended := map[string]bool{}
	restoreDone := false
	for _, r := range recs {
		switch r.Type {
		case "TurnStarted":
			if open[r.TurnID] || ended[r.TurnID] {
				problems = append(problems, fmt.Sprintf("turn %s started twice (seq %d)", r.TurnID, r.Seq))
			}
			open[r.TurnID] = true
		case "TurnDone", "TurnFailed", "TurnInterrupted":
			switch {
			case ended[r.TurnID]:
				problems = append(problems, fmt.Sprintf("turn %s has a second terminal record %s at seq %d", r.TurnID, r.Type, r.Seq))
			case !open[r.TurnID]:
				problems = append(problems, fmt.Sprintf("%s at seq %d closes turn %s, which never started", r.Type, r.Seq, r.TurnID))
			}
			delete(open, r.TurnID)
			ended[r.TurnID] = true
		case "RestoreDone":
			restoreDone = r.Epoch == restoreEpoch || restoreDone
		}
	}
	for id := range open {
		problems = append(problems, fmt.Sprintf("turn %s has no terminal record after the restore", id))
	}
	if restored && !restoreDone {
		problems = append(problems, fmt.Sprintf("no RestoreDone at epoch %d", restoreEpoch))
	}
	if len(problems) > 0 {
		return lost, errors.New(strings.Join(problems, "; "))
	}
	return lost, nil
}

func describe(r record, ok bool) string {
	if !ok {
		return "missing"
	}
	return fmt.Sprintf("a %s %s", r.Kind, r.Type)
}

func firstJSON(out []byte) []byte {
	line, _, _ := bytes.Cut(bytes.TrimSpace(out), []byte("\n"))
	return line
}

func firstLine(bs ...[]byte) string {
	for _, b := range bs {
		if s := strings.TrimSpace(string(b)); s != "" {
			line, _, _ := strings.Cut(s, "\n")
			return line
		}
	}
	return ""
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = append(t.b[:0], t.b[len(t.b)-4096:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return strings.TrimSpace(string(t.b)) }
