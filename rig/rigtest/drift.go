package rigtest

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/event"
)

var driftCases = []testCase{
	{"EngineChangeRejectedThenAccepted", testDriftRejected},
	{"InfoDriftAdopted", testDriftInfo},
	{"FingerprintOnlyMismatch", testDriftFingerprintOnly},
}

func stoppedSession(t testing.TB, e *env, r *rig.Rig) uuid.UUID {
	t.Helper()
	s := e.newSession(r)
	runTurn(t, s, "echo before")
	shutdown(t, s)
	return s.SessionID()
}

// checkAdopted checks the restore's records between RestoreStarted and
// RestoreDone include ConfigurationAdopted{source} with the changes.
func checkAdopted(t testing.TB, e *env, s *rig.Session, source string, fields ...string) {
	t.Helper()
	recs := readJournal(t, e.raw, s.SessionID())
	after := recs[lastFenceIndex(recs)+1:]
	types := typesOf(after)
	if len(types) != 3 || types[0] != "RestoreStarted" || types[1] != "ConfigurationAdopted" || types[2] != "RestoreDone" {
		t.Fatalf("after the restore fence: %v, want RestoreStarted, ConfigurationAdopted, RestoreDone", types)
	}
	ca := after[1].Event.(event.ConfigurationAdopted)
	if ca.Source != source {
		t.Errorf("ConfigurationAdopted source %q, want %q", ca.Source, source)
	}
	var got []string
	for _, c := range ca.Changes {
		got = append(got, c.Field)
	}
	if !slices.Equal(got, fields) {
		t.Errorf("adopted changes %+v, want fields %v", ca.Changes, fields)
	}
	if info := s.Restored(); info == nil || len(info.Adopted) != len(fields) {
		t.Errorf("RestoreInfo.Adopted = %+v", info)
	}
}

// An engine change is warn-level drift: the default decider rejects it
// (RestoreRejectedError listing it, RestoreErrored journaled, lease free);
// an explicit AcceptAll adopts it.
func testDriftRejected(t *testing.T, e *env) {
	id := stoppedSession(t, e, e.define())
	demo := rig.Profile{Name: "default", Engine: "demo", Placement: rig.PlacementSession}
	before := tip(t, e.raw, id)
	s, err := e.define(rig.WithProfile(demo)).RestoreSession(t.Context(), id)
	if err == nil {
		shutdownAtCleanup(t, s)
		t.Fatalf("restore under a changed engine succeeded with the default decider")
	}
	rej := as[*rig.RestoreRejectedError](t, err, "restore under a changed engine")
	if rej.Session != id || len(rej.Assessment.Changes) != 1 {
		t.Fatalf("RestoreRejectedError %+v, want one change for %s", rej, id)
	}
	if c := rej.Assessment.Changes[0]; c.Field != "engine" || c.Persisted != "shell" || c.Live != "demo" || c.Level != event.LevelWarn {
		t.Errorf("change %+v, want engine shell -> demo (warn)", c)
	}
	if !rej.Assessment.Warn() {
		t.Errorf("assessment of an engine change is not warn-level")
	}
	checkFailedRestore(t, e, id, before, "config_rejected")

	s2 := e.restore(e.define(rig.WithProfile(demo), rig.WithDecider(rig.AcceptAll("test"))), id)
	checkAdopted(t, e, s2, "test", "engine")
	ti := runTurn(t, s2, "adopted")
	out := turnOutput(readJournal(t, e.raw, id), ti.ID)
	if !strings.Contains(out, "step 1/3: adopted") {
		t.Errorf("turn after adopting the demo engine printed %q", out)
	}
}

// A renamed profile is info-level drift: the default decider accepts it and
// the restore records ConfigurationAdopted.
func testDriftInfo(t *testing.T, e *env) {
	alpha := rig.Profile{Name: "alpha", Engine: "shell", Placement: rig.PlacementSession}
	id := stoppedSession(t, e, e.define(rig.WithProfile(alpha)))
	beta := alpha
	beta.Name = "beta"
	s := e.restore(e.define(rig.WithProfile(beta)), id)
	checkAdopted(t, e, s, "default", "profile")
	if c := s.Restored().Adopted[0]; c.Persisted != "alpha" || c.Live != "beta" || c.Level != event.LevelInfo {
		t.Errorf("adopted change %+v, want profile alpha -> beta (info)", c)
	}
}

// A fingerprint-only session restored under a changed gate policy is
// *rig.ConfigMismatchError; under the same profile it restores.
func testDriftFingerprintOnly(t *testing.T, e *env) {
	p := gateProfile()
	r := e.define(rig.WithProfile(p), rig.WithFingerprintOnly())
	id := stoppedSession(t, e, r)
	started, _ := find[event.SessionStarted](readJournal(t, e.raw, id))
	if len(started) != 1 || started[0].Manifest != nil || started[0].Fingerprint == "" {
		t.Fatalf("fingerprint-only SessionStarted %+v, want a fingerprint and no manifest", started)
	}
	changed := p
	changed.GatePolicy = []string{"touch gated", "rm -rf"}
	before := tip(t, e.raw, id)
	s, err := e.define(rig.WithProfile(changed), rig.WithDecider(rig.AcceptAll("ignored"))).RestoreSession(t.Context(), id)
	if err == nil {
		shutdownAtCleanup(t, s)
		t.Fatalf("fingerprint-only session restored under a changed gate policy")
	}
	mm := as[*rig.ConfigMismatchError](t, err, "fingerprint-only restore under drift")
	if mm.Persisted != started[0].Fingerprint || mm.Live == mm.Persisted || mm.Session != id {
		t.Errorf("ConfigMismatchError %+v", mm)
	}
	checkFailedRestore(t, e, id, before, "config_mismatch")
	s2 := e.restore(e.define(rig.WithProfile(p)), id)
	if info := s2.Restored(); len(info.Adopted) != 0 {
		t.Errorf("restore without drift adopted %+v", info.Adopted)
	}
}
