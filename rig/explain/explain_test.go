package explain_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/explain"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// f builds an expected field list: name, value, name, value, ...
func f(kv ...any) []explain.Field {
	out := make([]explain.Field, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		out = append(out, explain.Field{Name: kv[i].(string), Value: kv[i+1]})
	}
	return out
}

func TestExplain(t *testing.T) {
	id := uuid.MustParse("0b9e3a4e-1111-4222-8333-444455556666")
	sid := id.String()
	holder := storage.Holder{PID: 42, Host: "box"}
	held := &storage.LeaseHeldError{Name: "sessions/" + sid, HolderEpoch: 7, Holder: holder}
	rootHeld := &storage.LeaseHeldError{Name: storage.RootLeaseName("ab12"), HolderEpoch: 5, Holder: holder}
	busy := &rig.WorkspaceRootBusyError{Root: "/r", HolderEpoch: 5, Cause: rootHeld}
	decode := &journal.RecordDecodeError{Name: "sessions/" + sid, Seq: 9, Reason: "bad event"}
	corrupt := &storage.CorruptError{Name: "sessions/" + sid, Path: "/s/ledgers/sessions/x.log", Offset: 120, Reason: "bad frame"}
	epochFile := &storage.CorruptError{Name: "sessions/" + sid, Path: "/s/leases/sessions/x.epoch", Offset: -1, Reason: "not JSON"}
	unknownE := &engine.UnknownEngineError{Name: "gpt", Known: []string{"demo", "shell"}}
	changes := []event.Change{{Field: "engine", Persisted: "shell", Live: "demo", Level: "warn"}}
	restore := func(kind rig.RestoreErrorKind, cause error) error {
		return fmt.Errorf("cli: %w", &rig.RestoreError{Kind: kind, Session: id, Cause: cause})
	}
	lost := &storage.LeaseLostError{Name: "sessions/" + sid, Epoch: 3, Reason: storage.LossReplaced, NewEpoch: 4}

	tests := []struct {
		name   string
		err    error
		typ    string
		kind   string
		stage  string
		remedy explain.Remedy
		fields []explain.Field
	}{
		{"nil", nil, "Error", "error", "", explain.RemedyNone, nil},
		{"plain", errors.New("boom"), "Error", "error", "", explain.RemedyNone, nil},
		{"bad id", &rig.BadIDError{Input: "zz"}, "BadIDError", "bad_id", "", explain.RemedyListSessions, f("input", "zz")},
		{"ambiguous", &rig.AmbiguousIDError{Input: "abcd", Matches: []string{"a", "b"}}, "AmbiguousIDError", "ambiguous_id", "",
			explain.RemedyLongerPrefix, f("input", "abcd", "matches", []string{"a", "b"})},
		{"profile gone", &rig.ProfileGoneError{Session: sid, Profile: "w", Known: []string{"default"}}, "ProfileGoneError", "unknown_profile", "",
			explain.RemedyChooseProfile, f("session", sid, "profile", "w", "known", []string{"default"})},
		{"overlap", fmt.Errorf("config: %w", &rig.PersistenceOverlapError{Profile: "p", Placement: rig.PlacementExclusive,
			Relation: rig.OverlapSame, Root: "/x", Store: "/x", RootGiven: "x", StoreGiven: "/x"}),
			"PersistenceOverlapError", "persistence_overlap", "", explain.RemedyMoveStoreOrRoot,
			f("profile", "p", "placement", "exclusive", "relation", rig.OverlapSame, "root", "/x", "store", "/x", "root_given", "x", "store_given", "/x")},
		{"rejected", &rig.RestoreRejectedError{Session: id, Source: "default", Assessment: rig.Assessment{Changes: changes}},
			"RestoreRejectedError", "config_rejected", "", explain.RemedyReviewDrift, f("session", sid, "source", "default", "changes", changes)},
		{"mismatch", &rig.ConfigMismatchError{Session: id, Persisted: "aa", Live: "bb"}, "ConfigMismatchError", "config_mismatch", "",
			explain.RemedyOriginalProfile, f("session", sid, "persisted", "aa", "live", "bb")},

		// Restores, by cause.
		{"restore: busy root before its held lease", restore(rig.RestoreLeaseFailed, busy), "RestoreError", "lease_failed", "lease_failed",
			explain.RemedyShutDownRootHolder, f("session", sid, "cause_type", "WorkspaceRootBusyError", "root", "/r", "holder_epoch", uint64(5), "holder", holder)},
		{"restore: an earlier turn runs", restore(rig.RestoreTurnRunning, &rig.TurnRunningError{Session: id, Turn: "t-1", Index: 3, Epoch: 2, PGID: 4242, Host: "box"}),
			"RestoreError", "turn_running", "turn_running",
			explain.RemedyStopEarlierTurn, f("session", sid, "turn_id", "t-1", "index", 3, "epoch", uint64(2), "pgid", 4242, "host", "box")},
		{"restore: epoch file", restore(rig.RestoreLeaseFailed, epochFile), "RestoreError", "lease_failed", "lease_failed",
			explain.RemedyRepairEpochFile, f("session", sid, "cause_type", "CorruptError", "path", epochFile.Path)},
		{"restore: corrupt journal", restore(rig.RestoreReplayFailed, corrupt), "RestoreError", "replay_failed", "replay_failed",
			explain.RemedyInspectJournal, f("session", sid, "cause_type", "CorruptError", "name", corrupt.Name, "path", corrupt.Path, "offset", int64(120))},
		{"restore: undecodable record", restore(rig.RestoreReplayFailed, decode), "RestoreError", "replay_failed", "replay_failed",
			explain.RemedyInspectJournal, f("session", sid, "cause_type", "RecordDecodeError", "seq", uint64(9), "reason", "bad event")},
		{"restore: held", restore(rig.RestoreLeaseFailed, fmt.Errorf("acquire: %w", held)), "RestoreError", "lease_failed", "lease_failed",
			explain.RemedyWaitOrBreakLease, f("session", sid, "holder_epoch", uint64(7), "holder", holder)},
		{"restore: unknown engine", restore(rig.RestoreLoopFailed, unknownE), "RestoreError", "loop_failed", "loop_failed",
			explain.RemedyDefineEngine, f("session", sid, "cause_type", "UnknownEngineError", "engine", "gpt", "known", []string{"demo", "shell"})},
		{"restore: unknown prefix", &rig.RestoreError{Kind: rig.RestoreDiscoveryFailed, Cause: &rig.UnknownSessionError{Input: "abcd"}},
			"RestoreError", "discovery_failed", "discovery_failed", explain.RemedyListSessions, f("session", nil, "input", "abcd")},
		{"restore: discovery", restore(rig.RestoreDiscoveryFailed, errors.New("no journal")), "RestoreError", "discovery_failed", "discovery_failed",
			explain.RemedyListSessions, f("session", sid)},
		{"restore: replay", restore(rig.RestoreReplayFailed, errors.New("io")), "RestoreError", "replay_failed", "replay_failed",
			explain.RemedyInspectJournal, f("session", sid)},
		{"restore: materialize", restore(rig.RestoreMaterializeFailed, errors.New("disk full")), "RestoreError", "materialize_failed", "materialize_failed",
			explain.RemedyCheckWorkspace, f("session", sid)},
		{"restore: context", restore(rig.RestoreContextDone, errors.New("deadline")), "RestoreError", "context_done", "context_done",
			explain.RemedyRetry, f("session", sid)},
		{"restore: journal", restore(rig.RestoreJournalFailed, errors.New("fenced")), "RestoreError", "journal_failed", "journal_failed",
			explain.RemedyRetry, f("session", sid)},

		{"engine unresponsive", &rig.EngineUnresponsiveError{Session: id, Turn: "t1", Index: 2, Waited: 1500 * time.Millisecond},
			"EngineUnresponsiveError", "engine_unresponsive", "", explain.RemedyRestoreIt, f("session", sid, "turn_id", "t1", "waited_ms", int64(1500))},
		{"unknown session", &rig.UnknownSessionError{Input: "abcd"}, "UnknownSessionError", "unknown_session", "", explain.RemedyListSessions, nil},

		// Creations, by cause.
		{"create: busy root", &rig.LifecycleError{Stage: rig.StagePlacement, Cause: busy}, "LifecycleError", "placement", "placement",
			explain.RemedyShutDownRootHolder, f("stage", "placement", "root", "/r", "holder_epoch", uint64(5))},
		{"create: seed", &rig.LifecycleError{Stage: rig.StageSeed, Cause: &rig.SeedError{Path: "/seed/x", Reason: "symlink"}}, "LifecycleError", "seed", "seed",
			explain.RemedyFixSeed, f("stage", "seed", "seed_path", "/seed/x")},
		{"create: invalid profile", &rig.LifecycleError{Stage: rig.StageValidate, Cause: &rig.InvalidProfileError{Profile: "p", Field: "root", Reason: "relative"}},
			"LifecycleError", "validate", "validate", explain.RemedyFixProfile, f("stage", "validate")},
		{"create: unknown engine", &rig.LifecycleError{Stage: rig.StageLoop, Cause: unknownE}, "LifecycleError", "loop", "loop",
			explain.RemedyDefineEngine, f("stage", "loop", "engine", "gpt", "known", []string{"demo", "shell"})},
		{"create: other", &rig.LifecycleError{Stage: rig.StageJournal, Cause: errors.New("disk")}, "LifecycleError", "journal", "journal",
			explain.RemedyNone, f("stage", "journal")},

		{"held session", fmt.Errorf("x: %w", held), "LeaseHeldError", "lease_held", "", explain.RemedyWaitOrBreakLease,
			f("holder_epoch", uint64(7), "holder", holder, "session", sid)},
		{"held root", rootHeld, "LeaseHeldError", "lease_held", "", explain.RemedyShutDownRootHolder,
			f("holder_epoch", uint64(5), "holder", holder)},
		{"lost journal lease", &journal.JournalLeaseLostError{Name: "sessions/" + sid, Epoch: 3, Cause: lost}, "LeaseLostError", "lease_lost", "",
			explain.RemedySeeHolder, f("session", sid, "epoch", uint64(3), "new_epoch", uint64(4), "reason", "replaced")},
		{"lost root lease", &rig.WorkspaceRootLeaseLostError{Root: "/r", Epoch: 2, Cause: &storage.LeaseLostError{Name: "workspace-roots/ab", Epoch: 2, Reason: storage.LossEpochAdvanced}},
			"LeaseLostError", "lease_lost", "", explain.RemedySeeHolder, f("session", nil, "epoch", uint64(2), "new_epoch", uint64(0), "reason", "epoch_advanced", "root", "/r")},
		{"lost bare lease", lost, "LeaseLostError", "lease_lost", "", explain.RemedySeeHolder,
			f("session", sid, "epoch", uint64(3), "new_epoch", uint64(4), "reason", "replaced")},
		{"fenced writer", fmt.Errorf("append: %w", &journal.FencedError{Name: "sessions/" + sid, Epoch: 3, Expected: 5, Actual: 6}), "LeaseLostError", "lease_lost", "",
			explain.RemedySeeHolder, f("session", sid, "epoch", uint64(3), "new_epoch", uint64(0), "reason", "")},
		{"fault of a lost lease", &hub.FaultError{Type: event.TypeTurnDone, Err: &journal.JournalLeaseLostError{Name: "sessions/" + sid, Epoch: 3, Cause: lost}},
			"LeaseLostError", "lease_lost", "", explain.RemedySeeHolder, f("session", sid, "epoch", uint64(3), "new_epoch", uint64(4), "reason", "replaced")},
		{"fault of a damaged ledger", &hub.FaultError{Type: event.TypeTurnDone, Err: corrupt}, "PersistenceFaultError", "persistence_fault", "",
			explain.RemedyNone, f("event_type", "TurnDone")},

		// A live session's calls.
		{"busy", fmt.Errorf("submit: %w", &rig.BusyError{TurnID: "t1", Index: 4}), "BusyError", "busy", "", explain.RemedyNone, f("turn_id", "t1", "index", 4)},
		{"no turn", &rig.NoTurnError{}, "NoTurnError", "no_turn", "", explain.RemedyNone, nil},
		{"no terminal", &rig.NoTerminalError{TurnID: "t2"}, "NoTerminalError", "no_terminal", "", explain.RemedyNone, f("turn_id", "t2")},
		{"input timeout", &rig.InputTimeoutError{TurnID: "t3", Written: 4096, Len: 65536}, "InputTimeoutError", "input_timeout", "", explain.RemedyNone,
			f("turn_id", "t3", "written", 4096, "len", 65536)},
		{"no gate", &rig.NoGateError{GateID: "g1", Open: "g2"}, "NoGateError", "no_gate", "", explain.RemedyNone, f("gate_id", "g1", "open", "g2")},
		{"session closed", fmt.Errorf("submit: %w", rig.ErrSessionClosed), "SessionClosedError", "session_closed", "", explain.RemedyRestoreWhenStopped, nil},
		{"timeout", fmt.Errorf("status: %w", context.DeadlineExceeded), "TimeoutError", "timeout", "", explain.RemedyNone, nil},
		{"canceled", fmt.Errorf("status: %w", context.Canceled), "CanceledError", "canceled", "", explain.RemedyNone, nil},
		{"restore that ran out of time", restore(rig.RestoreContextDone, context.DeadlineExceeded), "RestoreError", "context_done", "context_done",
			explain.RemedyRetry, f("session", sid)},

		{"undecodable record", fmt.Errorf("replay: %w", decode), "RecordDecodeError", "broken_journal", "", explain.RemedyInspectJournal,
			f("seq", uint64(9), "reason", "bad event")},
		{"corrupt ledger", corrupt, "CorruptError", "corrupt", "", explain.RemedyInspectJournal,
			f("name", corrupt.Name, "path", corrupt.Path, "offset", int64(120))},
		{"corrupt epoch file", epochFile, "CorruptError", "corrupt", "", explain.RemedyRepairEpochFile,
			f("name", epochFile.Name, "path", epochFile.Path, "offset", int64(-1))},
		{"invalid profile", &rig.InvalidProfileError{Profile: "p", Field: "engine", Reason: "empty"}, "InvalidProfileError", "invalid_profile", "",
			explain.RemedyFixProfile, f("profile", "p", "field", "engine")},
		{"unknown engine", unknownE, "UnknownEngineError", "unknown_engine", "", explain.RemedyDefineEngine,
			f("engine", "gpt", "known", []string{"demo", "shell"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := explain.Explain(tt.err)
			if x.Type.String() != tt.typ || x.Kind.String() != tt.kind || stageOf(x) != tt.stage || x.Remedy != tt.remedy {
				t.Fatalf("Explain = {Type %q, Kind %q, Stage %q, Remedy %v}, want {%q, %q, %q, %v}",
					x.Type, x.Kind, stageOf(x), x.Remedy, tt.typ, tt.kind, tt.stage, tt.remedy)
			}
			if x.Type != x.Kind.Type() {
				t.Errorf("Type %v, but kind %v is of type %v", x.Type, x.Kind, x.Kind.Type())
			}
			fields := x.Fields
			// A restore's failure ends with its cause in words, the same
			// from a host as from this process.
			var re *rig.RestoreError
			var rejected *rig.RestoreRejectedError
			var cause error
			switch {
			case errors.As(tt.err, &re):
				cause = re.Cause
			case errors.As(tt.err, &rejected):
				cause = rejected.Cause
			}
			if cause != nil {
				if last := fields[len(fields)-1]; last.Name != "cause" || last.Value != cause.Error() {
					t.Fatalf("last field %#v, want the cause %q", last, cause.Error())
				}
				fields = fields[:len(fields)-1]
			}
			if len(fields) != len(tt.fields) || (len(tt.fields) > 0 && !reflect.DeepEqual(fields, tt.fields)) {
				t.Fatalf("Fields = %#v\nwant %#v", fields, tt.fields)
			}
			for _, fl := range x.Fields {
				if fl.Name != strings.ToLower(fl.Name) || strings.ContainsAny(fl.Name, "- ") {
					t.Errorf("field name %q is not snake_case", fl.Name)
				}
				if v, ok := x.Field(fl.Name); !ok || !reflect.DeepEqual(v, fl.Value) {
					t.Errorf("Field(%q) = %v, %v", fl.Name, v, ok)
				}
			}
			if x.Classified() != (tt.typ != "Error") {
				t.Errorf("Classified() = %v", x.Classified())
			}
		})
	}
}

// stageOf is the stage of a staged operation's failure: its kind.
func stageOf(x explain.Explanation) string {
	if x.Type == explain.TypeRestoreError || x.Type == explain.TypeLifecycleError {
		return x.Kind.String()
	}
	return ""
}

// snakeCase reports whether name is a non-empty snake_case word.
func snakeCase(name string) bool {
	return name != "" && name == strings.ToLower(name) && !strings.ContainsAny(name, "- ()")
}

func TestRemedyNames(t *testing.T) {
	seen := map[string]explain.Remedy{}
	for _, r := range explain.Remedies() {
		name := r.String()
		if !snakeCase(name) {
			t.Errorf("Remedy %d has name %q, want snake_case", int(r), name)
		}
		if other, dup := seen[name]; dup {
			t.Errorf("Remedies %d and %d are both %q", int(other), int(r), name)
		}
		seen[name] = r
		if back, ok := explain.ParseRemedy(name); !ok || back != r {
			t.Errorf("ParseRemedy(%q) = %v, %v; want %d", name, back, ok, int(r))
		}
	}
	if got := explain.Remedy(999).String(); got != "remedy(999)" {
		t.Errorf("an unknown remedy is %q", got)
	}
	if r, ok := explain.ParseRemedy("no_such_remedy"); ok || r != explain.RemedyNone {
		t.Errorf("ParseRemedy of an unknown name = %v, %v", r, ok)
	}
}

// TestKindNames: every kind has its own snake_case wire name, which
// ParseKind reads back, and a type of its own (none but KindError is
// unclassified); every type is some kind's.
func TestKindNames(t *testing.T) {
	seen := map[string]explain.Kind{}
	typed := map[explain.Type]bool{}
	for _, k := range explain.Kinds() {
		name := k.String()
		if !snakeCase(name) {
			t.Errorf("Kind %d has name %q, want snake_case", int(k), name)
		}
		if other, dup := seen[name]; dup {
			t.Errorf("Kinds %d and %d are both %q", int(other), int(k), name)
		}
		seen[name] = k
		if back, ok := explain.ParseKind(name); !ok || back != k {
			t.Errorf("ParseKind(%q) = %v, %v; want %d", name, back, ok, int(k))
		}
		if (k.Type() == explain.TypeError) != (k == explain.KindError) {
			t.Errorf("kind %s has type %s", k, k.Type())
		}
		if x := explain.Of(k); x.Type != k.Type() || x.Kind != k || x.Remedy != k.Remedy() || x.Classified() != (k != explain.KindError) {
			t.Errorf("Of(%s) = %+v", k, x)
		}
		typed[k.Type()] = true
	}
	if got := explain.Kind(250).String(); got != "kind(250)" {
		t.Errorf("an unknown kind is %q", got)
	}
	if k, ok := explain.ParseKind("no_such_kind"); ok || k != explain.KindError {
		t.Errorf("ParseKind of an unknown name = %v, %v", k, ok)
	}

	names := map[string]explain.Type{}
	for _, typ := range explain.Types() {
		name := typ.String()
		if name == "" || name != strings.TrimSpace(name) || strings.ToUpper(name[:1]) != name[:1] || !strings.HasSuffix(name, "Error") {
			t.Errorf("Type %d has name %q, want a Go error type's", int(typ), name)
		}
		if other, dup := names[name]; dup {
			t.Errorf("Types %d and %d are both %q", int(other), int(typ), name)
		}
		names[name] = typ
		if back, ok := explain.ParseType(name); !ok || back != typ {
			t.Errorf("ParseType(%q) = %v, %v; want %d", name, back, ok, int(typ))
		}
		if !typed[typ] {
			t.Errorf("type %s is no kind's", typ)
		}
	}
	if got := explain.Type(250).String(); got != "type(250)" {
		t.Errorf("an unknown type is %q", got)
	}
	if typ, ok := explain.ParseType("NoSuchError"); ok || typ != explain.TypeError {
		t.Errorf("ParseType of an unknown name = %v, %v", typ, ok)
	}
}

// TestStageKinds: a failed restore's kind is its stage, and so is a
// failed creation's, for every stage rig has.
func TestStageKinds(t *testing.T) {
	for _, stage := range rig.RestoreErrorKinds {
		x := explain.Explain(&rig.RestoreError{Kind: stage, Cause: errors.New("x")})
		if x.Type != explain.TypeRestoreError || x.Kind.String() != string(stage) {
			t.Errorf("restore stage %s: %s %s", stage, x.Type, x.Kind)
		}
	}
	for _, stage := range []rig.LifecycleStage{rig.StageValidate, rig.StageMint, rig.StageLease, rig.StageJournal,
		rig.StagePlacement, rig.StageSeed, rig.StageLoop, rig.StageCommit} {
		x := explain.Explain(&rig.LifecycleError{Stage: stage, Cause: errors.New("x")})
		if x.Type != explain.TypeLifecycleError || x.Kind.String() != string(stage) {
			t.Errorf("creation stage %s: %s %s", stage, x.Type, x.Kind)
		}
	}
}

// selfExplained is an error that classifies itself (explain.Explainer).
type selfExplained struct {
	x   explain.Explanation
	err error
}

func (e *selfExplained) Error() string                    { return "self" }
func (e *selfExplained) Unwrap() error                    { return e.err }
func (e *selfExplained) Explanation() explain.Explanation { return e.x }

func TestExplainer(t *testing.T) {
	own := explain.Of(explain.KindHostLost, explain.Field{Name: "pid", Value: 7})
	inner := &rig.BadIDError{Input: "zz"}
	if x := explain.Explain(fmt.Errorf("w: %w", &selfExplained{own, inner})); !reflect.DeepEqual(x, own) {
		t.Errorf("an Explainer's own classification: %+v", x)
	}
	// An Explainer that does not classify itself leaves the chain to Explain.
	if x := explain.Explain(&selfExplained{explain.Of(explain.KindError), inner}); x.Kind != explain.KindBadID {
		t.Errorf("an unclassified Explainer: %+v", x)
	}
}

func TestNumber(t *testing.T) {
	x := explain.Of(explain.KindLeaseLost, explain.Field{Name: "epoch", Value: uint64(3)}, explain.Field{Name: "index", Value: 4},
		explain.Field{Name: "offset", Value: int64(-1)}, explain.Field{Name: "reason", Value: "replaced"})
	for name, want := range map[string]int64{"epoch": 3, "index": 4, "offset": -1} {
		if n, ok := x.Number(name); !ok || n != want {
			t.Errorf("Number(%s) = %d, %v; want %d", name, n, ok, want)
		}
	}
	for _, name := range []string{"reason", "absent"} {
		if n, ok := x.Number(name); ok {
			t.Errorf("Number(%s) = %d, true", name, n)
		}
	}
}
