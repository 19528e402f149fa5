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
	"looprig/rig/fault"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// f builds an expected field list: name, value, name, value, ...
func f(kv ...any) []fault.Field {
	out := make([]fault.Field, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		out = append(out, fault.Field{Name: kv[i].(string), Value: kv[i+1]})
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
	epochFile := &storage.CorruptError{Name: "sessions/" + sid, Path: "/s/leases/sessions/x.epoch", Offset: -1, Reason: "not JSON", EpochFile: true}
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
		remedy fault.Remedy
		fields []fault.Field
	}{
		{"nil", nil, "Error", "error", "", fault.RemedyNone, nil},
		{"plain", errors.New("boom"), "Error", "error", "", fault.RemedyNone, nil},
		{"bad id", &rig.BadIDError{Input: "zz"}, "BadIDError", "bad_id", "", fault.RemedyListSessions, f("input", "zz")},
		{"ambiguous", &rig.AmbiguousIDError{Input: "abcd", Matches: []string{"a", "b"}}, "AmbiguousIDError", "ambiguous_id", "",
			fault.RemedyLongerPrefix, f("input", "abcd", "matches", []string{"a", "b"})},
		{"profile gone", &rig.ProfileGoneError{Session: sid, Profile: "w", Known: []string{"default"}}, "ProfileGoneError", "unknown_profile", "",
			fault.RemedyChooseProfile, f("session", sid, "profile", "w", "known", []string{"default"})},
		{"overlap", fmt.Errorf("config: %w", &rig.PersistenceOverlapError{Profile: "p", Placement: rig.PlacementExclusive,
			Relation: rig.OverlapSame, Root: "/x", Store: "/x", RootGiven: "x", StoreGiven: "/x"}),
			"PersistenceOverlapError", "persistence_overlap", "", fault.RemedyMoveStoreOrRoot,
			f("profile", "p", "placement", "exclusive", "relation", rig.OverlapSame, "root", "/x", "store", "/x", "root_given", "x", "store_given", "/x")},
		{"unsafe root", fmt.Errorf("define: %w", &rig.UnsafeRootError{Profile: "p", Placement: rig.PlacementExclusive,
			Root: "/", RootGiven: "/tmp/..", Reason: rig.UnsafeRootFilesystem}),
			"UnsafeRootError", "unsafe_root", "", fault.RemedyChooseProjectRoot,
			f("profile", "p", "placement", "exclusive", "reason", rig.UnsafeRootFilesystem, "root", "/", "root_given", "/tmp/..")},
		{"rejected", &rig.RestoreRejectedError{Session: id, Source: "default", Assessment: rig.Assessment{Changes: changes}},
			"RestoreRejectedError", "config_rejected", "", fault.RemedyReviewDrift, f("session", sid, "source", "default", "changes", changes, "journaled", false)},
		{"mismatch", &rig.ConfigMismatchError{Session: id, Persisted: "aa", Live: "bb"}, "ConfigMismatchError", "config_mismatch", "",
			fault.RemedyOriginalProfile, f("session", sid, "persisted", "aa", "live", "bb", "journaled", false)},

		// Restores, by cause.
		{"restore: busy root before its held lease", restore(rig.RestoreLeaseFailed, busy), "RestoreError", "lease_failed", "lease_failed",
			fault.RemedyShutDownRootHolder, f("session", sid, "cause_type", "WorkspaceRootBusyError", "root", "/r", "holder_epoch", uint64(5), "holder", holder)},
		{"restore: an earlier turn runs", restore(rig.RestoreTurnRunning, &rig.TurnRunningError{Session: id, Turn: "t-1", Index: 3, Epoch: 2, PGID: 4242, Host: "box"}),
			"RestoreError", "turn_running", "turn_running",
			fault.RemedyStopEarlierTurn, f("session", sid, "turn_id", "t-1", "index", 3, "epoch", uint64(2), "pgid", 4242, "host", "box")},
		{"restore: epoch file", restore(rig.RestoreLeaseFailed, epochFile), "RestoreError", "lease_failed", "lease_failed",
			fault.RemedyRepairEpochFile, f("session", sid, "cause_type", "CorruptError", "path", epochFile.Path)},
		{"restore: corrupt journal", restore(rig.RestoreReplayFailed, corrupt), "RestoreError", "replay_failed", "replay_failed",
			fault.RemedyInspectJournal, f("session", sid, "cause_type", "CorruptError", "name", corrupt.Name, "path", corrupt.Path, "offset", int64(120))},
		{"restore: undecodable record", restore(rig.RestoreReplayFailed, decode), "RestoreError", "replay_failed", "replay_failed",
			fault.RemedyInspectJournal, f("session", sid, "cause_type", "RecordDecodeError", "seq", uint64(9), "reason", "bad event")},
		{"restore: held", restore(rig.RestoreLeaseFailed, fmt.Errorf("acquire: %w", held)), "RestoreError", "lease_failed", "lease_failed",
			fault.RemedyWaitOrBreakLease, f("session", sid, "holder_epoch", uint64(7), "holder", holder)},
		{"restore: unknown engine", restore(rig.RestoreLoopFailed, unknownE), "RestoreError", "loop_failed", "loop_failed",
			fault.RemedyDefineEngine, f("session", sid, "cause_type", "UnknownEngineError", "engine", "gpt", "known", []string{"demo", "shell"})},
		{"restore: unknown prefix", &rig.RestoreError{Kind: rig.RestoreDiscoveryFailed, Cause: &rig.UnknownSessionError{Input: "abcd"}},
			"RestoreError", "discovery_failed", "discovery_failed", fault.RemedyListSessions, f("session", nil, "input", "abcd")},
		{"restore: discovery", restore(rig.RestoreDiscoveryFailed, errors.New("no journal")), "RestoreError", "discovery_failed", "discovery_failed",
			fault.RemedyListSessions, f("session", sid)},
		{"restore: replay", restore(rig.RestoreReplayFailed, errors.New("io")), "RestoreError", "replay_failed", "replay_failed",
			fault.RemedyInspectJournal, f("session", sid)},
		{"restore: materialize", restore(rig.RestoreMaterializeFailed, errors.New("disk full")), "RestoreError", "materialize_failed", "materialize_failed",
			fault.RemedyCheckWorkspace, f("session", sid)},
		{"restore: context", restore(rig.RestoreContextDone, errors.New("deadline")), "RestoreError", "context_done", "context_done",
			fault.RemedyRetry, f("session", sid)},
		{"restore: journal", restore(rig.RestoreJournalFailed, errors.New("fenced")), "RestoreError", "journal_failed", "journal_failed",
			fault.RemedyRetry, f("session", sid)},

		// A restore or a creation that failed of a refusal is the refusal.
		{"restore of an overlapping root", restore(rig.RestoreMaterializeFailed, &rig.PersistenceOverlapError{Profile: "p", Placement: rig.PlacementExclusive,
			Relation: rig.OverlapSame, Root: "/x", Store: "/x"}), "PersistenceOverlapError", "persistence_overlap", "", fault.RemedyMoveStoreOrRoot,
			f("profile", "p", "placement", "exclusive", "relation", rig.OverlapSame, "root", "/x", "store", "/x", "root_given", "", "store_given", "")},
		{"restore that met a shutdown", restore(rig.RestoreAppendFailed, fmt.Errorf("append: %w", rig.ErrSessionClosed)),
			"SessionClosedError", "session_closed", "", fault.RemedyRestoreWhenStopped, nil},
		{"creation of an unsafe root", &rig.LifecycleError{Stage: rig.StagePlacement, Cause: &rig.UnsafeRootError{Profile: "p",
			Placement: rig.PlacementExclusive, Root: "/", RootGiven: "/", Reason: rig.UnsafeRootFilesystem}},
			"UnsafeRootError", "unsafe_root", "", fault.RemedyChooseProjectRoot,
			f("profile", "p", "placement", "exclusive", "reason", rig.UnsafeRootFilesystem, "root", "/", "root_given", "/")},
		{"joined errors: the first that explains itself", errors.Join(errors.New("plain"), &rig.NoTurnError{}), "NoTurnError", "no_turn", "",
			fault.RemedyNone, nil},

		{"engine unresponsive", &rig.EngineUnresponsiveError{Session: id, Turn: "t1", Index: 2, Waited: 1500 * time.Millisecond},
			"EngineUnresponsiveError", "engine_unresponsive", "", fault.RemedyRestoreIt, f("session", sid, "turn_id", "t1", "waited_ms", int64(1500))},
		{"unknown session", &rig.UnknownSessionError{Input: "abcd"}, "UnknownSessionError", "unknown_session", "", fault.RemedyListSessions, nil},

		// Creations, by cause.
		{"create: busy root", &rig.LifecycleError{Stage: rig.StagePlacement, Cause: busy}, "LifecycleError", "placement", "placement",
			fault.RemedyShutDownRootHolder, f("stage", "placement", "root", "/r", "holder_epoch", uint64(5), "holder", holder)},
		{"create: seed", &rig.LifecycleError{Stage: rig.StageSeed, Cause: &rig.SeedError{Path: "/seed/x", Reason: "symlink"}}, "LifecycleError", "seed", "seed",
			fault.RemedyFixSeed, f("stage", "seed", "seed_path", "/seed/x")},
		{"create: invalid profile", &rig.LifecycleError{Stage: rig.StageValidate, Cause: &rig.InvalidProfileError{Profile: "p", Field: "root", Reason: "relative"}},
			"LifecycleError", "validate", "validate", fault.RemedyFixProfile, f("stage", "validate")},
		{"create: unknown engine", &rig.LifecycleError{Stage: rig.StageLoop, Cause: unknownE}, "LifecycleError", "loop", "loop",
			fault.RemedyDefineEngine, f("stage", "loop", "engine", "gpt", "known", []string{"demo", "shell"})},
		{"create: other", &rig.LifecycleError{Stage: rig.StageJournal, Cause: errors.New("disk")}, "LifecycleError", "journal", "journal",
			fault.RemedyNone, f("stage", "journal")},

		{"hand-over without the workspace", fmt.Errorf("take: %w", &rig.HandOffWithoutWorkspaceError{Session: sid, Profile: "work", Placement: rig.PlacementExclusive}),
			"HandOffWithoutWorkspaceError", "workspace_not_checkpointed", "", fault.RemedyTakeWithoutWorkspace,
			f("session", sid, "profile", "work", "placement", "exclusive")},
		{"held session", fmt.Errorf("x: %w", held), "LeaseHeldError", "lease_held", "", fault.RemedyWaitOrBreakLease,
			f("holder_epoch", uint64(7), "holder", holder, "session", sid)},
		{"held root", rootHeld, "LeaseHeldError", "lease_held", "", fault.RemedyShutDownRootHolder,
			f("holder_epoch", uint64(5), "holder", holder)},
		{"lost journal lease", &journal.JournalLeaseLostError{Name: "sessions/" + sid, Epoch: 3, Cause: lost}, "LeaseLostError", "lease_lost", "",
			fault.RemedySeeHolder, f("session", sid, "epoch", uint64(3), "new_epoch", uint64(4), "reason", "replaced")},
		{"lost root lease", &rig.WorkspaceRootLeaseLostError{Root: "/r", Epoch: 2, Cause: &storage.LeaseLostError{Name: "workspace-roots/ab", Epoch: 2, Reason: storage.LossEpochAdvanced}},
			"LeaseLostError", "lease_lost", "", fault.RemedySeeHolder, f("session", nil, "epoch", uint64(2), "new_epoch", uint64(0), "reason", "epoch_advanced", "root", "/r")},
		{"lost bare lease", lost, "LeaseLostError", "lease_lost", "", fault.RemedySeeHolder,
			f("session", sid, "epoch", uint64(3), "new_epoch", uint64(4), "reason", "replaced")},
		{"fenced writer", fmt.Errorf("append: %w", &journal.FencedError{Name: "sessions/" + sid, Epoch: 3, Expected: 5, Actual: 6}), "LeaseLostError", "lease_lost", "",
			fault.RemedySeeHolder, f("session", sid, "epoch", uint64(3), "new_epoch", uint64(0), "reason", "")},
		{"fault of a lost lease", &hub.FaultError{Type: event.TypeTurnDone, Err: &journal.JournalLeaseLostError{Name: "sessions/" + sid, Epoch: 3, Cause: lost}},
			"LeaseLostError", "lease_lost", "", fault.RemedySeeHolder, f("session", sid, "epoch", uint64(3), "new_epoch", uint64(4), "reason", "replaced")},
		{"fault of a damaged ledger", &hub.FaultError{Type: event.TypeTurnDone, Err: corrupt}, "PersistenceFaultError", "persistence_fault", "",
			fault.RemedyNone, f("event_type", "TurnDone")},

		// A live session's calls.
		{"busy", fmt.Errorf("submit: %w", &rig.BusyError{TurnID: "t1", Index: 4}), "BusyError", "busy", "", fault.RemedyNone, f("turn_id", "t1", "index", 4)},
		{"no turn", &rig.NoTurnError{}, "NoTurnError", "no_turn", "", fault.RemedyNone, nil},
		{"no terminal", &rig.NoTerminalError{TurnID: "t2"}, "NoTerminalError", "no_terminal", "", fault.RemedyNone, f("turn_id", "t2")},
		{"input timeout", &rig.InputTimeoutError{TurnID: "t3", Written: 4096, Len: 65536}, "InputTimeoutError", "input_timeout", "", fault.RemedyNone,
			f("turn_id", "t3", "written", 4096, "len", 65536)},
		{"no gate", &rig.NoGateError{GateID: "g1", Open: "g2"}, "NoGateError", "no_gate", "", fault.RemedyNone, f("gate_id", "g1", "open", "g2")},
		{"from the turn", fmt.Errorf("gate: %w", &rig.FromTurnError{Session: sid, TurnID: "t1", Request: rig.RequestRespondGate, GateID: "g1",
			Client: event.Client{Kind: "cli", PID: 77}, Reason: event.FromTurnCarries, Via: 70}), "FromTurnError", "from_turn", "", fault.RemedyAnswerAsAPerson,
			f("session", sid, "turn_id", "t1", "request", "respond_gate", "gate_id", "g1", "client", "cli", "pid", 77, "reason", "carries", "via", 70)},
		{"session closed", fmt.Errorf("submit: %w", rig.ErrSessionClosed), "SessionClosedError", "session_closed", "", fault.RemedyRestoreWhenStopped, nil},
		{"timeout", fmt.Errorf("status: %w", context.DeadlineExceeded), "TimeoutError", "timeout", "", fault.RemedyNone, nil},
		{"canceled", fmt.Errorf("status: %w", context.Canceled), "CanceledError", "canceled", "", fault.RemedyNone, nil},
		{"restore that ran out of time", restore(rig.RestoreContextDone, context.DeadlineExceeded), "RestoreError", "context_done", "context_done",
			fault.RemedyRetry, f("session", sid)},

		{"undecodable record", fmt.Errorf("replay: %w", decode), "RecordDecodeError", "broken_journal", "", fault.RemedyInspectJournal,
			f("seq", uint64(9), "reason", "bad event")},
		{"corrupt ledger", corrupt, "CorruptError", "corrupt", "", fault.RemedyInspectJournal,
			f("name", corrupt.Name, "path", corrupt.Path, "offset", int64(120))},
		{"corrupt epoch file", epochFile, "CorruptError", "corrupt", "", fault.RemedyRepairEpochFile,
			f("name", epochFile.Name, "path", epochFile.Path, "offset", int64(-1))},
		{"invalid profile", &rig.InvalidProfileError{Profile: "p", Field: "engine", Reason: "empty"}, "InvalidProfileError", "invalid_profile", "",
			fault.RemedyFixProfile, f("profile", "p", "field", "engine")},
		{"unknown engine", unknownE, "UnknownEngineError", "unknown_engine", "", fault.RemedyDefineEngine,
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
			case x.Type == fault.TypeRestoreError && errors.As(tt.err, &re):
				cause = re.Cause
			case x.Type == fault.TypeRestoreRejectedError && errors.As(tt.err, &rejected):
				cause = rejected.Cause
			}
			if cause != nil {
				if last := fields[len(fields)-1]; last.Name != "cause" || last.Value != cause.Error() {
					t.Fatalf("last field %#v, want the cause %q", last, cause.Error())
				}
				fields = fields[:len(fields)-1]
			}
			// Before it, whether the restore wrote to the journal.
			if re != nil && x.Type == fault.TypeRestoreError {
				if last := fields[len(fields)-1]; last.Name != "journaled" || last.Value != re.Journaled {
					t.Fatalf("field %#v before the cause, want journaled %v", last, re.Journaled)
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
func stageOf(x fault.Explanation) string {
	if x.Type == fault.TypeRestoreError || x.Type == fault.TypeLifecycleError {
		return x.Kind.String()
	}
	return ""
}

// TestStageKinds: a failed restore's kind is its stage, and so is a
// failed creation's, for every stage rig has.
func TestStageKinds(t *testing.T) {
	for _, stage := range rig.RestoreErrorKinds {
		x := explain.Explain(&rig.RestoreError{Kind: stage, Cause: errors.New("x")})
		if x.Type != fault.TypeRestoreError || x.Kind.String() != string(stage) {
			t.Errorf("restore stage %s: %s %s", stage, x.Type, x.Kind)
		}
	}
	for _, stage := range []rig.LifecycleStage{rig.StageValidate, rig.StageMint, rig.StageLease, rig.StageJournal,
		rig.StagePlacement, rig.StageSeed, rig.StageLoop, rig.StageCommit} {
		x := explain.Explain(&rig.LifecycleError{Stage: stage, Cause: errors.New("x")})
		if x.Type != fault.TypeLifecycleError || x.Kind.String() != string(stage) {
			t.Errorf("creation stage %s: %s %s", stage, x.Type, x.Kind)
		}
	}
}

// selfExplained is an error that classifies itself (fault.Explainer).
type selfExplained struct {
	x   fault.Explanation
	err error
}

func (e *selfExplained) Error() string                  { return "self" }
func (e *selfExplained) Unwrap() error                  { return e.err }
func (e *selfExplained) Explanation() fault.Explanation { return e.x }

func TestExplainer(t *testing.T) {
	own := fault.Of(fault.KindHostLost, fault.Field{Name: "pid", Value: 7})
	inner := &rig.BadIDError{Input: "zz"}
	if x := explain.Explain(fmt.Errorf("w: %w", &selfExplained{own, inner})); !reflect.DeepEqual(x, own) {
		t.Errorf("an Explainer's own classification: %+v", x)
	}
	// An Explainer that does not classify itself leaves the chain to Explain.
	if x := explain.Explain(&selfExplained{fault.Of(fault.KindError), inner}); x.Kind != fault.KindBadID {
		t.Errorf("an unclassified Explainer: %+v", x)
	}
}
