package tui

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/google/uuid"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// Golden views, ANSI-stripped, at three sizes. The model is fed fixed fake
// data directly (ids, times and the clock are fixed), so nothing is
// scrubbed after the fact. Update with: go test ./tui -run TestGolden -update

var goldenSizes = [][2]int{{60, 20}, {100, 30}, {160, 45}}

type scenario struct {
	name  string
	setup func(t *testing.T, m Model) Model
}

func goldenScenarios() []scenario {
	crashed := fakeID(4)
	sid := uuid.MustParse(crashed)
	ledger := storage.SessionName(crashed)
	failure := func(err error) func(*testing.T, Model) Model {
		return func(t *testing.T, m Model) Model {
			m = withMixedList(t, m)
			m.list.selectID(crashed, m.listSpace())
			m.send(failedMsg{id: crashed, op: opRestore, err: err})
			return withCrashHistory(m, crashed)
		}
	}
	rerr := func(kind rig.RestoreErrorKind, cause error) error {
		return &rig.RestoreError{Kind: kind, Session: sid, Cause: cause}
	}
	sc := []scenario{
		{"empty_store", func(t *testing.T, m Model) Model { return m.send(listMsg{}) }},
		{"mixed_list", withMixedList},
		{"lease_lost", func(t *testing.T, m Model) Model {
			m = withMixedList(t, m)
			v := m.sessions[fakeID(1)]
			fault := &journal.JournalLeaseLostError{Name: storage.SessionName(v.id), Epoch: 3,
				Cause: &storage.LeaseLostError{Name: storage.SessionName(v.id), Epoch: 3, Reason: storage.LossReplaced, NewEpoch: 4}}
			return m.send(streamMsg{id: v.id, gen: v.live.gen, end: &streamEnd{kind: endFault, err: fault, oldEpoch: 3, newEpoch: 4, holder: "pid 5150@laptop"}})
		}},
		{"drift_table", failure(&rig.RestoreRejectedError{Session: sid, Source: "default",
			Assessment: rig.Assessment{Changes: []event.Change{
				{Field: "engine", Persisted: "shell", Live: "demo", Level: event.LevelWarn},
				{Field: "profile", Persisted: "default", Live: "demo", Level: event.LevelInfo},
			}},
			Cause: errors.New("warn-level configuration drift needs an explicit accept")})},
		{"drift_confirm", func(t *testing.T, m Model) Model {
			m = goldenScenario("drift_table").setup(t, m)
			return m.keys("r")
		}},
		{"config_mismatch", failure(&rig.ConfigMismatchError{Session: sid, Persisted: "9f2c1e7a4b3d5e6f", Live: "0a1b2c3d4e5f6a7b"})},
		{"help", func(t *testing.T, m Model) Model { return withMixedList(t, m).keys("?") }},
		{"forked", func(t *testing.T, m Model) Model {
			// A fork (looprig fork): its detail pane says where it came from.
			m = withMixedList(t, m)
			m.list.selectID(crashed, m.listSpace())
			v := m.sessions[crashed]
			at := fixedNow.Add(-3600e9)
			m.send(journalMsg{id: crashed, gen: v.journal.gen, f: v.journal.f, atTip: true, history: true, envs: []event.Envelope{
				{Seq: 2, At: at, Event: event.SessionStarted{Title: "count to sixty", Rig: "default", Placement: "session",
					ForkedFrom: &event.ForkedFrom{Session: fakeID(2), TurnIndex: 3, TurnID: "t3", Checkpoint: strings.Repeat("ab", 32)}}},
				{Seq: 3, At: at, LoopID: "l", Event: event.LoopStarted{LoopID: "5d2f0c11-0000", Name: "root", Engine: "shell"}},
			}})
			m.send(flashOffMsg{gen: m.status.gen})
			return m
		}},
		{"break_dialog", func(t *testing.T, m Model) Model {
			m = withMixedList(t, m)
			m.list.selectID(fakeID(2), m.listSpace())
			return m.keys("B", "a", "0")
		}},
		{"delete_dialog", func(t *testing.T, m Model) Model {
			m = withMixedList(t, m)
			m.list.selectID(crashed, m.listSpace())
			return m.keys("D", "x")
		}},
		{"help_read_only", func(t *testing.T, m Model) Model {
			return goldenScenario("lease_lost").setup(t, m).keys("?")
		}},
		{"crashed_history", func(t *testing.T, m Model) Model {
			m = withMixedList(t, m)
			m.list.selectID(crashed, m.listSpace())
			return withCrashHistory(m, crashed)
		}},
		{"new_dialog", func(t *testing.T, m Model) Model { return withMixedList(t, m).keys("n") }},
		{"turn_output", withTurnOutput},
		{"attention", func(t *testing.T, m Model) Model {
			m = attentionList(m)
			m.list.selectID(fakeID(6), m.listSpace())
			return m
		}},
		{"needs_filter", func(t *testing.T, m Model) Model {
			m = attentionList(m)
			return m.keys("/").typeKeys(needsFilter).keys("enter")
		}},
		{"turn_input_masked", withMaskedTurnInput},
		{"turn_calls", func(t *testing.T, m Model) Model {
			m = callsList(m)
			m.list.selectID(fakeID(8), m.listSpace())
			return m
		}},
	}
	causes := map[rig.RestoreErrorKind]error{
		rig.RestoreDiscoveryFailed: fmt.Errorf("session %s has no journal in this store", crashed),
		rig.RestoreLeaseFailed:     &storage.LeaseHeldError{Name: ledger, HolderEpoch: 7, Holder: storage.Holder{PID: 5150, Host: "devbox"}},
		rig.RestoreJournalFailed: &journal.FencedError{Name: ledger, Epoch: 5, Expected: 40, Actual: 41,
			Err: &storage.ConflictError{Name: ledger, Expected: 40, Actual: 41}},
		rig.RestoreReplayFailed: fmt.Errorf("journal %q: %w", ledger, &storage.CorruptError{Name: ledger,
			Path: "/home/dev/.local/state/looprig/ledgers/sessions/" + crashed + ".log", Offset: 4096,
			Reason: "bad frame followed by a valid frame"}),
		rig.RestoreTurnRunning: &rig.TurnRunningError{Session: sid, Turn: "c0000004-0000-4000-8000-000000000009",
			Index: 3, Epoch: 1, PGID: 48213, Host: "devbox"},
		rig.RestoreAppendFailed:  &journal.AppendError{Name: ledger, Expected: 41, Count: 1, Err: errors.New("no space left on device")},
		rig.RestoreLoopFailed:    &engine.UnknownEngineError{Name: "python", Known: []string{"demo", "shell"}},
		rig.RestoreRuntimeFailed: errors.New("engine: shell: /bin/sh not found"),
		rig.RestoreMaterializeFailed: fmt.Errorf("session workspace %s is missing (%w); recreate the directory to restore the session with an empty workspace",
			"/home/dev/.local/state/looprig/workspaces/"+crashed, fs.ErrNotExist),
		rig.RestoreContextDone: fmt.Errorf("%w (during replay_failed)", context.DeadlineExceeded),
	}
	for _, k := range rig.RestoreErrorKinds {
		sc = append(sc, scenario{"restore_" + string(k), failure(rerr(k, causes[k]))})
	}
	sc = append(sc, scenario{"restore_root_busy", failure(rerr(rig.RestoreLeaseFailed, &rig.WorkspaceRootBusyError{Root: "/srv/project", HolderEpoch: 9,
		Cause: &storage.LeaseHeldError{Name: "workspace-roots/5f0c", HolderEpoch: 9, Holder: storage.Holder{PID: 4242, Host: "devbox"}}}))})
	sc = append(sc, scenario{"restore_replay_failed_decode", failure(rerr(rig.RestoreReplayFailed,
		&journal.RecordDecodeError{Name: ledger, Seq: 12, Reason: "unknown record kind \"blob\""}))})
	sc = append(sc, scenario{"restore_profile_gone", failure(&rig.ProfileGoneError{Session: crashed, Profile: "gpu",
		Known: []string{"default", "demo"}})})
	return sc
}

func goldenScenario(name string) scenario {
	for _, s := range goldenScenarios() {
		if s.name == name {
			return s
		}
	}
	panic("no scenario " + name)
}

// withMixedList lists one session in every state; the live one is
// attached (a stand-in *host.Client that no command ever reaches: the
// fake model drops commands) with a short history in its events pane.
func withMixedList(t *testing.T, m Model) Model {
	m.send(listMsg{infos: mixedList()})
	id := fakeID(1)
	m.send(attachedMsg{id: id, c: &host.Client{}, pid: 4242, status: host.Status{
		Title: "build the docs", Profile: "default", Engine: "shell", Epoch: 3, Placement: string(rig.PlacementSession),
		Workspace: filepath.Join("/home/dev/.local/state/looprig/workspaces", id), Tip: 10, LastEvent: 10,
	}})
	v := m.sessions[id]
	at := fixedNow.Add(-90e9)
	envs := []event.Envelope{
		{Seq: 2, At: at, Event: event.SessionStarted{Title: "build the docs", Rig: "default", Placement: "session"}},
		{Seq: 3, At: at, LoopID: "l00p", Event: event.LoopStarted{LoopID: "7c1e9a2b-0000", Name: "root", Engine: "shell"}},
		{Seq: 5, At: at, LoopID: "l00p", Event: event.TurnStarted{TurnID: "t0", Index: 0, Input: "make docs"}},
		{Seq: 6, At: at, LoopID: "l00p", Event: event.TurnOutput{TurnID: "t0", Text: "building 12 pages\nwrote site/index.html\n"}},
		{Seq: 7, At: at, LoopID: "l00p", Event: event.TurnDone{TurnID: "t0", ExitCode: 0, Duration: 2300e6}},
		{Seq: 9, At: fixedNow.Add(-30e9), LoopID: "l00p", Event: event.TurnStarted{TurnID: "t1", Index: 1, Input: "rm -rf site"}},
		{Seq: 10, At: fixedNow.Add(-30e9), LoopID: "l00p", Event: event.GateOpened{GateID: "g1", TurnID: "t1", Prompt: "rm -rf site"}},
	}
	m.send(subscribedMsg{id: id, gen: v.live.gen, c: v.live.c, follower: &rig.Follower{}})
	m.send(streamMsg{id: id, gen: v.live.gen, envs: envs})
	m.list.selectID(id, m.listSpace())
	m.send(flashOffMsg{gen: m.status.gen})
	return m
}

// withCrashHistory feeds the journal of a session that crashed while
// counting: its output up to the crash, no end of the turn.
func withCrashHistory(m Model, id string) Model {
	v := m.sessions[id]
	at := fixedNow.Add(-5 * 3600e9)
	envs := []event.Envelope{
		{Seq: 2, At: at, Event: event.SessionStarted{Title: "count to sixty", Rig: "default", Placement: "session"}},
		{Seq: 3, At: at, LoopID: "l", Event: event.LoopStarted{LoopID: "5d2f0c11-0000", Name: "root", Engine: "shell"}},
		{Seq: 5, At: at, LoopID: "l", Event: event.SessionActive{}},
		{Seq: 6, At: at, LoopID: "l", Event: event.TurnStarted{TurnID: "t2", Index: 0, Input: "for i in $(seq 60); do echo $i; sleep 1; done"}},
		{Seq: 7, At: at, LoopID: "l", Event: event.TurnOutput{TurnID: "t2", Text: "1\n2\n3\n4\n5\n6\n7\n"}},
		{Seq: 8, At: at, LoopID: "l", Event: event.TurnOutput{TurnID: "t2", Text: "8\n9\n10\n11\n12\n"}},
	}
	m.send(journalMsg{id: id, gen: v.journal.gen, f: v.journal.f, envs: envs, atTip: true, history: true})
	m.send(flashOffMsg{gen: m.status.gen})
	return m
}

func TestGolden(t *testing.T) {
	for _, sc := range goldenScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			for _, sz := range goldenSizes {
				t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
					m := fakeModel(t, sz[0], sz[1], asciiRenderer())
					m = sc.setup(t, m)
					view := m.View()
					checkFrame(t, view, sz[0], sz[1])
					golden.RequireEqual(t, []byte(ansi.Strip(view)+"\n"))
				})
			}
		})
	}
}

// withMaskedTurnInput: the live session's turn 1 runs and reads a password
// (echo off): i opens the input line to it, and what is typed shows as one
// • per character.
func withMaskedTurnInput(t *testing.T, m Model) Model {
	m = withMixedList(t, m)
	id := fakeID(1)
	v := m.sessions[id]
	at := fixedNow.Add(-10e9)
	m.send(streamMsg{id: id, gen: v.live.gen, envs: []event.Envelope{
		{Seq: 11, At: at, LoopID: "l00p", Event: event.GateResolved{GateID: "g1", Action: event.ActionApprove, Reason: "user"}},
		{Seq: 12, At: at, LoopID: "l00p", Event: event.OutputDelta{TurnID: "t1", Text: "Password: "}},
	}})
	m = m.keys("i")
	m.send(echoMsg{id: id, gen: m.input.turn.gen, status: host.Status{
		Turn: &host.TurnStatus{ID: "t1", Index: 1}, Terminal: true, EchoOff: true}})
	m = m.keys("h", "u", "n", "t", "e", "r", "2")
	if view := m.View(); strings.Contains(view, "hunter2") {
		t.Fatalf("the secret is drawn:\n%s", view)
	}
	m.send(flashOffMsg{gen: m.status.gen})
	return m
}
