package soak

// Hosts mode (Config.Hosts, scripts/soak --hosts).
//
// The session under soak is live in a background host (`looprig host ID`,
// started by `new --detach` or `restore --detach`), and each `looprig run
// ID -- INPUT` goes through that host, acknowledging on LOOPRIG_ACK_FD every
// journal record the host's stream delivered to it. Each trial picks its
// victim at random, about half each, and every session sees both (the last
// trial of a session that saw only one kind is the other):
//
//   - the client: the `looprig run` process is SIGKILLed. The host must
//     stay live (ls: live, held by the same pid), and the turn must go on
//     and end by itself in the host (TurnDone, exit 0, within
//     CommandTimeout); the journal is then checked as check does, with
//     the host's epoch as its last fence. The host is then either kept
//     live for the next trial or stopped (`looprig stop`: the host exits,
//     ls shows the session idle, the journal ends with SessionStopped, and
//     is checked again), so that the next trial restores it with
//     `restore --detach`.
//   - the host: the host process is SIGKILLed (the run is left to notice:
//     it must end, with exit 125 saying it lost the host, or 0 when its
//     turn ended first). ls must show the session crashed — or live in a
//     new host when the run, which reached no host because the kill came
//     before it connected, started one (restoring the session) and ran
//     the turn there, as run does for a session no host serves; that host
//     is kept, checked as after a client's kill. A crashed session is
//     restored, either with plain `restore` (as in the default mode) or
//     with `restore --detach` (live again in a new host, for the next
//     trial), and checked exactly as in the default mode.
//
// No host outlives the soak: the last trial of each session stops its
// host, a failed trial kills its hosts, and at the end every host the soak
// believes live is stopped and any other process serving a session of the
// store (found in /proc) is killed and counted as a failure.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// killTarget is what a hosts-mode trial SIGKILLs.
type killTarget int

const (
	killClient killTarget = iota // the `looprig run` process
	killHost                     // the session's host
)

func (k killTarget) String() string {
	if k == killHost {
		return "host"
	}
	return "client"
}

const (
	// hostExitWait bounds the wait for a host to exit after a SIGKILL or
	// a stop.
	hostExitWait = 15 * time.Second
	// lateTurnGrace is how long, after a client was killed, the soak waits
	// for a turn the client may have submitted, before it concludes the
	// kill came before the submit reached the host.
	lateTurnGrace = 2 * time.Second
	// exitRunFailed is `looprig run`'s exit code when looprig itself
	// failed (cli/cli.go); a run whose host died says so with it.
	exitRunFailed = 125
)

// setupHosts prepares hosts mode: an absolute store path (hosts are found
// by it in /proc) and a short private runtime directory for the sockets.
func (s *soaker) setupHosts() error {
	abs, err := filepath.Abs(s.store)
	if err != nil {
		return err
	}
	s.store = abs
	rt := s.cfg.RuntimeDir
	if rt == "" {
		if rt, err = os.MkdirTemp("", "lr"); err != nil {
			return err
		}
		if err := os.Chmod(rt, 0o700); err != nil {
			os.RemoveAll(rt)
			return err
		}
		s.ownRuntime = true
	}
	s.runtime = rt
	s.env = append(s.env, "XDG_RUNTIME_DIR="+rt)
	s.hosts = map[string]int{}
	return nil
}

// endHosts stops every host the soak believes live, then kills any other
// host of the store, counting each as a failure: none may be left.
func (s *soaker) endHosts(res *Result) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for id, pid := range s.hosts {
		if err := s.stopHost(ctx, id, pid); err != nil {
			res.failf("end: %v", err)
		}
	}
	for _, pid := range s.killStrayHosts() {
		res.failf("end: host pid %d of the store was still running (killed)", pid)
	}
	if s.ownRuntime {
		os.RemoveAll(s.runtime)
	}
}

// abandon kills every host of the store, after a failed trial.
func (s *soaker) abandon() {
	for id, pid := range s.hosts {
		s.killHost(pid)
		delete(s.hosts, id)
	}
	s.killStrayHosts()
}

// runHosts runs the trials of hosts mode.
func (s *soaker) runHosts(ctx context.Context, res *Result) error {
	var sess *session
	for i := 0; i < s.cfg.Trials; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if sess == nil || i%s.cfg.PerSession == 0 {
			if sess != nil && sess.pid != 0 { // not expected: the last trial of a session stops it
				if err := s.stopHost(ctx, sess.id, sess.pid); err != nil {
					res.failf("session %.8s: %v", sess.id, err)
				}
			}
			sess = nil
			ns, err := s.newDetached(ctx, fmt.Sprintf("soak %d", i/s.cfg.PerSession))
			if err != nil {
				res.Trials++
				res.fail(i, "new --detach: "+err.Error())
				s.abandon()
				continue
			}
			sess = ns
			res.Sessions++
		}
		last := i+1 == s.cfg.Trials || (i+1)%s.cfg.PerSession == 0
		target := killTarget(s.rng.IntN(2))
		if last && (sess.kinds[killClient] == 0) != (sess.kinds[killHost] == 0) {
			// Every session goes through both.
			target = killClient
			if sess.kinds[killHost] == 0 {
				target = killHost
			}
		}
		tr := s.hostTrial(ctx, i, sess, target, last)
		res.Trials++
		res.Acked += tr.acked
		res.Lost += tr.lost
		res.Completed += tr.completed
		res.Stopped += tr.stopped
		if tr.killed {
			res.Killed++
			sess.kinds[target]++
			if target == killHost {
				res.KilledHosts++
			} else {
				res.KilledClients++
			}
		}
		if tr.fellBack {
			res.FellBack++
		}
		status := "ok"
		if tr.err != nil {
			res.fail(i, tr.err.Error())
			status = "FAILED: " + tr.err.Error()
			if tail := s.hostLogTail(sess.id); tail != "" {
				fmt.Fprintf(s.log, "trial %d: the end of session %.8s's host log:\n%s\n", i+1, sess.id, tail)
			}
		}
		fmt.Fprintf(s.log, "trial %d: session %.8s, %s, %d acked (%d so far), %d records, %d lost: %s\n",
			i+1, sess.id, strings.Join(tr.steps, ", "), tr.acked, len(sess.acked), tr.records, tr.lost, status)
		if tr.err != nil {
			s.abandon()
			sess = nil // start the next trial on a fresh session
		}
	}
	return nil
}

// hostTrial runs one hosts-mode trial: the session live in a host, chatty
// runs through it until one is killed — or its host is — then the checks
// of the path taken. The last trial of a session leaves it with no host.
func (s *soaker) hostTrial(ctx context.Context, i int, sess *session, target killTarget, last bool) (tr trialResult) {
	tr.target = target
	ackPath := filepath.Join(s.cfg.Dir, "acks", fmt.Sprintf("%04d", i+1))
	ackFile, err := os.OpenFile(ackPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o600)
	if err != nil {
		tr.err = err
		return tr
	}
	defer ackFile.Close()

	// Live in a host.
	if sess.pid == 0 {
		if err := s.restoreDetached(ctx, sess); err != nil {
			tr.err = fmt.Errorf("restore --detach: %w", err)
			return tr
		}
		tr.steps = append(tr.steps, fmt.Sprintf("restored --detach (host %d, epoch %d)", sess.pid, sess.epoch))
	}
	row, err := s.row(ctx, sess.id)
	if err != nil {
		tr.err = err
		return tr
	}
	if err := s.wantLive(row, sess.pid); err != nil {
		tr.err = fmt.Errorf("before the run: %w", err)
		return tr
	}

	if tr.err = runUntilKilled(&tr, func() error { return s.killOneHostedRun(sess, ackFile, &tr) }); tr.err != nil {
		return tr
	}
	n, err := readAcks(ackPath, sess.acked)
	tr.acked = n
	if err != nil {
		tr.err = err
		return tr
	}

	if target == killClient {
		tr.err = s.afterClientKill(ctx, sess, row.LastSeq, &tr)
	} else {
		tr.err = s.afterHostKill(ctx, sess, &tr)
	}
	if tr.err == nil && tr.lost > 0 {
		tr.err = fmt.Errorf("%d acknowledged records lost", tr.lost)
	}
	if tr.err != nil {
		return tr
	}
	if sess.pid != 0 && (last || (target == killClient && s.rng.IntN(2) == 0)) {
		tr.err = s.stopChecked(ctx, sess, &tr)
		if tr.err == nil && tr.lost > 0 {
			tr.err = fmt.Errorf("%d acknowledged records lost", tr.lost)
		}
	} else if sess.pid != 0 {
		tr.steps = append(tr.steps, "kept live")
	}
	return tr
}

// killOneHostedRun starts `looprig run` through the session's host and, at
// a random moment in the kill window from its start, SIGKILLs the trial's
// target, unless the run ends first (tr.completed counts those; a run that
// ends with an error fails the trial). After a killed host it waits for
// the host to be gone and for the run to end by itself.
func (s *soaker) killOneHostedRun(sess *session, ackFile *os.File, tr *trialResult) error {
	cmd := exec.Command(s.cfg.Binary, "--store", s.store, "run", sess.id, "--", s.cfg.Input)
	cmd.Env = append(s.env, "LOOPRIG_ACK_FD=3")
	cmd.ExtraFiles = []*os.File{ackFile}
	var errb tailBuffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errb
	after := time.Duration(s.rng.Int64N(int64(s.window) + 1))
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start run: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(after)
	defer timer.Stop()
	ended := func(waitErr error) error { // the run ended by itself
		code, sig := exitStatus(waitErr)
		if sig != 0 || code != 0 {
			return fmt.Errorf("run ended by itself with %s after %v: %s", describeExit(code, sig), time.Since(start).Round(time.Millisecond), errb.String())
		}
		tr.completed++
		s.ranFor(time.Since(start))
		return nil
	}
	select {
	case waitErr := <-done:
		return ended(waitErr)
	case <-timer.C:
	}

	if tr.target == killClient {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		waitErr := <-done
		if _, sig := exitStatus(waitErr); sig == syscall.SIGKILL {
			tr.killed, tr.after = true, after
			tr.steps = append(tr.steps, "killed the client after "+after.Round(time.Millisecond).String()+completedNote(tr.completed))
			return nil
		}
		return ended(waitErr) // it ended just as the kill came
	}

	// Kill the host; the run must notice and end.
	pid := sess.pid
	if !s.isOurHost(pid) {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		return fmt.Errorf("host %d is gone before its kill (run stderr: %s)", pid, errb.String())
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	tr.killed, tr.victim, tr.after = true, pid, after
	delete(s.hosts, sess.id)
	sess.pid = 0
	if !waitGone(pid, hostExitWait) {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		return fmt.Errorf("host %d still runs %v after its SIGKILL", pid, hostExitWait)
	}
	var waitErr error
	wait := time.NewTimer(s.cfg.CommandTimeout)
	defer wait.Stop()
	select {
	case waitErr = <-done:
	case <-wait.C:
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		return fmt.Errorf("run did not end within %v of its host's SIGKILL: %s", s.cfg.CommandTimeout, errb.String())
	}
	code, sig := exitStatus(waitErr)
	tr.steps = append(tr.steps, fmt.Sprintf("killed the host %d after %v%s (run: %s)", pid, after.Round(time.Millisecond),
		completedNote(tr.completed), describeExit(code, sig)))
	switch {
	case sig == 0 && code == 0:
		// Its turn ended before the kill, or it reached no host and ran
		// the turn in a host it started (afterHostKill tells which).
		tr.fellBack = true // until the listing says otherwise
	case sig == 0 && code == exitRunFailed && strings.Contains(errb.String(), "lost the host"):
	default:
		return fmt.Errorf("run ended with %s after its host was SIGKILLed, want 125 (lost the host) or 0: %s",
			describeExit(code, sig), errb.String())
	}
	return nil
}

func completedNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (after %d runs that ended by themselves)", n)
}

// afterClientKill: the host is still live, and the killed client's turn
// (if its submit reached the host) goes on and ends by itself there. tip
// is the journal's last sequence before the trial's first run.
func (s *soaker) afterClientKill(ctx context.Context, sess *session, tip uint64, tr *trialResult) error {
	killed := time.Now()
	deadline := killed.Add(s.cfg.CommandTimeout)
	want := tr.completed + 1 // the turns of the trial's runs, if the last one started
	var recs []record
	var turns []turnSpan
	for {
		var err error
		if recs, err = s.journal(ctx, sess.id); err != nil {
			return err
		}
		turns = turnsAfter(recs, tip)
		open := false
		for _, t := range turns {
			open = open || t.end == nil
		}
		if !open && (len(turns) >= want || time.Since(killed) >= lateTurnGrace) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the killed client's turn did not end in the host within %v (%d turns since the trial began, open: %v)",
				s.cfg.CommandTimeout, len(turns), open)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(turns) > want {
		return fmt.Errorf("%d turns started since the trial began, it ran %d", len(turns), want)
	}
	for _, t := range turns {
		if t.end.Type != "TurnDone" || t.end.ExitCode == nil || *t.end.ExitCode != 0 {
			code := "?"
			if t.end.ExitCode != nil {
				code = strconv.Itoa(*t.end.ExitCode)
			}
			return fmt.Errorf("turn %s ended with %s (exit %s) at seq %d; a turn whose client was killed must go on and end by itself",
				t.id, t.end.Type, code, t.end.Seq)
		}
	}
	if len(turns) == want {
		tr.steps = append(tr.steps, "its turn ended in the host")
	} else {
		tr.steps = append(tr.steps, "killed before its turn reached the host")
	}
	tr.records = len(recs)
	lost, err := checkJournal(recs, sess.acked, sess.epoch, sess.restored)
	tr.lost = lost
	if err != nil {
		return err
	}
	if !alive(sess.pid) {
		return fmt.Errorf("host %d exited after its client was killed", sess.pid)
	}
	row, err := s.row(ctx, sess.id)
	if err != nil {
		return err
	}
	if err := s.wantLive(row, sess.pid); err != nil {
		return fmt.Errorf("after the client's kill: %w", err)
	}
	return s.noBroken(ctx)
}

// afterHostKill: the session is crashed (or live in a new host, when the
// run started one); restore a crashed one, plainly or in a new host, and
// check it as the default mode does.
func (s *soaker) afterHostKill(ctx context.Context, sess *session, tr *trialResult) error {
	row, err := s.row(ctx, sess.id)
	// The lease of the killed host can outlive it for a moment, as in
	// restoreAfterKill: held by that dead process is looked at again.
	for deadline, retries := time.Now().Add(heldWait), 1; err == nil && row.State == "held" && row.Holder != nil &&
		row.Holder.PID == tr.victim && !alive(tr.victim) && time.Now().Before(deadline); retries++ {
		time.Sleep(50 * time.Millisecond)
		row, err = s.row(ctx, sess.id)
		if row.State != "held" {
			tr.steps = append(tr.steps, fmt.Sprintf("ls looked %d more times: the dead host's lease was still held", retries))
		}
	}
	if err != nil {
		return err
	}
	switch {
	case row.State == "crashed":
		tr.fellBack = false
		tr.steps = append(tr.steps, "crashed")
	case row.State == "live" && tr.fellBack && row.Holder != nil && s.isOurHost(row.Holder.PID):
		return s.afterNewHost(ctx, sess, row.Holder.PID, tr)
	default:
		tr.fellBack = false
		return fmt.Errorf("ls: session is %s after its host was SIGKILLed, want crashed", describeRow(row))
	}

	detach := s.rng.IntN(2) == 0
	if detach {
		if err := s.restoreDetached(ctx, sess); err != nil {
			return fmt.Errorf("restore --detach: %w", err)
		}
		tr.steps = append(tr.steps, fmt.Sprintf("restored --detach (host %d, epoch %d)", sess.pid, sess.epoch))
	} else {
		out, errOut, code, err := s.restoreAfterKill(ctx, sess.id, tr)
		if err != nil || code != 0 {
			return fmt.Errorf("restore: exit %d %v: %s", code, err, firstLine(out, errOut))
		}
		var restored struct {
			Epoch uint64 `json:"epoch"`
		}
		if err := json.Unmarshal(firstJSON(out), &restored); err != nil || restored.Epoch == 0 {
			return fmt.Errorf("restore --json said %q: %v", out, err)
		}
		sess.epoch, sess.restored = restored.Epoch, true
		tr.steps = append(tr.steps, fmt.Sprintf("restored (epoch %d)", sess.epoch))
	}

	recs, err := s.journal(ctx, sess.id)
	if err != nil {
		return err
	}
	tr.records = len(recs)
	lost, err := check(recs, sess.acked, sess.epoch)
	tr.lost = lost
	if err != nil {
		return err
	}
	if row, err = s.row(ctx, sess.id); err != nil {
		return err
	}
	if detach {
		err = s.wantLive(row, sess.pid)
	} else if row.State != "idle" {
		err = fmt.Errorf("session is %s after a clean restore, want idle", describeRow(row))
	}
	if err != nil {
		return fmt.Errorf("ls: %w", err)
	}
	return s.noBroken(ctx)
}

// afterNewHost: the run whose host was killed reached no host (the kill
// came before it connected), so it started host pid, which restored the
// session at a newer epoch and ran the turn to its end; the session is
// live there, and kept as after a client's kill.
func (s *soaker) afterNewHost(ctx context.Context, sess *session, pid int, tr *trialResult) error {
	recs, err := s.journal(ctx, sess.id)
	if err != nil {
		return err
	}
	f := lastFence(recs)
	if f <= sess.epoch {
		return fmt.Errorf("ls: session is live in host %d after its host (epoch %d) was SIGKILLed, and no restore fenced it since (last fence %d)",
			pid, sess.epoch, f)
	}
	s.hosts[sess.id] = pid
	sess.pid, sess.epoch, sess.restored = pid, f, true
	tr.steps = append(tr.steps, fmt.Sprintf("the run reached no host and started host %d (epoch %d)", pid, f))
	tr.records = len(recs)
	lost, err := checkJournal(recs, sess.acked, sess.epoch, true)
	tr.lost = lost
	if err != nil {
		return err
	}
	return s.noBroken(ctx)
}

// stopChecked stops the session's host and checks what it leaves: the
// host gone, the session idle, its journal ending with SessionStopped.
func (s *soaker) stopChecked(ctx context.Context, sess *session, tr *trialResult) error {
	pid := sess.pid
	sess.pid = 0
	if err := s.stopHost(ctx, sess.id, pid); err != nil {
		return err
	}
	tr.stopped++
	tr.steps = append(tr.steps, "stopped")
	row, err := s.row(ctx, sess.id)
	if err != nil {
		return err
	}
	if row.State != "idle" || row.Holder != nil {
		return fmt.Errorf("ls: session is %s after stop, want idle and not held", describeRow(row))
	}
	recs, err := s.journal(ctx, sess.id)
	if err != nil {
		return err
	}
	tr.records = len(recs)
	lost, err := checkJournal(recs, sess.acked, sess.epoch, sess.restored)
	tr.lost = max(tr.lost, lost)
	if err != nil {
		return fmt.Errorf("after stop: %w", err)
	}
	if n := len(recs); n == 0 || recs[n-1].Type != "SessionStopped" {
		last := "nothing"
		if n > 0 {
			last = describe(recs[n-1], true)
		}
		return fmt.Errorf("after stop, the journal ends with %s, want SessionStopped", last)
	}
	return nil
}

// calibrateHosts times five unkilled runs through a host to set the first
// kill window.
func (s *soaker) calibrateHosts(ctx context.Context) error {
	sess, err := s.newDetached(ctx, "soak calibration")
	if err != nil {
		return fmt.Errorf("soak: calibration: new --detach: %w", err)
	}
	for i := 0; i < 5; i++ {
		start := time.Now()
		_, errb, code, err := s.looprig(ctx, "run", sess.id, "--", s.cfg.Input)
		if err != nil || code != 0 {
			return fmt.Errorf("soak: calibration run: exit %d %v: %s", code, err, firstLine(errb))
		}
		s.ranFor(time.Since(start))
	}
	if err := s.stopHost(ctx, sess.id, sess.pid); err != nil {
		return fmt.Errorf("soak: calibration: %w", err)
	}
	return nil
}

// newDetached creates a session live in a new host.
func (s *soaker) newDetached(ctx context.Context, title string) (*session, error) {
	out, errb, code, err := s.looprig(ctx, "new", "--detach", "--json", "--title", title)
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, fmt.Errorf("exit %d: %s", code, firstLine(out, errb))
	}
	var v struct {
		ID       string `json:"id"`
		Epoch    uint64 `json:"epoch"`
		PID      int    `json:"pid"`
		Detached bool   `json:"detached"`
	}
	if err := json.Unmarshal(out, &v); err != nil || v.ID == "" || v.PID <= 0 || v.Epoch == 0 || !v.Detached {
		return nil, fmt.Errorf("new --detach --json said %q: %v", out, err)
	}
	s.hosts[v.ID] = v.PID
	return &session{id: v.ID, acked: map[uint64]string{}, pid: v.PID, epoch: v.Epoch}, nil
}

// restoreDetached restores the session in a new host.
func (s *soaker) restoreDetached(ctx context.Context, sess *session) error {
	out, errb, code, err := s.looprig(ctx, "restore", sess.id, "--detach", "--json")
	if err != nil || code != 0 {
		return fmt.Errorf("exit %d %v: %s", code, err, firstLine(out, errb))
	}
	var v struct {
		Epoch    uint64 `json:"epoch"`
		PID      int    `json:"pid"`
		Detached bool   `json:"detached"`
	}
	if err := json.Unmarshal(firstJSON(out), &v); err != nil || v.PID <= 0 || v.Epoch == 0 || !v.Detached {
		return fmt.Errorf("restore --detach --json said %q: %v", out, err)
	}
	s.hosts[sess.id] = v.PID
	sess.pid, sess.epoch, sess.restored = v.PID, v.Epoch, true
	return nil
}

// stopHost stops the host pid of session id and waits for it to exit,
// killing it if the stop fails.
func (s *soaker) stopHost(ctx context.Context, id string, pid int) error {
	delete(s.hosts, id)
	out, errb, code, err := s.looprig(ctx, "stop", id, "--json")
	if err != nil || code != 0 {
		s.killHost(pid)
		return fmt.Errorf("stop %.8s (host %d): exit %d %v: %s", id, pid, code, err, firstLine(out, errb))
	}
	var v struct {
		PID int `json:"pid"`
	}
	if err := json.Unmarshal(out, &v); err != nil || v.PID != pid {
		s.killHost(pid)
		return fmt.Errorf("stop %.8s: stop --json said %q (%v), want host %d", id, out, err, pid)
	}
	if !waitGone(pid, hostExitWait) {
		s.killHost(pid)
		return fmt.Errorf("stop %.8s: host %d still ran %v after stop returned", id, pid, hostExitWait)
	}
	return nil
}

// killHost SIGKILLs pid if it is a host of the store, and waits for it.
func (s *soaker) killHost(pid int) {
	if pid > 0 && s.isOurHost(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		waitGone(pid, hostExitWait)
	}
}

// killStrayHosts kills every process serving a session of the store
// (`looprig host --store STORE ...`, found in /proc) and returns their
// pids.
func (s *soaker) killStrayHosts() []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 || !s.isOurHost(pid) {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		waitGone(pid, hostExitWait)
		pids = append(pids, pid)
	}
	return pids
}

// isOurHost says whether pid is alive and a host of the soak's store: its
// command line is `BINARY host ... --store STORE ...`, as host.Start
// starts it.
func (s *soaker) isOurHost(pid int) bool {
	if !alive(pid) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	if len(args) < 4 || args[1] != "host" {
		return false
	}
	for i := 2; i+1 < len(args); i++ {
		if args[i] == "--store" && args[i+1] == s.store {
			return true
		}
	}
	return false
}

// alive says whether pid runs: a zombie does not (a host is not the
// soak's child once its starter exited, and whoever reaps it may be slow).
func alive(pid int) bool {
	// A process SIGKILLed is gone when its last thread is: its leader can
	// be a zombie while other threads still exit, holding its descriptors
	// (and its flocks).
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return taskAlive(fmt.Sprintf("/proc/%d/stat", pid))
	}
	for _, t := range tasks {
		if taskAlive(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name())) {
			return true
		}
	}
	return false
}

// taskAlive reports whether the thread whose stat file is path runs (is
// neither a zombie nor dead).
func taskAlive(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] != 'Z' && b[i+2] != 'X'
}

// waitGone waits up to d for pid to exit.
func waitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// lsRow is what the soak reads of one `ls --json` row.
type lsRow struct {
	ID     string `json:"id"`
	State  string `json:"state"`
	Reason string `json:"reason"`
	Holder *struct {
		PID int `json:"pid"`
	} `json:"holder"`
	LastSeq uint64 `json:"last_seq"`
}

func describeRow(r lsRow) string {
	if r.Holder != nil {
		return fmt.Sprintf("%s (held by pid %d)", r.State, r.Holder.PID)
	}
	return r.State
}

func (s *soaker) listing(ctx context.Context) ([]lsRow, error) {
	out, errOut, code, err := s.looprig(ctx, "ls", "--json")
	if err != nil || code != 0 {
		return nil, fmt.Errorf("ls: exit %d %v: %s", code, err, firstLine(errOut, out))
	}
	var rows []lsRow
	if err := json.Unmarshal(out, &rows); err != nil {
		return nil, fmt.Errorf("ls --json: %v", err)
	}
	return rows, nil
}

// row is the listing of session id; no session may be broken.
func (s *soaker) row(ctx context.Context, id string) (lsRow, error) {
	rows, err := s.listing(ctx)
	if err != nil {
		return lsRow{}, err
	}
	for _, r := range rows {
		if r.ID == id {
			return r, nil
		}
	}
	return lsRow{}, errors.New("ls: the session is not listed")
}

// noBroken: no session of the store is listed as broken.
func (s *soaker) noBroken(ctx context.Context) error {
	rows, err := s.listing(ctx)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.State == "broken" {
			return fmt.Errorf("ls: session %s is broken: %s", r.ID, r.Reason)
		}
	}
	return nil
}

// wantLive: the row shows the session live in host pid.
func (s *soaker) wantLive(r lsRow, pid int) error {
	if r.State != "live" || r.Holder == nil || r.Holder.PID != pid {
		return fmt.Errorf("session is %s, want live in host %d", describeRow(r), pid)
	}
	return nil
}

func (s *soaker) journal(ctx context.Context, id string) ([]record, error) {
	out, errOut, code, err := s.looprig(ctx, "log", id, "--json")
	if err != nil || code != 0 {
		return nil, fmt.Errorf("log: exit %d %v: %s", code, err, firstLine(errOut, out))
	}
	return parseLog(out)
}

// turnSpan is a turn of the journal: its TurnStarted and its terminal
// record (nil while open).
type turnSpan struct {
	id  string
	end *record
}

// turnsAfter lists the turns started after seq tip.
func turnsAfter(recs []record, tip uint64) []turnSpan {
	var turns []turnSpan
	at := map[string]int{}
	for i, r := range recs {
		switch r.Type {
		case "TurnStarted":
			if r.Seq > tip {
				at[r.TurnID] = len(turns)
				turns = append(turns, turnSpan{id: r.TurnID})
			}
		case "TurnDone", "TurnFailed", "TurnInterrupted":
			if j, ok := at[r.TurnID]; ok && turns[j].end == nil {
				turns[j].end = &recs[i]
			}
		}
	}
	return turns
}

func lastFence(recs []record) uint64 {
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Kind == "fence" {
			return recs[i].Epoch
		}
	}
	return 0
}

// exitStatus is a waited process's exit code, or the signal that killed
// it.
func exitStatus(waitErr error) (code int, sig syscall.Signal) {
	var ee *exec.ExitError
	if !errors.As(waitErr, &ee) {
		if waitErr != nil {
			return -1, 0
		}
		return 0, 0
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal()
	}
	return ee.ExitCode(), 0
}

func describeExit(code int, sig syscall.Signal) string {
	if sig != 0 {
		return "signal " + sig.String()
	}
	return "exit " + strconv.Itoa(code)
}

// hostLogTail is the end of session id's host log (<runtime>/looprig/
// <hash>/<id>.log), for a failed trial's diagnostics.
func (s *soaker) hostLogTail(id string) string {
	paths, _ := filepath.Glob(filepath.Join(s.runtime, "looprig", "*", id+".log"))
	if len(paths) == 0 {
		return ""
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return strings.Join(lines, "\n")
}
