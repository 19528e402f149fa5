package rig

import (
	"strings"
	"testing"
	"time"

	"looprig/rig/event"
)

func TestStateFold(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	var st State
	seq := uint64(0)
	apply := func(sec int, ev event.Event) {
		env := event.Envelope{At: at(sec), Event: ev}
		if ev.Class() == event.Enduring {
			seq++
			env.Seq = seq
		}
		st.Apply(env)
	}
	apply(0, event.SessionStarted{Title: "t", Rig: "p", Placement: "session"})
	apply(0, event.LoopStarted{LoopID: "L", Name: "root", Engine: "shell"})
	apply(1, event.TurnStarted{TurnID: "a", Index: 0, Input: "make"})
	apply(2, event.GateOpened{GateID: "g1", TurnID: "a", Prompt: "go?"})
	if tr, g := st.Turn(), st.Gate(); tr == nil || tr.ID != "a" || !tr.Started.Equal(at(1)) || g == nil || g.ID != "g1" || !g.Opened.Equal(at(2)) {
		t.Fatalf("turn %+v gate %+v", tr, g)
	}
	// Resolving another gate leaves this one open.
	apply(3, event.GateResolved{GateID: "other", Action: event.ActionApprove})
	if st.Gate() == nil {
		t.Fatal("a GateResolved of another gate closed the open one")
	}
	copied := st
	apply(4, event.GateResolved{GateID: "g1", Action: event.ActionApprove})
	if st.Gate() != nil || copied.Gate() == nil || copied.Gate().ID != "g1" {
		t.Fatalf("gate after its resolution %+v, in the copy made before %+v", st.Gate(), copied.Gate())
	}
	apply(5, event.GateOpened{GateID: "g2", TurnID: "a", Prompt: "again?"})
	// The turn's end closes its gate (nobody can answer it any more).
	apply(9, event.TurnDone{TurnID: "a", ExitCode: 2, Duration: 8 * time.Second})
	if st.Turn() != nil || st.Gate() != nil {
		t.Fatalf("after the end: turn %+v gate %+v", st.Turn(), st.Gate())
	}
	if e := st.LastEnd; e == nil || e.TurnID != "a" || e.Index != 0 || e.ExitCode != 2 || !e.Failed() || e.Duration() != 8*time.Second {
		t.Fatalf("last end %+v", e)
	}
	// A duplicate (a replay overlapping a live stream) changes nothing.
	st.Apply(event.Envelope{Seq: 3, At: at(10), Event: event.TurnStarted{TurnID: "dup", Index: 7}})
	if st.Turn() != nil || st.Turns != 1 || st.NextIndex != 1 {
		t.Fatalf("a duplicate was folded: %+v", st)
	}
	apply(11, event.TurnStarted{TurnID: "b", Index: 1})
	apply(12, event.SessionFaulted{Cause: "lease lost"})
	if st.Fault != "lease lost" || st.LastSeq != seq {
		t.Fatalf("fault %q, last seq %d", st.Fault, st.LastSeq)
	}
	// A restore closes what the crash left open, then commits.
	apply(20, event.RestoreStarted{Epoch: 2})
	apply(20, event.TurnInterrupted{TurnID: "b", Index: 1, Reason: event.ReasonCrash})
	apply(20, event.RestoreDone{Epoch: 2, Interrupted: []string{"b"}})
	if st.Fault != "" || st.Turn() != nil || st.LastRestore == nil || st.LastRestore.Epoch != 2 {
		t.Fatalf("after restore %+v", st)
	}
	if e := st.LastEnd; e.TurnID != "b" || e.Index != 1 || e.Outcome != TurnOutcomeInterrupted || e.Reason != event.ReasonCrash || !e.Started.Equal(at(11)) {
		t.Fatalf("last end %+v", e)
	}
	// An end of a turn this State never saw start.
	apply(30, event.TurnFailed{TurnID: "unseen", Err: "no\nmore"})
	if e := st.LastEnd; e.Index != -1 || e.Reason != "no" || !e.Started.Equal(at(30)) {
		t.Fatalf("end of an unseen turn %+v", e)
	}
	apply(31, event.TurnStarted{TurnID: "c", Index: 2})
	apply(32, event.SessionStopped{})
	if !st.Stopped || st.Turn() != nil || st.Turns != 3 || st.NextIndex != 3 {
		t.Fatalf("stopped %+v", st)
	}
	if st.Title != "t" || st.Profile != "p" || st.LoopID != "L" || st.Engine != "shell" || !st.LastAt.Equal(at(32)) {
		t.Fatalf("descriptive fields %+v", st)
	}
	apply(40, event.RestoreStarted{Epoch: 3})
	if st.Stopped {
		t.Fatal("a restore did not clear stopped")
	}
}

// Attention is pending from a turn's call for the user until the user
// looks (through its sequence), the turn ends or the session stops; a
// later episode keeps the first one's Since and says its own reason and
// text; looking at an older one leaves a newer one pending.
func TestStateAttention(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	var st State
	seq := uint64(0)
	apply := func(sec int, ev event.Event) uint64 {
		seq++
		st.Apply(event.Envelope{Seq: seq, At: at(sec), Event: ev})
		return seq
	}
	apply(0, event.TurnStarted{TurnID: "a", Index: 0})
	first := apply(1, event.Attention{TurnID: "a", Reason: event.AttentionBell})
	if a := st.Attention; a == nil || a.Reason != event.AttentionBell || a.Seq != first || !a.Since.Equal(at(1)) || a.TurnID != "a" {
		t.Fatalf("after a bell: %+v", a)
	}
	copied := st
	second := apply(9, event.Attention{TurnID: "a", Reason: event.AttentionOSC9, Text: "build done"})
	if a := st.Attention; a.Reason != event.AttentionOSC9 || a.Text != "build done" || a.Seq != second || !a.Since.Equal(at(1)) || !a.At.Equal(at(9)) {
		t.Fatalf("after a second episode: %+v", a)
	}
	if copied.Attention.Reason != event.AttentionBell {
		t.Fatalf("a copy made before changed: %+v", copied.Attention)
	}
	apply(10, event.AttentionSeen{Through: first, From: "tui"})
	if st.Attention == nil {
		t.Fatal("looking at the first episode cleared the second, which came after")
	}
	apply(11, event.AttentionSeen{Through: second, From: "cli"})
	if st.Attention != nil {
		t.Fatalf("looked at, still pending: %+v", st.Attention)
	}
	third := apply(12, event.Attention{TurnID: "a", Reason: event.AttentionOSC777, Text: "t: b"})
	if a := st.Attention; a == nil || !a.Since.Equal(at(12)) || a.Seq != third {
		t.Fatalf("a new episode after a look: %+v", a)
	}
	apply(13, event.TurnDone{TurnID: "other"})
	if st.Attention == nil {
		t.Fatal("the end of another turn cleared it")
	}
	apply(14, event.TurnDone{TurnID: "a"})
	if st.Attention != nil {
		t.Fatalf("the end of its turn left it: %+v", st.Attention)
	}
	apply(15, event.TurnStarted{TurnID: "b", Index: 1})
	apply(16, event.Attention{TurnID: "b", Reason: event.AttentionBell})
	apply(17, event.SessionStopped{})
	if st.Attention != nil {
		t.Fatalf("a stopped session asks for the user: %+v", st.Attention)
	}
}

// The workspace pointer is the latest checkpoint; a skipped one after it
// is kept beside it until the next checkpoint; a restore, a stop and a
// turn's end leave the pointer as it is.
func TestStateCheckpoint(t *testing.T) {
	var st State
	seq := uint64(0)
	apply := func(ev event.Event) uint64 {
		seq++
		st.Apply(event.Envelope{Seq: seq, At: time.Unix(int64(seq), 0), Event: ev})
		return seq
	}
	if st.Checkpoint != nil || st.CheckpointSkipped != nil {
		t.Fatalf("a new State has a checkpoint: %+v", st)
	}
	m1, m2 := strings.Repeat("1", 64), strings.Repeat("2", 64)
	apply(event.TurnStarted{TurnID: "a"})
	apply(event.TurnDone{TurnID: "a"})
	first := apply(event.WorkspaceCheckpointed{Manifest: m1, Files: 3, Bytes: 10, TurnID: "a", Trigger: event.TriggerTurn})
	if c := st.Checkpoint; c == nil || c.Manifest != m1 || c.Seq != first || c.Files != 3 || !c.At.Equal(time.Unix(int64(first), 0)) {
		t.Fatalf("after a checkpoint: %+v", c)
	}
	apply(event.WorkspaceCheckpointSkipped{TurnID: "b", Trigger: event.TriggerTurn, Reason: "too big", Bytes: 5, Limit: 4})
	if st.Checkpoint == nil || st.Checkpoint.Manifest != m1 || st.CheckpointSkipped == nil || st.CheckpointSkipped.Reason != "too big" {
		t.Fatalf("after a skip: %+v, %+v", st.Checkpoint, st.CheckpointSkipped)
	}
	apply(event.SessionStopped{})
	apply(event.RestoreStarted{Epoch: 2})
	apply(event.RestoreDone{Epoch: 2})
	if st.Checkpoint == nil || st.Checkpoint.Manifest != m1 {
		t.Fatalf("a stop and a restore moved the pointer: %+v", st.Checkpoint)
	}
	apply(event.WorkspaceCheckpointed{Manifest: m2, Trigger: event.TriggerStop})
	if st.Checkpoint.Manifest != m2 || st.CheckpointSkipped != nil {
		t.Fatalf("after the next checkpoint: %+v, %+v", st.Checkpoint, st.CheckpointSkipped)
	}
}

// A session is idle only once SessionIdle follows a turn's end: between
// them it checkpoints the workspace (Finishing). A restore, a stop, and a
// turn whose holder died or lost the lease (nobody journals SessionIdle
// then) end its activity.
func TestStateActivity(t *testing.T) {
	var st State
	seq := uint64(0)
	apply := func(ev event.Event) {
		seq++
		st.Apply(event.Envelope{Seq: seq, Event: ev})
	}
	check := func(when string, idle, finishing bool) {
		t.Helper()
		if st.Idle() != idle || st.Finishing() != finishing {
			t.Errorf("%s: idle %v finishing %v, want %v %v", when, st.Idle(), st.Finishing(), idle, finishing)
		}
	}
	check("new", true, false)
	apply(event.SessionActive{})
	apply(event.TurnStarted{TurnID: "a", Index: 0})
	check("running", false, false)
	apply(event.TurnDone{TurnID: "a"})
	check("ended, checkpointing", false, true)
	apply(event.WorkspaceCheckpointed{TurnID: "a", Trigger: event.TriggerTurn})
	check("checkpointed", false, true)
	apply(event.SessionIdle{})
	check("idle", true, false)
	for _, end := range []struct {
		name string
		ev   []event.Event
	}{
		{"restore", []event.Event{event.TurnDone{TurnID: "b"}, event.RestoreStarted{Epoch: 2}}}, // its holder died checkpointing
		{"stop", []event.Event{event.SessionStopped{}}},
		{"crash", []event.Event{event.TurnInterrupted{TurnID: "b", Reason: event.ReasonCrash}}},
		{"lease lost", []event.Event{event.TurnInterrupted{TurnID: "b", Reason: event.ReasonLeaseLost}}},
	} {
		apply(event.SessionActive{})
		apply(event.TurnStarted{TurnID: "b", Index: 1})
		for _, ev := range end.ev {
			apply(ev)
		}
		check("after a "+end.name, true, false)
	}
}

func TestCheckpointProgressWords(t *testing.T) {
	for _, c := range []struct {
		p          CheckpointProgress
		done, what string
	}{
		{CheckpointProgress{Trigger: event.TriggerTurn}, "", "the last turn"},
		{CheckpointProgress{Trigger: event.TriggerTurn, Files: 10000, FilesDone: 7421}, "7,421 of 10,000 files", "the last turn"},
		{CheckpointProgress{Trigger: event.TriggerStop, Files: 1234567, FilesDone: 999}, "999 of 1,234,567 files", "the shutdown"},
		{CheckpointProgress{Trigger: event.TriggerHandoff, Files: 1, FilesDone: 1}, "1 of 1 files", "the handover"},
		{CheckpointProgress{Trigger: event.TriggerRestore, Files: 2, FilesDone: 1}, "1 of 2 files", "the workspace kept"},
	} {
		if got := c.p.Done(); got != c.done {
			t.Errorf("%+v.Done() = %q, want %q", c.p, got, c.done)
		}
		if got := c.p.For(); got != c.what {
			t.Errorf("%+v.For() = %q, want %q", c.p, got, c.what)
		}
	}
}

// With KeepEnds a State keeps how every turn ended (End finds any);
// without, only the last; a copy keeps the ends it had.
func TestStateKeepsEnds(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	events := []event.Event{
		event.TurnStarted{TurnID: "a", Index: 0}, event.TurnDone{TurnID: "a", ExitCode: 3},
		event.TurnStarted{TurnID: "b", Index: 1}, event.TurnFailed{TurnID: "b", Err: "no"},
	}
	kept, last := State{KeepEnds: true}, State{}
	var copied State
	for i, ev := range events {
		env := event.Envelope{Seq: uint64(i + 1), At: t0.Add(time.Duration(i) * time.Second), Event: ev}
		kept.Apply(env)
		last.Apply(env)
		if i == 1 {
			copied = kept
		}
	}
	if e := kept.End("a"); e == nil || e.ExitCode != 3 || e.Index != 0 || !e.Started.Equal(t0) {
		t.Errorf("End(a) = %+v, want exit 3 of turn 0 started at %v", e, t0)
	}
	if e := kept.End("b"); e == nil || e.Outcome != TurnOutcomeFailed || e.Index != 1 {
		t.Errorf("End(b) = %+v, want turn 1 failed", e)
	}
	if e := last.End("a"); e != nil || last.Ends != nil {
		t.Errorf("without KeepEnds: End(a) = %+v, Ends %+v; want nil", e, last.Ends)
	}
	if e := last.End("b"); e == nil || e.TurnID != "b" {
		t.Errorf("without KeepEnds: End(b) = %+v, want the last end", e)
	}
	if copied.End("a") == nil || copied.End("b") != nil {
		t.Errorf("a copy made after a's end: End(a) = %+v, End(b) = %+v", copied.End("a"), copied.End("b"))
	}
	if kept.End("c") != nil {
		t.Error("End of a turn that never ran is not nil")
	}
}
