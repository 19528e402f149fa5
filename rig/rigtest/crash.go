package rigtest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

var crashCases = []testCase{
	{"SimulatedCrashMidTurn", func(t *testing.T, e *env) { testSimulatedCrash(t, e, false) }},
	{"SimulatedCrashAtGate", func(t *testing.T, e *env) { testSimulatedCrash(t, e, true) }},
	{"KilledProcessMidTurn", func(t *testing.T, e *env) { testKilledHelper(t, e, "crash-output") }},
	{"KilledProcessAtGate", func(t *testing.T, e *env) { testKilledHelper(t, e, "crash-gate") }},
}

// outputInput prints a numbered line every 50ms for a long time; marker is
// in the command line of the turn's shell.
func outputInput(marker string) string {
	return ": " + marker + "; i=0; while [ $i -lt 100000 ]; do echo line-$i; i=$((i+1)); sleep 0.05; done"
}

// quietInput prints one line and then waits, writing nothing more: its
// holder appends nothing to the journal after that line's checkpoint (a
// deaf holder then finds a broken lease only at the turn's end).
func quietInput(marker string) string {
	return ": " + marker + "; echo line-0; sleep 600"
}

// gatedInput matches gateProfile's policy.
func gatedInput(marker string) string { return "touch gated-" + marker }

func isOutput(r journal.Record) bool {
	o, ok := r.Event.(event.TurnOutput)
	return ok && strings.Contains(o.Text, "line-0")
}

func isGateOpened(r journal.Record) bool {
	_, ok := r.Event.(event.GateOpened)
	return ok
}

// testSimulatedCrash makes a session lose its lease while a turn runs (or
// waits at a gate), as if its process had died, then restores it with a
// fresh rig.
func testSimulatedCrash(t *testing.T, e *env, gate bool) {
	s := e.newSession(e.define(rig.WithProfile(gateProfile())))
	id := s.SessionID()
	m := newMarker()
	var ti rig.TurnInfo
	var gateID string
	if gate {
		ti = submit(t, s, gatedInput(m))
		gateID = waitJournal(t, e.raw, id, "GateOpened", isGateOpened).Event.(event.GateOpened).GateID
	} else {
		ti = submit(t, s, outputInput(m))
		waitJournal(t, e.raw, id, "TurnOutput", isOutput)
	}
	e.fs.crash(t, storage.SessionName(id.String()))
	select {
	case <-s.Done():
	case <-time.After(WaitTimeout):
		t.Fatalf("the session did not notice the loss of its lease")
	}
	as[*journal.JournalLeaseLostError](t, s.Err(), "fault of the crashed session")
	waitTurnOver(t, s) // its turn ended, processes gone
	noProcs(t, m, "after the crashed session's turn ended")
	if info, ok := listed(t, e.raw, id); !ok || info.State != rig.StateCrashed {
		t.Errorf("crashed session listed as %+v (listed %v), want crashed", info, ok)
	}
	before := readJournal(t, e.raw, id)
	s2 := e.restore(e.define(rig.WithProfile(gateProfile())), id)
	checkCrashRestore(t, e, s2, before, ti.ID, gateID, s.Epoch())
	if gate && exists(filepath.Join(s2.Workspace(), "gated-"+m)) {
		t.Errorf("the gated command ran although its gate was never approved")
	}
}

// checkCrashRestore checks a restore of a crashed session: one
// TurnInterrupted{crash} for the open turn and one
// GateResolved{close, restore_unavailable} for the open gate (if any), all
// between RestoreStarted and RestoreDone, listed in RestoreInfo; the
// history before the crash intact; a new turn runs.
func checkCrashRestore(t *testing.T, e *env, s *rig.Session, before []journal.Record, turnID, gateID string, crashedEpoch uint64) {
	t.Helper()
	id := s.SessionID()
	if s.Epoch() <= crashedEpoch {
		t.Errorf("restored epoch %d, want more than the crashed holder's %d", s.Epoch(), crashedEpoch)
	}
	recs := readJournal(t, e.raw, id)
	if len(recs) < len(before) {
		t.Fatalf("journal shrank from %d to %d records", len(before), len(recs))
	}
	for i := range before {
		if recs[i].Seq != before[i].Seq || recs[i].Kind != before[i].Kind || !recs[i].At.Equal(before[i].At) {
			t.Fatalf("record %d changed across the restore", before[i].Seq)
		}
	}
	if ints, _ := find[event.TurnInterrupted](before); len(ints) != 0 {
		t.Errorf("the crashed holder closed its turn: %+v", ints)
	}
	fi := lastFenceIndex(recs)
	if fi != len(before) || recs[fi].Epoch != s.Epoch() {
		t.Fatalf("restore fence at %d (epoch %d), want %d (epoch %d):%s", fi, recs[fi].Epoch, len(before), s.Epoch(), describe(recs[len(before):]))
	}
	after := recs[fi+1:]
	want := []string{"RestoreStarted"}
	if gateID != "" {
		want = append(want, "GateResolved")
	}
	want = append(want, "TurnInterrupted", "RestoreDone")
	if got := typesOf(after); !slices.Equal(got, want) {
		t.Fatalf("after the restore fence: %v, want %v", got, want)
	}
	ints, _ := find[event.TurnInterrupted](recs)
	if len(ints) != 1 || ints[0].TurnID != turnID || ints[0].Reason != event.ReasonCrash || ints[0].Index != 0 {
		t.Errorf("TurnInterrupted in the journal: %+v, want exactly one {%s crash index 0}", ints, turnID)
	}
	resolved, _ := find[event.GateResolved](recs)
	if gateID != "" {
		if len(resolved) != 1 || resolved[0].GateID != gateID || resolved[0].Action != event.ActionClose || resolved[0].Reason != "restore_unavailable" {
			t.Errorf("GateResolved in the journal: %+v, want exactly one {%s close restore_unavailable}", resolved, gateID)
		}
	} else if len(resolved) != 0 {
		t.Errorf("GateResolved without a gate: %+v", resolved)
	}
	var wantGates []string
	if gateID != "" {
		wantGates = []string{gateID}
	}
	done := after[len(after)-1].Event.(event.RestoreDone)
	if !slices.Equal(done.Interrupted, []string{turnID}) || !slices.Equal(done.GatesClosed, wantGates) || done.Epoch != s.Epoch() {
		t.Errorf("RestoreDone %+v, want interrupted [%s] gates %v", done, turnID, wantGates)
	}
	info := s.Restored()
	if info == nil || !slices.Equal(info.Interrupted, []string{turnID}) || !slices.Equal(info.GatesClosed, wantGates) {
		t.Errorf("RestoreInfo %+v, want interrupted [%s] gates %v", info, turnID, wantGates)
	}
	if gateID == "" {
		if out := turnOutput(recs, turnID); !strings.Contains(out, "line-0\n") {
			t.Errorf("output checkpointed before the crash is not in the history: %q", out)
		}
	}
	if st := s.Status(); st.Turn != nil || st.Gate != nil {
		t.Errorf("restored session shows turn %+v gate %+v", st.Turn, st.Gate)
	}
	ti := runTurn(t, s, "echo after-restore")
	if ti.Index != 1 {
		t.Errorf("turn after the restore has index %d, want 1", ti.Index)
	}
	if out := turnOutput(readJournal(t, e.raw, id), ti.ID); out != "after-restore\n" {
		t.Errorf("turn after the restore printed %q", out)
	}
}

const helperPrefix = "rigtest-helper:"

// testKilledHelper lets a helper process create a session and start a turn
// (printing, or blocked at a gate), SIGKILLs it, and restores the session.
func testKilledHelper(t *testing.T, e *env, role string) {
	if !e.b.CrossProcess {
		t.Skipf("backend %s cannot be opened by another process; SimulatedCrash covers the restore", e.b.Name)
	}
	m := newMarker()
	hp := spawnHelper(t, e, role, m)
	cmd, line, wait := hp.cmd, hp.line, hp.wait
	var idText, turnID string
	var epoch uint64
	if _, err := fmt.Sscan(line, &idText, &epoch, &turnID); err != nil {
		t.Fatalf("helper said %q: %v", line, err)
	}
	id := uuid.MustParse(idText)

	var gateID string
	if role == "crash-gate" {
		gateID = waitJournal(t, e.raw, id, "GateOpened", isGateOpened).Event.(event.GateOpened).GateID
	} else {
		waitJournal(t, e.raw, id, "TurnOutput", isOutput)
		if procAvailable() && len(procsWith(m)) == 0 {
			t.Errorf("the helper's turn is not running")
		}
	}
	if info, ok := listed(t, e.raw, id); !ok || info.State != rig.StateHeld || info.Holder == nil || info.Holder.PID != cmd.Process.Pid || info.Epoch != epoch {
		t.Errorf("session of the live helper listed as %+v (listed %v), want held by pid %d at epoch %d", info, ok, cmd.Process.Pid, epoch)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	wait()
	waitNoProcs(t, m, "after the helper was killed")
	if info, ok := listed(t, e.raw, id); !ok || info.State != rig.StateCrashed {
		t.Errorf("session of the killed helper listed as %+v (listed %v), want crashed", info, ok)
	}

	before := readJournal(t, e.raw, id)
	s := e.restore(e.define(rig.WithProfile(gateProfile())), id)
	checkCrashRestore(t, e, s, before, turnID, gateID, epoch)
	if s.Epoch() != epoch+1 {
		t.Errorf("restored at epoch %d, want the helper's epoch + 1 = %d", s.Epoch(), epoch+1)
	}
	if gateID != "" && exists(filepath.Join(s.Workspace(), "gated-"+m)) {
		t.Errorf("the gated command ran although its gate was never approved")
	}
}

// helperProc is a helper process of the crash tests, started for a role,
// and the line it reported.
type helperProc struct {
	cmd  *exec.Cmd
	line string
	wait func() // waits for it to exit (once)
}

// spawnHelper starts a helper process for role, with marker m, and waits
// for the line it reports; it is killed when the test ends.
func spawnHelper(t *testing.T, e *env, role, m string) *helperProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+helperTestName+"$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		helperEnv+"="+role, helperStoreEnv+"="+e.dir, helperWSEnv+"="+e.ws, helperMarkerEnv+"="+m)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitOnce sync.Once
	wait := func() { waitOnce.Do(func() { _ = cmd.Wait() }) }
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		stdin.Close()
		wait()
		if t.Failed() {
			t.Logf("helper stderr:\n%s", stderr.String())
		}
	})
	lines := make(chan string, 1)
	var out lockedBuffer
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if l, ok := strings.CutPrefix(sc.Text(), helperPrefix); ok {
				lines <- l
			}
			out.Write(append(sc.Bytes(), '\n'))
		}
		close(lines)
	}()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatalf("helper ended without reporting; stdout:\n%s\nstderr:\n%s", out.String(), stderr.String())
		}
		return &helperProc{cmd: cmd, line: l, wait: wait}
	case <-time.After(WaitTimeout):
		t.Fatalf("helper did not report; stderr:\n%s", stderr.String())
	}
	return nil
}

// runHelper is the helper process: it creates a session in the store named
// by the environment, starts the role's turn, reports "ID EPOCH TURN" and
// waits to be killed (or for its stdin to close).
func runHelper(t *testing.T, b Backend, role string) {
	if step, ok := strings.CutPrefix(role, checkpointCrashRole); ok {
		runCheckpointCrashHelper(t, b, rig.CheckpointStep(step))
		return
	}
	store := b.Reopen(t, os.Getenv(helperStoreEnv))
	r := defineOn(t, store, os.Getenv(helperWSEnv), rig.WithProfile(gateProfile()))
	s, err := r.NewSession(t.Context())
	if err != nil {
		t.Fatalf("helper NewSession: %v", err)
	}
	m := os.Getenv(helperMarkerEnv)
	var input string
	switch role {
	case "crash-output":
		input = outputInput(m)
	case "crash-gate":
		input = gatedInput(m)
	default:
		t.Fatalf("unknown helper role %q", role)
	}
	ti, err := s.Submit(t.Context(), input)
	if err != nil {
		t.Fatalf("helper Submit: %v", err)
	}
	fmt.Printf("%s %s %d %s\n", helperPrefix, s.SessionID(), s.Epoch(), ti.ID)
	_, _ = io.Copy(io.Discard, os.Stdin) // until killed, or the parent is gone
	os.Exit(0)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
