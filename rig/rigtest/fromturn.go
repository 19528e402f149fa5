package rigtest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/procgroup"
)

// testClient is the client the suite answers gates and types input as:
// this process, which runs inside no turn.
var testClient = rig.ThisProcess("test")

var fromTurnCases = []testCase{
	{"InputFromTheTurnIsRefused", testInputFromTurn},
	{"GateAnswerFromAnEarlierTurnIsRefused", testGateFromEarlierTurn},
	{"GoneClientIsRefused", testGoneClient},
}

// needProcesses skips a test on a system whose processes looprig cannot
// inspect (there a client is never found inside a turn).
func needProcesses(t *testing.T) {
	t.Helper()
	if _, err := procgroup.Look(os.Getpid()); errors.Is(err, procgroup.ErrUnsupported) {
		t.Skip("processes cannot be inspected on this system")
	}
}

// readPID waits for a pid written to path.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	eventually(t, "a pid in "+path, func() bool {
		b, err := os.ReadFile(path)
		n, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		pid = n
		return err == nil && perr == nil && n > 0
	})
	return pid
}

// refusals are the journal's Refused records.
func refusals(t *testing.T, e *env, s *rig.Session) []event.Refused {
	t.Helper()
	r, _ := find[event.Refused](readJournal(t, e.raw, s.SessionID()))
	return r
}

// Input sent by a process of the running turn itself (its shell) is
// refused, written nowhere and journaled once as refused, however often it
// is tried; the same input from a client outside the turn goes in.
func testInputFromTurn(t *testing.T, e *env) {
	needProcesses(t)
	s := e.newSession(e.define())
	pidFile := filepath.Join(t.TempDir(), "shell.pid")
	ti := submit(t, s, `echo $$ > '`+pidFile+`'; read x; echo "got $x"`)
	shell := readPID(t, pidFile)
	waitTerminal(t, s, false)
	inside := rig.PeerClient("tool", shell)
	for range 3 {
		_, err := s.SendInput(waitCtx(t), rig.Input{Text: "forged\n", From: inside})
		var from *rig.FromTurnError
		if !errors.As(err, &from) || from.Reason != event.FromTurnCarries || from.Via != shell || from.Request != rig.RequestInput || from.TurnID != ti.ID {
			t.Fatalf("SendInput from the turn's shell = %v, want *rig.FromTurnError (carries, via %d)", err, shell)
		}
	}
	sendInput(t, s, rig.Input{Text: "typed\n", From: testClient})
	waitIdle(t, s)
	recs := readJournal(t, e.raw, s.SessionID())
	if out := turnOutput(recs, ti.ID); !strings.Contains(out, "got typed") || strings.Contains(out, "forged") {
		t.Errorf("output %q: want the outside input only", out)
	}
	if cmds := inputCommands(recs); len(cmds) != 1 || cmds[0].From != testClient.Kind {
		t.Errorf("input commands %+v, want the outside one only", cmds)
	}
	got := refusals(t, e, s)
	want := event.Refused{TurnID: ti.ID, What: event.RefusedInput, By: &event.Client{Kind: "tool", PID: shell}, Reason: event.FromTurnCarries, Via: shell}
	if len(got) != 1 || got[0].By == nil || got[0].By.PID != shell || got[0].By.Kind != "tool" ||
		got[0].TurnID != want.TurnID || got[0].What != want.What || got[0].Reason != want.Reason || got[0].Via != want.Via {
		t.Errorf("Refused records %+v, want one %+v", got, want)
	}
}

// A process an earlier turn left behind (it carries the session's
// environment) cannot answer the gate of a later one: the answer is
// refused, the gate stays open and is journaled as refused; a client
// outside the session answers it, and the journal names that client.
func testGateFromEarlierTurn(t *testing.T, e *env) {
	needProcesses(t)
	s := e.newSession(e.define(rig.WithProfile(gateProfile())))
	// What a turn left running, with its environment (the marks of the
	// session and of its turn), out of the turn's process group.
	left := exec.Command("sleep", "60")
	left.Env = append(os.Environ(), "LOOPRIG_SESSION="+s.SessionID().String(), "LOOPRIG_TURN=an-earlier-turn")
	left.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { left.Process.Kill(); left.Wait() })
	file := "gated-" + newMarker()
	ti := submit(t, s, "touch "+file)
	gate := waitJournal(t, e.raw, s.SessionID(), "GateOpened", isGateOpened).Event.(event.GateOpened)
	err := s.RespondGate(waitCtx(t), gate.GateID, true, rig.PeerClient("cli", left.Process.Pid))
	var from *rig.FromTurnError
	if !errors.As(err, &from) || from.Reason != event.FromTurnCarries || from.GateID != gate.GateID || from.Request != rig.RequestRespondGate {
		t.Fatalf("RespondGate from a process of an earlier turn = %v, want *rig.FromTurnError", err)
	}
	if st := s.Status(); st.Gate == nil || st.Gate.ID != gate.GateID {
		t.Fatalf("the gate is not open after the refused answer: %+v", st.Gate)
	}
	if exists(filepath.Join(s.Workspace(), file)) {
		t.Fatal("the gated command ran on a refused answer")
	}
	if err := s.RespondGate(waitCtx(t), gate.GateID, true, testClient); err != nil {
		t.Fatalf("RespondGate from outside: %v", err)
	}
	waitIdle(t, s)
	if !exists(filepath.Join(s.Workspace(), file)) {
		t.Error("the approved command did not run")
	}
	recs := readJournal(t, e.raw, s.SessionID())
	resolved, _ := find[event.GateResolved](recs)
	if len(resolved) != 1 || resolved[0].Action != event.ActionApprove || resolved[0].By == nil || resolved[0].By.PID != os.Getpid() {
		t.Errorf("GateResolved %+v, want one approval naming pid %d", resolved, os.Getpid())
	}
	got, _ := find[event.Refused](recs)
	if len(got) != 1 || got[0].What != event.RefusedGateAnswer || got[0].GateID != gate.GateID || got[0].Action != event.ActionApprove ||
		got[0].TurnID != ti.ID || got[0].By == nil || got[0].By.PID != left.Process.Pid || got[0].Via != left.Process.Pid {
		t.Errorf("Refused records %+v, want one for the gate's approval by pid %d", got, left.Process.Pid)
	}
}

// A client whose process is gone (another process may hold its
// connection) is refused: nobody can tell where it runs.
func testGoneClient(t *testing.T, e *env) {
	needProcesses(t)
	s := e.newSession(e.define())
	gone := exec.Command("sleep", "0")
	if err := gone.Start(); err != nil {
		t.Fatal(err)
	}
	c := rig.PeerClient("cli", gone.Process.Pid)
	gone.Wait()
	submit(t, s, `read x; echo "got $x"`)
	waitTerminal(t, s, false)
	_, err := s.SendInput(waitCtx(t), rig.Input{Text: "x\n", From: c})
	var from *rig.FromTurnError
	if !errors.As(err, &from) || from.Reason != event.FromTurnGone {
		t.Fatalf("SendInput from a gone client = %v, want *rig.FromTurnError (gone)", err)
	}
	sendInput(t, s, rig.Input{Text: "y\n", From: testClient})
	waitIdle(t, s)
}
