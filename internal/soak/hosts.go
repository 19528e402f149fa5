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
	"context"
	"encoding/json"
	"fmt"
	"os"
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
	ackPath, ackFile, err := s.openAcks(i)
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

	if tr.err = runUntilKilled(&tr, sess, ackPath, func() error { return s.killOneHostedRun(sess, ackFile, &tr) }); tr.err != nil {
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
	r, err := s.startRun(ackFile, "run", sess.id, "--", s.cfg.Input)
	if err != nil {
		return err
	}
	defer r.timer.Stop()
	ended := func(waitErr error) error { // the run ended by itself
		code, sig := exitStatus(waitErr)
		if sig != 0 || code != 0 {
			return fmt.Errorf("run ended by itself with %s after %v: %s", describeExit(code, sig), time.Since(r.start).Round(time.Millisecond), r.errb.String())
		}
		tr.completed++
		s.ranFor(time.Since(r.start))
		return nil
	}
	select {
	case waitErr := <-r.done:
		return ended(waitErr)
	case <-r.timer.C:
	}

	if tr.target == killClient {
		_ = r.cmd.Process.Signal(syscall.SIGKILL)
		waitErr := <-r.done
		if _, sig := exitStatus(waitErr); sig == syscall.SIGKILL {
			tr.killed, tr.after = true, r.after
			tr.steps = append(tr.steps, "killed the client after "+r.after.Round(time.Millisecond).String()+completedNote(tr.completed))
			return nil
		}
		return ended(waitErr) // it ended just as the kill came
	}

	// Kill the host; the run must notice and end.
	pid := sess.pid
	if !s.isOurHost(pid) {
		_ = r.cmd.Process.Signal(syscall.SIGKILL)
		<-r.done
		return fmt.Errorf("host %d is gone before its kill (run stderr: %s)", pid, r.errb.String())
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	tr.killed, tr.victim, tr.after = true, pid, r.after
	delete(s.hosts, sess.id)
	sess.pid = 0
	if !waitGone(pid, hostExitWait) {
		_ = r.cmd.Process.Signal(syscall.SIGKILL)
		<-r.done
		return fmt.Errorf("host %d still runs %v after its SIGKILL", pid, hostExitWait)
	}
	var waitErr error
	wait := time.NewTimer(s.cfg.CommandTimeout)
	defer wait.Stop()
	select {
	case waitErr = <-r.done:
	case <-wait.C:
		_ = r.cmd.Process.Signal(syscall.SIGKILL)
		<-r.done
		return fmt.Errorf("run did not end within %v of its host's SIGKILL: %s", s.cfg.CommandTimeout, r.errb.String())
	}
	code, sig := exitStatus(waitErr)
	tr.steps = append(tr.steps, fmt.Sprintf("killed the host %d after %v%s (run: %s)", pid, r.after.Round(time.Millisecond),
		completedNote(tr.completed), describeExit(code, sig)))
	switch {
	case sig == 0 && code == 0:
		// Its turn ended before the kill, or it reached no host and ran
		// the turn in a host it started (afterHostKill tells which).
		tr.fellBack = true // until the listing says otherwise
	case sig == 0 && code == exitRunFailed && strings.Contains(r.errb.String(), "lost the host"):
	default:
		return fmt.Errorf("run ended with %s after its host was SIGKILLed, want 125 (lost the host) or 0: %s",
			describeExit(code, sig), r.errb.String())
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
