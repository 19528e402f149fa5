package rig

import (
	"encoding/json"
	"testing"
	"time"

	"looprig/rig/event"
	"looprig/rig/journal"
)

// recordOf gives a presenter each kind of record with its fields, and a
// command whose JSON is the journal's, byte for byte.
func TestRecordOf(t *testing.T) {
	at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	f := recordOf("s", journal.Record{Seq: 1, Kind: journal.KindFence, At: at, Epoch: 4})
	if f.Kind != RecordFence || f.Epoch != 4 || f.At != at || f.Event.Event != nil || f.Command != nil {
		t.Errorf("fence = %+v", f)
	}
	ev := event.TurnDone{TurnID: "t", ExitCode: 2}
	e := recordOf("s", journal.Record{Seq: 2, Kind: journal.KindEvent, At: at, LoopID: "L", Event: ev})
	want := event.Envelope{Seq: 2, Session: "s", LoopID: "L", At: at, Event: ev}
	if e.Kind != RecordEvent || e.Event != want {
		t.Errorf("event = %+v, want its envelope %+v", e, want)
	}
	jc := journal.Command{Name: journal.CommandInputWritten, LoopID: "L", TurnID: "t", GateID: "g", Input: "x", Action: "a",
		Hidden: true, Bytes: 3, EOF: true, From: "cli", InputSeq: 9, Reason: journal.InputTimedOut}
	c := recordOf("s", journal.Record{Seq: 3, Kind: journal.KindCommand, At: at, Command: &jc})
	if c.Kind != RecordCommand || c.Command == nil {
		t.Fatalf("command = %+v", c)
	}
	got, _ := json.Marshal(c.Command)
	wantJSON, _ := json.Marshal(jc)
	if string(got) != string(wantJSON) {
		t.Errorf("command JSON = %s, want the journal's %s", got, wantJSON)
	}
}
