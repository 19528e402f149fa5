package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
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

// wireSamples are errors of every kind a host classifies with
// rig/explain (Describe), with the causes that change a kind's remedy or
// fields.
func wireSamples() []error {
	id := uuid.MustParse("0b9e3a4e-1111-4222-8333-444455556666")
	sid := id.String()
	holder := storage.Holder{PID: 42, Host: "box"}
	held := &storage.LeaseHeldError{Name: storage.SessionName(sid), HolderEpoch: 7, Holder: holder}
	rootHeld := &storage.LeaseHeldError{Name: storage.RootLeaseName("ab12"), HolderEpoch: 5, Holder: holder}
	busyRoot := &rig.WorkspaceRootBusyError{Root: "/r", HolderEpoch: 5, Cause: rootHeld}
	decode := &journal.RecordDecodeError{Name: storage.SessionName(sid), Seq: 9, Reason: "bad event"}
	corrupt := &storage.CorruptError{Name: storage.SessionName(sid), Path: "/s/ledgers/x.log", Offset: 120, Reason: "bad frame"}
	epochFile := &storage.CorruptError{Name: storage.SessionName(sid), Path: "/s/leases/x.epoch", Offset: -1, Reason: "not JSON"}
	unknownE := &engine.UnknownEngineError{Name: "gpt", Known: []string{"demo", "shell"}}
	lost := &storage.LeaseLostError{Name: storage.SessionName(sid), Epoch: 3, Reason: storage.LossReplaced, NewEpoch: 4}
	journalLost := &journal.JournalLeaseLostError{Name: storage.SessionName(sid), Epoch: 3, Cause: lost}

	out := []error{
		errors.New("boom"),
		&rig.BadIDError{Input: "zz"},
		&rig.AmbiguousIDError{Input: "abcd", Matches: []string{"abcd1", "abcd2"}},
		&rig.UnknownSessionError{Input: "abcd"},
		&rig.ProfileGoneError{Session: sid, Profile: "w", Known: []string{"default"}},
		&rig.UnsafeRootError{Profile: "p", Placement: rig.PlacementShared, Root: "/home/u", RootGiven: "~", Reason: rig.UnsafeRootHome},
		&rig.PersistenceOverlapError{Profile: "p", Placement: rig.PlacementExclusive, Relation: rig.OverlapSame,
			Root: "/x", Store: "/x", RootGiven: "x", StoreGiven: "/x"},
		&rig.RestoreRejectedError{Session: id, Source: "default", Assessment: rig.Assessment{Changes: []event.Change{
			{Field: "engine", Persisted: "shell", Live: "demo", Level: "warn"}}}},
		&rig.ConfigMismatchError{Session: id, Persisted: "aa", Live: "bb"},
		&rig.InvalidProfileError{Profile: "p", Field: "engine", Reason: "empty"},
		unknownE,
		&rig.RestoreError{Kind: rig.RestoreLeaseFailed, Session: id, Cause: busyRoot},
		&rig.RestoreError{Kind: rig.RestoreLeaseFailed, Session: id, Cause: fmt.Errorf("acquire: %w", held)},
		&rig.RestoreError{Kind: rig.RestoreLeaseFailed, Session: id, Cause: epochFile},
		&rig.RestoreError{Kind: rig.RestoreReplayFailed, Session: id, Cause: corrupt},
		&rig.RestoreError{Kind: rig.RestoreReplayFailed, Session: id, Cause: decode},
		&rig.RestoreError{Kind: rig.RestoreLoopFailed, Session: id, Cause: unknownE},
		&rig.RestoreError{Kind: rig.RestoreDiscoveryFailed, Cause: &rig.UnknownSessionError{Input: "abcd"}},
		&rig.LifecycleError{Stage: rig.StagePlacement, Cause: busyRoot},
		&rig.LifecycleError{Stage: rig.StageSeed, Cause: &rig.SeedError{Path: "/seed/x", Reason: "symlink"}},
		&rig.LifecycleError{Stage: rig.StageValidate, Cause: &rig.InvalidProfileError{Profile: "p", Field: "root", Reason: "relative"}},
		&rig.LifecycleError{Stage: rig.StageLoop, Cause: unknownE},
		fmt.Errorf("delete: %w", held),
		rootHeld,
		journalLost,
		&rig.WorkspaceRootLeaseLostError{Root: "/r", Epoch: 2, Cause: &storage.LeaseLostError{Name: "workspace-roots/ab", Epoch: 2, Reason: storage.LossEpochAdvanced}},
		lost,
		&journal.FencedError{Name: storage.SessionName(sid), Epoch: 3, Expected: 5, Actual: 6},
		&hub.FaultError{Type: event.TypeTurnDone, Err: journalLost},
		&hub.FaultError{Type: event.TypeTurnDone, Err: corrupt},
		fmt.Errorf("replay: %w", decode),
		corrupt,
		epochFile,
		&rig.NotCrashedError{Session: id},
		&rig.HandOffWithoutWorkspaceError{Session: id.String(), Profile: "work", Placement: rig.PlacementExclusive},
		&rig.BusyError{TurnID: "t1", Index: 4},
		&rig.BusyError{Index: -1, Reverting: true},
		&rig.NoCheckpointBeforeError{Session: "s", Index: 2, Reason: "no checkpoint preceded it"},
		&rig.NoTurnError{},
		&rig.ForkError{Session: sid, Turn: "3", Index: 3, Reason: "there is no checkpoint of its workspace after that turn"},
		&rig.NoTerminalError{TurnID: "t2"},
		&rig.InputTimeoutError{TurnID: "t3", Written: 4096, Len: 65536},
		&rig.NoGateError{GateID: "g1", Open: "g2"},
		&rig.FromTurnError{Session: id.String(), TurnID: "t1", Request: rig.RequestRespondGate, GateID: "g1",
			Client: event.Client{Kind: "cli", PID: 77}, Reason: event.FromTurnCarries, Via: 70},
		fmt.Errorf("submit: %w", rig.ErrSessionClosed),
		&rig.EngineUnresponsiveError{Session: id, Turn: "t1", Index: 2, Waited: 1500 * time.Millisecond},
		fmt.Errorf("status: %w", context.DeadlineExceeded),
		fmt.Errorf("status: %w", context.Canceled),
		&SocketPathTooLongError{Path: "/long/x.sock", Len: 120, Max: 104},
		&rig.HandOffTimeoutError{Session: sid, Holder: holder, Waited: 2 * time.Minute},
		&HostUnresponsiveError{Session: sid, PID: 42, Request: "shutdown", Waited: 9 * time.Second},
		&UnsafeSocketDirError{Path: "/run/user/1000/looprig", Reason: "mode 0770, not 0700", Fix: "run: chmod 700 /run/user/1000/looprig"},
		&SocketDirError{Path: "/tmp/looprig-1000", Err: errors.New("permission denied")},
	}
	for _, stage := range rig.RestoreErrorKinds {
		out = append(out, &rig.RestoreError{Kind: stage, Session: id, Cause: errors.New("cause")})
	}
	for _, stage := range []rig.LifecycleStage{rig.StageValidate, rig.StageMint, rig.StageLease, rig.StageJournal,
		rig.StagePlacement, rig.StageSeed, rig.StageLoop, rig.StageCommit} {
		out = append(out, &rig.LifecycleError{Stage: stage, Cause: errors.New("cause")})
	}
	return out
}

// overTheWire is err as a client of a host gets it: Describe, JSON, and
// back into a *RemoteError, wrapped by the client.
func overTheWire(t *testing.T, d *RemoteError) (wire []byte, remote error) {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back RemoteError
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return b, fmt.Errorf("client: %w", &back)
}

// fieldsJSON is x's fields by name, each value as JSON: what a host can
// carry of it.
func fieldsJSON(t *testing.T, x fault.Explanation) map[string]string {
	t.Helper()
	m := make(map[string]string, len(x.Fields))
	for _, f := range x.Fields {
		if _, dup := m[f.Name]; dup {
			t.Errorf("%s: field %s twice", x.Kind, f.Name)
		}
		b, err := json.Marshal(f.Value)
		if err != nil {
			t.Fatal(err)
		}
		m[f.Name] = string(b)
	}
	return m
}

// TestExplanationSurvivesTheWire: a client classifies a host's failure
// exactly as it would its own: for every kind a host reports, the same
// type, kind (a staged operation's stage), remedy and fields, in the
// types fault.Field documents; the wire keeps protocol version 1's
// shape ("stage" for a restore, no "remedy" where the kind implies it).
func TestExplanationSurvivesTheWire(t *testing.T) {
	reported := map[fault.Kind]bool{}
	for _, sample := range wireSamples() {
		local := explain.Explain(sample)
		reported[local.Kind] = true
		wire, remoteErr := overTheWire(t, Describe(sample))
		remote := explain.Explain(remoteErr)
		name := fmt.Sprintf("%s (%v)", local.Kind, sample)
		if remote.Type != local.Type || remote.Kind != local.Kind || remote.Remedy != local.Remedy {
			t.Errorf("%s: over the wire {%s %s %s}, want {%s %s %s}\n%s", name,
				remote.Type, remote.Kind, remote.Remedy, local.Type, local.Kind, local.Remedy, wire)
		}
		got, want := fieldsJSON(t, remote), fieldsJSON(t, local)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: fields over the wire %v, want %v\n%s", name, got, want, wire)
		}
		if !sort.SliceIsSorted(remote.Fields, func(i, j int) bool { return remote.Fields[i].Name < remote.Fields[j].Name }) {
			t.Errorf("%s: fields not in name order: %v", name, remote.Fields)
		}
		for _, f := range remote.Fields {
			switch v := f.Value.(type) {
			case json.Number, map[string]any, []any:
				t.Errorf("%s: field %s decoded as %T, not the type fault.Field documents", name, f.Name, v)
			}
		}

		var keys map[string]json.RawMessage
		if err := json.Unmarshal(wire, &keys); err != nil {
			t.Fatal(err)
		}
		if stage, ok := keys["stage"]; (local.Type == fault.TypeRestoreError || local.Type == fault.TypeLifecycleError) !=
			(ok && string(stage) == `"`+local.Kind.String()+`"`) {
			t.Errorf("%s: wire stage %s", name, stage)
		}
		if _, ok := keys["remedy"]; ok != (local.Classified() && !remedyImplied(local)) {
			t.Errorf("%s: wire has remedy %v, implied %v", name, ok, remedyImplied(local))
		}
		if _, ok := keys["hint"]; ok {
			t.Errorf("%s: the host words a remedy: %s", name, wire)
		}
	}

	// The protocol's own errors, which the host makes without explain.
	protocol := []fault.Kind{KindBadRequest, KindUnknownType, KindLineTooLong, KindProtocolMismatch, KindPeerRefused, KindEventTooLarge, KindTooManyClients}
	for _, k := range protocol {
		reported[k] = true
		wire, remoteErr := overTheWire(t, protoErr(k, "refused", map[string]any{"max": MaxLine}))
		x := explain.Explain(remoteErr)
		if want := fault.Of(k, fault.Field{Name: "max", Value: int64(MaxLine)}); fmt.Sprint(x) != fmt.Sprint(want) {
			t.Errorf("%s over the wire: %+v, want %+v\n%s", k, x, want, wire)
		}
	}

	for _, k := range fault.Kinds() {
		if k != fault.KindHostLost && !reported[k] { // host_lost is the CLI's: a host cannot report its own loss
			t.Errorf("no sample of kind %s: add one to wireSamples", k)
		}
	}
}

// A kind this client does not know (a newer host's) is unclassified, its
// message kept.
func TestUnknownWireKind(t *testing.T) {
	var re RemoteError
	if err := json.Unmarshal([]byte(`{"type":"NewError","kind":"new_kind","message":"m","remedy":"new_remedy","x":1}`), &re); err != nil {
		t.Fatal(err)
	}
	if x := explain.Explain(&re); x.Classified() || re.Error() != "m" {
		t.Fatalf("unknown kind: %+v, %q", x, re.Error())
	}
}
