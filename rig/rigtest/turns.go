package rigtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

var turnCases = []testCase{
	{"ShellOutputAndExitCode", testShellTurn},
	{"ShellTurnOnATerminal", testShellTerminal},
	{"InterruptKillsProcessGroup", testInterrupt},
	{"CancelledSubmitKeepsSessionHealthy", testCancelledSubmit},
	{"ShutdownDuringFailedSubmit", testShutdownDuringFailedSubmit},
	{"FailedCommandFaultsSession", testFailedCommandFaults},
}

// A shell turn runs in the workspace, streams OutputDelta, checkpoints
// TurnOutput into the journal and ends with TurnDone carrying the exit
// code. On pipes (tty = false), stdout and stderr stay apart.
func testShellTurn(t *testing.T, e *env) {
	s := e.newSession(e.define(rig.WithProfile(pipesProfile())))
	c := collect(t, s.Subscribe(hub.Filter{AllLoops: true}), nil)
	m := newMarker()
	ti := runTurn(t, s, `pwd -P; echo "out-`+m+`"; echo "err-`+m+`" >&2; echo "id=$LOOPRIG_SESSION turn=$LOOPRIG_TURN"; exit 3`)
	if ti.Index != 0 || ti.ID == "" {
		t.Errorf("first turn %+v, want index 0 and an id", ti)
	}

	c.wait(t, "stdout OutputDelta", func(env event.Envelope) bool {
		d, ok := env.Event.(event.OutputDelta)
		return ok && d.TurnID == ti.ID && d.Stream == event.StreamStdout && strings.Contains(d.Text, "out-"+m) && env.Seq == 0
	})
	c.wait(t, "stderr OutputDelta", func(env event.Envelope) bool {
		d, ok := env.Event.(event.OutputDelta)
		return ok && d.TurnID == ti.ID && d.Stream == event.StreamStderr && strings.Contains(d.Text, "err-"+m)
	})
	done := c.wait(t, "TurnDone", isType[event.TurnDone]).Event.(event.TurnDone)
	if done.TurnID != ti.ID || done.ExitCode != 3 {
		t.Errorf("TurnDone %+v, want turn %s exit code 3", done, ti.ID)
	}

	recs := readJournal(t, e.raw, s.SessionID())
	out := turnOutput(recs, ti.ID)
	ws := canonical(t, s.Workspace())
	for _, want := range []string{ws + "\n", "out-" + m, "err-" + m, "id=" + s.SessionID().String() + " turn=" + ti.ID} {
		if !strings.Contains(out, want) {
			t.Errorf("journaled output %q lacks %q", out, want)
		}
	}
	if _, ds := find[event.OutputDelta](recs); len(ds) > 0 {
		t.Errorf("OutputDelta (ephemeral) was journaled")
	}
	starts, _ := find[event.TurnStarted](recs)
	dones, doneRecs := find[event.TurnDone](recs)
	if len(starts) != 1 || starts[0].TurnID != ti.ID || starts[0].Index != 0 {
		t.Errorf("TurnStarted records %+v", starts)
	}
	if len(dones) != 1 || dones[0].ExitCode != 3 {
		t.Fatalf("TurnDone records %+v, want one with exit code 3", dones)
	}
	_, outRecs := find[event.TurnOutput](recs)
	for _, o := range outRecs {
		if o.Seq > doneRecs[0].Seq {
			t.Errorf("TurnOutput at %d after TurnDone at %d", o.Seq, doneRecs[0].Seq)
		}
	}
	submitted := false
	for _, r := range recs {
		if r.Kind == journal.KindCommand && r.Command.Name == journal.CommandSubmit && r.Command.TurnID == ti.ID {
			submitted = true
		}
	}
	if !submitted {
		t.Errorf("no submit command audited for the turn:%s", describe(recs))
	}
	if st := s.Status(); st.Turn != nil || st.Turns != 1 {
		t.Errorf("status after the turn: turn %+v, turns %d", st.Turn, st.Turns)
	}
}

// Interrupt kills the turn's whole process group (a grandchild included)
// and records TurnInterrupted{user}; a Submit while a turn runs is
// *rig.BusyError.
func testInterrupt(t *testing.T, e *env) {
	s := e.newSession(e.define())
	ctx := waitCtx(t)
	if err := s.Interrupt(ctx); err == nil {
		t.Errorf("Interrupt with no turn running succeeded")
	} else {
		as[*rig.NoTurnError](t, err, "Interrupt with no turn")
	}
	m := newMarker()
	ti := submit(t, s, "echo started; sleep "+m+"; echo never")
	waitSleepRunning(t, m)

	_, err := s.Submit(ctx, "echo second")
	busy := as[*rig.BusyError](t, err, "Submit while a turn runs")
	if busy.TurnID != ti.ID || busy.Index != ti.Index {
		t.Errorf("BusyError %+v, want the running turn %+v", busy, ti)
	}
	if st := s.Status(); st.Turn == nil || st.Turn.ID != ti.ID {
		t.Errorf("Status().Turn = %+v while the turn runs", st.Turn)
	}
	if err := s.Interrupt(ctx); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	noProcs(t, m, "after Interrupt returned")
	waitIdle(t, s)

	recs := readJournal(t, e.raw, s.SessionID())
	ints, _ := find[event.TurnInterrupted](recs)
	if len(ints) != 1 || ints[0].TurnID != ti.ID || ints[0].Reason != event.ReasonUser || ints[0].Index != ti.Index {
		t.Errorf("TurnInterrupted records %+v, want one {%s user}:%s", ints, ti.ID, describe(recs))
	}
	if strings.Contains(turnOutput(recs, ti.ID), "never") {
		t.Errorf("the interrupted turn ran to its end")
	}
	if dones, _ := find[event.TurnDone](recs); len(dones) != 0 {
		t.Errorf("an interrupted turn recorded TurnDone %+v", dones)
	}
	// The session goes on.
	next := runTurn(t, s, "echo again")
	if next.Index != 1 {
		t.Errorf("turn after the interrupt has index %d, want 1", next.Index)
	}
}

// Cancelling the context of a Submit never faults the session, whatever
// moment it hits: the session accepts the next turn.
func testCancelledSubmit(t *testing.T, e *env) {
	s := e.newSession(e.define())
	name := storage.SessionName(s.SessionID().String())
	for _, hit := range []string{journal.CommandSubmit, string(event.TypeSessionActive)} {
		t.Run("cancel-after-"+hit, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var once sync.Once
			e.fs.onRecord(func(n string, rec journal.Record) error {
				if n != name {
					return nil
				}
				match := rec.Kind == journal.KindCommand && rec.Command.Name == hit ||
					rec.Kind == journal.KindEvent && string(rec.Event.Type()) == hit
				if match {
					once.Do(cancel) // the caller gives up while its record is being written
				}
				return nil
			})
			_, err := s.Submit(ctx, "echo cancelled-submit")
			e.fs.setAppendFault(nil)
			waitIdle(t, s)
			if f := s.Err(); f != nil {
				t.Fatalf("cancelling a Submit's context (err %v) faulted the session: %v", err, f)
			}
			runTurn(t, s, "echo after")
		})
	}
}

// A Shutdown that begins while a Submit is committing its turn returns even
// when that Submit then fails.
func testShutdownDuringFailedSubmit(t *testing.T, e *env) {
	s := e.newSession(e.define())
	name := storage.SessionName(s.SessionID().String())
	inSubmit := make(chan struct{})
	proceed := make(chan struct{})
	var once sync.Once
	e.fs.onRecord(func(n string, rec journal.Record) error {
		if n == name && rec.Kind == journal.KindCommand && rec.Command.Name == journal.CommandSubmit {
			first := false
			once.Do(func() { first = true })
			if first {
				close(inSubmit)
				<-proceed
				return errInjected // the store fails the submit's record
			}
		}
		return nil
	})
	subErr := make(chan error, 1)
	go func() {
		_, err := s.Submit(context.Background(), "echo doomed")
		subErr <- err
	}()
	<-inSubmit
	shutErr := make(chan error, 1)
	go func() { shutErr <- s.Shutdown(context.Background()) }()
	eventually(t, "Shutdown to close admission", func() bool { return s.Status().Closed })
	close(proceed)
	if err := <-subErr; err == nil {
		t.Errorf("Submit whose record failed succeeded")
	}
	select {
	case <-shutErr:
	case <-waitCtx(t).Done():
		t.Fatalf("Shutdown did not return after the concurrent Submit failed")
	}
}

// A command record the store refuses latches the journal: the session is
// faulted at once (SessionFaulted, Done, Err), not left looking healthy.
func testFailedCommandFaults(t *testing.T, e *env) {
	s := e.newSession(e.define())
	c := collect(t, s.Subscribe(hub.Filter{}), nil)
	e.fs.failAppendAt(storage.SessionName(s.SessionID().String()), tip(t, e.raw, s.SessionID()))
	_, err := s.Submit(waitCtx(t), "echo refused")
	as[*journal.AppendError](t, err, "Submit whose command the store refuses")
	if !errors.Is(err, errInjected) {
		t.Errorf("Submit error %v does not wrap the store's", err)
	}
	c.wait(t, "SessionFaulted", isType[event.SessionFaulted])
	select {
	case <-s.Done():
	default:
		t.Errorf("session with a dead journal is not done")
	}
	as[*journal.AppendError](t, s.Err(), "latched fault")
	e.fs.setAppendFault(nil)
	if _, err := s.Submit(waitCtx(t), "echo again"); err == nil {
		t.Errorf("faulted session accepted a Submit")
	}
}

var gateCases = []testCase{
	{"ApproveAndDeny", testGate},
	{"RespondOnDelivery", testGateRespondOnDelivery},
	{"InterruptAtGate", func(t *testing.T, e *env) { testStopAtGate(t, e, false) }},
	{"ShutdownAtGate", func(t *testing.T, e *env) { testStopAtGate(t, e, true) }},
}

// Interrupting (or shutting down) a turn that waits at a gate closes the
// gate (GateResolved{close, user|shutdown}) and the turn
// (TurnInterrupted{user|shutdown}) without running the command; a restore
// afterwards finds nothing open.
func testStopAtGate(t *testing.T, e *env, byShutdown bool) {
	s := e.newSession(e.define(rig.WithProfile(gateProfile())))
	id := s.SessionID()
	file := "gated-" + newMarker()
	ti := submit(t, s, "touch "+file)
	gate := waitJournal(t, e.raw, id, "GateOpened", isGateOpened).Event.(event.GateOpened)
	reason := event.ReasonUser
	if byShutdown {
		reason = event.ReasonShutdown
		shutdown(t, s)
	} else {
		if err := s.Interrupt(waitCtx(t)); err != nil {
			t.Fatalf("Interrupt at a gate: %v", err)
		}
		if err := s.RespondGate(waitCtx(t), gate.GateID, true, testClient); err == nil {
			t.Errorf("answer to a gate closed by an interrupt was accepted")
		}
		shutdown(t, s)
	}
	recs := readJournal(t, e.raw, id)
	resolved, _ := find[event.GateResolved](recs)
	ints, _ := find[event.TurnInterrupted](recs)
	if len(resolved) != 1 || resolved[0].GateID != gate.GateID || resolved[0].Action != event.ActionClose || resolved[0].Reason != reason {
		t.Errorf("GateResolved %+v, want one {%s close %s}", resolved, gate.GateID, reason)
	}
	if len(ints) != 1 || ints[0].TurnID != ti.ID || ints[0].Reason != reason {
		t.Errorf("TurnInterrupted %+v, want one {%s %s}", ints, ti.ID, reason)
	}
	if exists(filepath.Join(s.Workspace(), file)) {
		t.Errorf("the gated command ran")
	}
	s2 := e.restore(e.define(rig.WithProfile(gateProfile())), id)
	if info := s2.Restored(); len(info.Interrupted) != 0 || len(info.GatesClosed) != 0 {
		t.Errorf("restore after a clean stop at a gate closed %+v", info)
	}
}

// A command matching the gate policy opens a gate: it runs only once
// approved, never after a denial (the turn fails), and both answers are
// journaled.
func testGate(t *testing.T, e *env) {
	s := e.newSession(e.define(rig.WithProfile(gateProfile())))
	c := collect(t, s.Subscribe(hub.Filter{AllLoops: true}), nil)
	ctx := waitCtx(t)
	m := newMarker()

	if err := s.RespondGate(ctx, "no-such-gate", true, testClient); err == nil {
		t.Errorf("RespondGate with no gate open succeeded")
	} else if ng := as[*rig.NoGateError](t, err, "RespondGate with no gate"); ng.Open != "" {
		t.Errorf("NoGateError.Open = %q with no gate open", ng.Open)
	}

	type gateRun struct {
		file    string
		approve bool
		turn    rig.TurnInfo
		gate    string
	}
	runs := []*gateRun{{file: "gated-yes-" + m, approve: true}, {file: "gated-no-" + m, approve: false}}
	for _, g := range runs {
		g.turn = submit(t, s, "touch "+g.file)
		opened := c.wait(t, "GateOpened of "+g.file, func(env event.Envelope) bool {
			o, ok := env.Event.(event.GateOpened)
			return ok && o.TurnID == g.turn.ID
		}).Event.(event.GateOpened)
		g.gate = opened.GateID
		if !strings.Contains(opened.Prompt, "touch gated") {
			t.Errorf("gate prompt %q does not name the policy", opened.Prompt)
		}
		eventually(t, "Status().Gate", func() bool { st := s.Status(); return st.Gate != nil && st.Gate.ID == g.gate })
		if st := s.Status(); st.Gate.TurnID != g.turn.ID || st.Gate.Prompt != opened.Prompt {
			t.Errorf("Status().Gate = %+v, want the opened gate", st.Gate)
		}
		err := s.RespondGate(ctx, g.gate+"-wrong", true, testClient)
		if ng := as[*rig.NoGateError](t, err, "RespondGate with a wrong id"); ng.Open != g.gate {
			t.Errorf("NoGateError.Open = %q, want %q", ng.Open, g.gate)
		}
		if exists(filepath.Join(s.Workspace(), g.file)) {
			t.Fatalf("gated command ran before it was answered")
		}
		if err := s.RespondGate(ctx, g.gate, g.approve, testClient); err != nil {
			t.Fatalf("RespondGate(%v): %v", g.approve, err)
		}
		waitIdle(t, s)
		if got := exists(filepath.Join(s.Workspace(), g.file)); got != g.approve {
			t.Errorf("approve=%v: marker file exists=%v", g.approve, got)
		}
		if err := s.RespondGate(ctx, g.gate, true, testClient); err == nil {
			t.Errorf("a second answer to gate %s was accepted", g.gate)
		}
	}

	recs := readJournal(t, e.raw, s.SessionID())
	resolved, resolvedRecs := find[event.GateResolved](recs)
	_, openedRecs := find[event.GateOpened](recs)
	if len(resolved) != 2 || len(openedRecs) != 2 {
		t.Fatalf("gates in the journal: opened %d, resolved %+v; want 2 each:%s", len(openedRecs), resolved, describe(recs))
	}
	for i, g := range runs {
		want := event.ActionDeny
		if g.approve {
			want = event.ActionApprove
		}
		if resolved[i].GateID != g.gate || resolved[i].Action != want {
			t.Errorf("GateResolved %+v, want gate %s action %s", resolved[i], g.gate, want)
		}
		if by := resolved[i].By; by == nil || by.Kind != testClient.Kind || by.PID != os.Getpid() {
			t.Errorf("GateResolved of %s names %+v, want the test's client (pid %d)", g.gate, by, os.Getpid())
		}
		if openedRecs[i].Seq >= resolvedRecs[i].Seq {
			t.Errorf("GateResolved of %s is not after its GateOpened", g.gate)
		}
	}
	dones, _ := find[event.TurnDone](recs)
	fails, _ := find[event.TurnFailed](recs)
	if len(dones) != 1 || dones[0].TurnID != runs[0].turn.ID || dones[0].ExitCode != 0 {
		t.Errorf("approved turn: TurnDone %+v", dones)
	}
	if len(fails) != 1 || fails[0].TurnID != runs[1].turn.ID {
		t.Errorf("denied turn: TurnFailed %+v", fails)
	}
}

// A client that answers a gate the moment GateOpened is delivered to it is
// not refused.
func testGateRespondOnDelivery(t *testing.T, e *env) {
	s := e.newSession(e.define(rig.WithProfile(gateProfile())))
	answers := make(chan error, 16)
	collect(t, s.Subscribe(hub.Filter{AllLoops: true}), func(env event.Envelope) {
		if o, ok := env.Event.(event.GateOpened); ok {
			err := s.RespondGate(context.Background(), o.GateID, true, testClient)
			answers <- err
			for i := 0; err != nil && i < 1000; i++ { // unblock the turn anyway
				time.Sleep(5 * time.Millisecond)
				err = s.RespondGate(context.Background(), o.GateID, true, testClient)
			}
		}
	})
	m := newMarker()
	for i := range 5 {
		file := "gated-" + m + "-" + string(rune('a'+i))
		runTurn(t, s, "touch "+file)
		select {
		case err := <-answers:
			if err != nil {
				var ng *rig.NoGateError
				if errors.As(err, &ng) {
					t.Fatalf("round %d: RespondGate on delivery of GateOpened was refused: %v", i, err)
				}
				t.Fatalf("round %d: RespondGate: %v", i, err)
			}
		case <-time.After(WaitTimeout):
			t.Fatalf("round %d: no GateOpened delivered", i)
		}
		if _, err := os.Stat(filepath.Join(s.Workspace(), file)); err != nil {
			t.Errorf("round %d: approved command did not run: %v", i, err)
		}
	}
}

// pipesProfile is the default profile with tty = false.
func pipesProfile() rig.Profile {
	p := rig.DefaultProfile()
	p.NoTTY = true
	return p
}

// By default a shell turn runs under a pseudo-terminal: tty names it, TERM
// is set, and stderr arrives with stdout, in the order printed.
func testShellTerminal(t *testing.T, e *env) {
	s := e.newSession(e.define())
	m := newMarker()
	ti := runTurn(t, s, `tty; echo "term=$TERM"; echo "out-`+m+`"; echo "err-`+m+`" >&2`)
	out := turnOutput(readJournal(t, e.raw, s.SessionID()), ti.ID)
	for _, want := range []string{"/dev/pts/", "term=xterm-256color\n", "out-" + m + "\nerr-" + m + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("journaled output %q lacks %q", out, want)
		}
	}
}
