package explain_test

import (
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
			if x.Type != tt.typ || x.Kind != tt.kind || x.Stage != tt.stage || x.Remedy != tt.remedy {
				t.Fatalf("Explain = {Type %q, Kind %q, Stage %q, Remedy %v}, want {%q, %q, %q, %v}",
					x.Type, x.Kind, x.Stage, x.Remedy, tt.typ, tt.kind, tt.stage, tt.remedy)
			}
			if len(x.Fields) != len(tt.fields) || (len(tt.fields) > 0 && !reflect.DeepEqual(x.Fields, tt.fields)) {
				t.Fatalf("Fields = %#v\nwant %#v", x.Fields, tt.fields)
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

func TestRemedyNames(t *testing.T) {
	seen := map[string]explain.Remedy{}
	for r := explain.RemedyNone; r <= explain.RemedyRestoreIt; r++ {
		name := r.String()
		if name == "" || name != strings.ToLower(name) || strings.ContainsAny(name, "- ()") {
			t.Errorf("Remedy %d has name %q, want snake_case", int(r), name)
		}
		if other, dup := seen[name]; dup {
			t.Errorf("Remedies %d and %d are both %q", int(other), int(r), name)
		}
		seen[name] = r
	}
	if got := explain.Remedy(999).String(); got != "remedy(999)" {
		t.Errorf("an unknown remedy is %q", got)
	}
}
