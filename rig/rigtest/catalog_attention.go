package rigtest

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/storage"
)

// listedWhen polls the listing of session id until ok says it shows what
// the test waits for (catalog writes follow the journal's records).
func listedWhen(t *testing.T, store storage.Store, id uuid.UUID, what string, ok func(rig.SessionInfo) bool) rig.SessionInfo {
	t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	for {
		info, found := listed(t, store, id)
		if found && ok(info) {
			return info
		}
		if time.Now().After(deadline) {
			t.Fatalf("the listing never showed %s: %+v", what, info)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The catalog says what needs a person without a journal read: how the
// last turn ended (exit code, outcome), when the open turn started and the
// open gate opened; a restore keeps the last end from the journal and
// records the crash's interruption as the new one.
func testCatalogAttention(t *testing.T, e *env) {
	s := e.newSession(e.define(rig.WithProfile(gateProfile())))
	id := s.SessionID()
	first := runTurn(t, s, "exit 3")
	info := listedWhen(t, e.raw, id, "the first turn's end", func(i rig.SessionInfo) bool { return i.LastEnd != nil })
	end := *info.LastEnd
	if end.TurnID != first.ID || end.Index != 0 || end.Outcome != rig.TurnOutcomeDone || end.ExitCode != 3 || !end.Failed() {
		t.Errorf("LastEnd after `exit 3`: %+v, want turn %s index 0 done exit 3", end, first.ID)
	}
	if end.Started.IsZero() || end.Ended.Before(end.Started) {
		t.Errorf("LastEnd times: started %v ended %v", end.Started, end.Ended)
	}
	if !info.TurnSince.IsZero() || !info.GateSince.IsZero() {
		t.Errorf("nothing is open, yet TurnSince %v GateSince %v", info.TurnSince, info.GateSince)
	}

	m := newMarker()
	second := submit(t, s, gatedInput(m))
	waitJournal(t, e.raw, id, "GateOpened", isGateOpened)
	info = listedWhen(t, e.raw, id, "the open gate", func(i rig.SessionInfo) bool { return i.OpenGate != "" })
	if !strings.Contains(info.GatePrompt, "gated-"+m) {
		t.Errorf("the listing's gate question %q, want the command", info.GatePrompt)
	}
	if info.TurnSince.IsZero() || info.GateSince.IsZero() || info.GateSince.Before(info.TurnSince) {
		t.Errorf("open turn since %v, gate since %v: want both, the gate's not before the turn's", info.TurnSince, info.GateSince)
	}
	if info.LastEnd == nil || info.LastEnd.TurnID != first.ID {
		t.Errorf("LastEnd while turn 1 runs: %+v, want turn 0's", info.LastEnd)
	}

	e.fs.crash(t, storage.SessionName(id.String()))
	select {
	case <-s.Done():
	case <-time.After(WaitTimeout):
		t.Fatalf("the session did not notice the loss of its lease")
	}
	waitTurnOver(t, s)
	s2 := e.restore(e.define(rig.WithProfile(gateProfile())), id)
	info = listedWhen(t, e.raw, id, "the restore", func(i rig.SessionInfo) bool { return i.State == rig.StateLive })
	want := rig.TurnEnd{TurnID: second.ID, Index: 1, Outcome: rig.TurnOutcomeInterrupted, Reason: event.ReasonCrash}
	if got := info.LastEnd; got == nil || got.TurnID != want.TurnID || got.Index != 1 || got.Outcome != want.Outcome || got.Reason != want.Reason || !got.Failed() {
		t.Errorf("LastEnd after the restore: %+v, want %+v", got, want)
	}
	if info.OpenGate != "" || !info.GateSince.IsZero() || !info.TurnSince.IsZero() {
		t.Errorf("after the restore: open gate %q since %v, turn since %v; want none", info.OpenGate, info.GateSince, info.TurnSince)
	}

	// A restore of the stopped session folds the last end from the journal.
	shutdown(t, s2)
	s3 := e.restore(e.define(rig.WithProfile(gateProfile())), id)
	info = listedWhen(t, e.raw, id, "the second restore", func(i rig.SessionInfo) bool { return i.State == rig.StateLive })
	if got := info.LastEnd; got == nil || got.TurnID != second.ID || got.Outcome != rig.TurnOutcomeInterrupted || got.Reason != event.ReasonCrash {
		t.Errorf("LastEnd replayed from the journal: %+v, want turn 1 interrupted (crash)", got)
	}
	shutdown(t, s3)
}
