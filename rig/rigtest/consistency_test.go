package rigtest

import (
	"strings"
	"testing"

	"looprig/rig/event"
	"looprig/rig/journal"
)

const testLoop = "loop-1"

func fenceRec(epoch uint64) journal.Record {
	return journal.Record{Kind: journal.KindFence, Epoch: epoch}
}

func evRec(ev event.Event) journal.Record {
	r := journal.Record{Kind: journal.KindEvent, Event: ev}
	if ev.Scope() == event.LoopScope {
		r.LoopID = testLoop
	}
	return r
}

func cmdRec(c journal.Command) journal.Record {
	return journal.Record{Kind: journal.KindCommand, Command: &c}
}

// numbered gives recs their sequences, 1, 2, …
func numbered(recs ...journal.Record) []journal.Record {
	out := make([]journal.Record, len(recs))
	for i, r := range recs {
		r.Seq = uint64(i + 1)
		out[i] = r
	}
	return out
}

// goodJournal is a journal looprig could write: a session created, a turn
// with output, a gate and an input, a stop; a restore and a turn that
// crashed; a restore that failed and re-fenced to record it; a restore
// that closed the crashed turn; a break that closed a turn of a lost
// lease.
func goodJournal() []journal.Record {
	return numbered(
		fenceRec(1), // 1
		evRec(event.SessionStarted{Rig: "default"}),
		evRec(event.LoopStarted{LoopID: testLoop, Name: "root", Engine: "shell"}),
		cmdRec(journal.Command{Name: journal.CommandSubmit, LoopID: testLoop, Input: "x"}),
		evRec(event.SessionActive{}), // 5
		evRec(event.TurnStarted{TurnID: "t1", Input: "x"}),
		evRec(event.TurnOutput{TurnID: "t1", Offset: 0, Text: "ab"}),
		evRec(event.GateOpened{GateID: "g1", TurnID: "t1"}),
		evRec(event.GateResolved{GateID: "g1", Action: event.ActionApprove}),
		cmdRec(journal.Command{Name: journal.CommandInput, TurnID: "t1", Bytes: 2}), // 10
		cmdRec(journal.Command{Name: journal.CommandInputWritten, TurnID: "t1", InputSeq: 10, Bytes: 2, Input: "y\n"}),
		evRec(event.TurnOutput{TurnID: "t1", Offset: 2, Text: "cd"}),
		evRec(event.TurnDone{TurnID: "t1"}),
		evRec(event.SessionIdle{}),
		evRec(event.AttentionSeen{Through: 13}), // 15
		cmdRec(journal.Command{Name: journal.CommandShutdown}),
		evRec(event.SessionStopped{}),
		fenceRec(2),
		evRec(event.RestoreStarted{Epoch: 2}),
		evRec(event.RestoreDone{Epoch: 2}), // 20
		evRec(event.TurnStarted{TurnID: "t2", Index: 1}),
		evRec(event.GateOpened{GateID: "g2", TurnID: "t2"}),
		fenceRec(4), // a crash, then a restore that fails and re-fences
		evRec(event.RestoreStarted{Epoch: 4}),
		fenceRec(4), // 25
		evRec(event.RestoreErrored{Kind: "append_failed"}),
		fenceRec(5),
		evRec(event.RestoreStarted{Epoch: 5}),
		evRec(event.GateResolved{GateID: "g2", Action: event.ActionClose, Reason: "restore_unavailable"}),
		evRec(event.TurnInterrupted{TurnID: "t2", Reason: event.ReasonCrash}), // 30
		evRec(event.RestoreDone{Epoch: 5, Interrupted: []string{"t2"}, GatesClosed: []string{"g2"}}),
		evRec(event.TurnStarted{TurnID: "t3", Index: 2}),
		fenceRec(6), // a break
		evRec(event.TurnInterrupted{TurnID: "t3", Reason: event.ReasonLeaseLost}),
	)
}

func TestCheckRecordsAcceptsAGoodJournal(t *testing.T) {
	if err := CheckRecords(goodJournal()); err != nil {
		t.Fatalf("a good journal: %v", err)
	}
	if err := CheckRecords(nil); err != nil {
		t.Fatalf("an empty journal: %v", err)
	}
}

// Each invariant fails when broken once: each case changes the good
// journal in one place and wants the violation of that rule, at that
// record.
func TestCheckRecordsFindsEachViolation(t *testing.T) {
	// set replaces record seq (1-based) of the good journal.
	set := func(seq int, r journal.Record) func([]journal.Record) []journal.Record {
		return func(recs []journal.Record) []journal.Record {
			r.Seq = uint64(seq)
			recs[seq-1] = r
			return recs
		}
	}
	// insert puts r before record seq and numbers the journal again.
	insert := func(seq int, r journal.Record) func([]journal.Record) []journal.Record {
		return func(recs []journal.Record) []journal.Record {
			out := append(append(append([]journal.Record{}, recs[:seq-1]...), r), recs[seq-1:]...)
			return numbered(out...)
		}
	}
	for _, c := range []struct {
		name   string
		change func([]journal.Record) []journal.Record
		want   string
	}{
		{"seq gap", func(recs []journal.Record) []journal.Record { recs[4].Seq = 6; return recs }, "seq: record 6"},
		{"no fence first", func(recs []journal.Record) []journal.Record { return numbered(recs[1:]...) }, "first-fence: record 1"},
		{"fence epoch lower", set(23, fenceRec(1)), "fence: record 23: epoch 1 after epoch 2"},
		{"fence epoch equal, then not RestoreErrored", set(27, fenceRec(4)), "fence: record 27: epoch 4 after epoch 4"},
		{"SessionStarted twice", insert(4, evRec(event.SessionStarted{})), "start: record 4"},
		{"LoopStarted not after SessionStarted", insert(3, evRec(event.SessionIdle{})), "start: record 4"},
		{"loop event of another loop", set(7, journal.Record{Kind: journal.KindEvent, LoopID: "other", Event: event.TurnOutput{TurnID: "t1", Text: "ab"}}), "start: record 7"},
		{"turn started twice", insert(21, evRec(event.TurnStarted{TurnID: "t1"})), "turn: record 21: turn \"t1\" started twice"},
		{"two open turns", insert(22, evRec(event.TurnStarted{TurnID: "t9"})), "turn: record 22: turn \"t9\" started while turn \"t2\" is open"},
		{"turn ended twice", insert(14, evRec(event.TurnFailed{TurnID: "t1"})), "turn: record 14: turn \"t1\" ended twice"},
		{"end of a turn never started", insert(14, evRec(event.TurnInterrupted{TurnID: "t8"})), "turn: record 14"},
		{"TurnDone in a later tenure", set(30, evRec(event.TurnDone{TurnID: "t2"})), "turn: record 30"},
		{"turn in a tenure not live", insert(20, evRec(event.TurnStarted{TurnID: "t9"})), "live: record 20"},
		{"turn after HandedOff", insert(21, evRec(event.HandedOff{To: "1@h"})), "live: record 22"},
		{"gate resolved, never opened", set(9, evRec(event.GateResolved{GateID: "g7"})), "gate: record 9"},
		{"gate resolved twice", insert(10, evRec(event.GateResolved{GateID: "g1"})), "gate: record 10: gate \"g1\" resolved twice"},
		{"gate opened twice", insert(23, evRec(event.GateOpened{GateID: "g2", TurnID: "t2"})), "gate: record 23: gate \"g2\" opened twice"},
		{"gate of a turn not open", insert(15, evRec(event.GateOpened{GateID: "g9", TurnID: "t1"})), "gate: record 15"},
		{"turn ends with its gate open", set(9, evRec(event.SessionIdle{})), "gate: record 13: turn \"t1\" ends with gate \"g1\" open"},
		{"output gap", set(12, evRec(event.TurnOutput{TurnID: "t1", Offset: 3, Text: "cd"})), "output: record 12"},
		{"output after the end", insert(14, evRec(event.TurnOutput{TurnID: "t1", Offset: 4, Text: "e"})), "output: record 14"},
		{"RestoreStarted at another epoch", set(19, evRec(event.RestoreStarted{Epoch: 1})), "restore: record 19"},
		{"RestoreDone without RestoreStarted", set(19, evRec(event.SessionIdle{})), "restore: record 20"},
		{"RestoreDone at another epoch", set(20, evRec(event.RestoreDone{Epoch: 3})), "restore: record 20"},
		{"RestoreDone with a turn open", set(30, evRec(event.SessionIdle{})), "restore: record 31: RestoreDone with turn \"t2\" open"},
		{"RestoreErrored in a live tenure", insert(21, evRec(event.RestoreErrored{Kind: "x"})), "restore: record 21"},
		{"a record after SessionStopped", insert(18, evRec(event.SessionIdle{})), "stopped: record 18"},
		{"stopped with a turn open", set(13, evRec(event.SessionIdle{})), "stopped: record 17: SessionStopped with turn \"t1\" open"},
		{"input_written of no input", set(11, cmdRec(journal.Command{Name: journal.CommandInputWritten, TurnID: "t1", InputSeq: 9})), "input: record 11"},
		{"input_written of another turn's input", set(11, cmdRec(journal.Command{Name: journal.CommandInputWritten, TurnID: "t2", InputSeq: 10})), "input: record 11"},
		{"input_written twice", insert(12, cmdRec(journal.Command{Name: journal.CommandInputWritten, TurnID: "t1", InputSeq: 10})), "input: record 12"},
		{"input for a turn never started", set(10, cmdRec(journal.Command{Name: journal.CommandInput, TurnID: "t7"})), "input: record 10"},
		{"AttentionSeen past itself", set(15, evRec(event.AttentionSeen{Through: 15})), "seen: record 15"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckRecords(c.change(goodJournal()))
			if err == nil {
				t.Fatalf("no violation found, want %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("violations:\n%v\nwant one containing %q", err, c.want)
			}
		})
	}
}
