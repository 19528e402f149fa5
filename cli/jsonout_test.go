package cli

import (
	"bytes"
	"flag"
	"os"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/event"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// jsonHard are strings that need every kind of care a JSON string
// encoder takes (invalid UTF-8 included).
var jsonHard = []string{"plain", "\x00\x1f\x7f \t\n", `q " b \ `, "<a>&amp;", "é 😀 \u2028\u2029", "bad \xff \xed\xa0\x80", "\uFFFD", `\ufffd`}

// jsonEvents has an event of every registered type, some with hard
// strings, and one of each with each hard string in a string field.
func jsonEvents() []event.Event {
	evs := []event.Event{
		event.SessionStarted{Title: "t", Rig: "default", Fingerprint: "ab", Manifest: map[string]string{"engine": "shell"}, Placement: "session", Root: "/r"},
		event.SessionActive{}, event.SessionIdle{}, event.SessionStopped{},
		event.RestoreStarted{Epoch: 7},
		event.RestoreDone{Epoch: 7, Interrupted: []string{"t1"}, GatesClosed: []string{}},
		event.RestoreErrored{Kind: "replay_failed", Message: "m"},
		event.ConfigurationAdopted{Changes: []event.Change{{Field: "engine", Persisted: "a", Live: "b", Level: event.LevelWarn}}, Source: "flag"},
		event.SessionFaulted{Cause: "c"},
		event.LoopStarted{LoopID: "L", Name: "root", Engine: "shell"},
		event.TurnStarted{TurnID: "t1", Index: 3, Input: "ls"},
		event.TurnOutput{TurnID: "t1", Text: "out\n", Elided: 2},
		event.OutputDelta{TurnID: "t1", Stream: event.StreamStdout, Text: "d"},
		event.TurnDone{TurnID: "t1", ExitCode: 2, Duration: 1500 * time.Millisecond},
		event.TurnFailed{TurnID: "t1", Err: "e"},
		event.TurnInterrupted{TurnID: "t1", Index: 3, Reason: event.ReasonUser},
		event.GateOpened{GateID: "g", TurnID: "t1", Prompt: "p"},
		event.GateResolved{GateID: "g", Action: event.ActionDeny, Reason: "user"},
	}
	for _, s := range jsonHard {
		evs = append(evs, event.TurnOutput{TurnID: s, Text: s}, event.SessionStarted{Title: s, Manifest: map[string]string{s: s}},
			event.RestoreErrored{Kind: s, Message: s}, event.LoopStarted{LoopID: s, Name: s})
	}
	return evs
}

// The lines of run --json (envelopeJSON), log --json (recordJSON) and
// of a JSON error (obj): testdata/json.golden was written by the CLI's
// own encoder before it used the event codec's; the bytes must not
// change.
func TestJSONLinesGolden(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600_000_007, time.FixedZone("X", 3600))
	var out []byte
	add := func(v any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, jsonBytes(v)...), '\n')
	}
	for i, ev := range jsonEvents() {
		add(envelopeJSON(event.Envelope{Seq: uint64(i), Session: "s", LoopID: "L", At: at, Event: ev}))
		add(envelopeJSON(event.Envelope{Session: jsonHard[i%len(jsonHard)], Event: ev}))
		add(recordJSON(rig.Record{Seq: uint64(i), Kind: rig.RecordEvent, At: at, Event: event.Envelope{LoopID: "L", Event: ev}}))
		add(recordJSON(rig.Record{Seq: uint64(i), Kind: rig.RecordEvent, Event: event.Envelope{Event: ev}}))
	}
	add(recordJSON(rig.Record{Seq: 1, Kind: rig.RecordFence, Epoch: 3, At: at}))
	for _, s := range jsonHard {
		for _, cmd := range []rig.Command{
			{Name: rig.CommandSubmit, LoopID: "L", TurnID: s, Input: s},
			{Name: rig.CommandInterrupt, LoopID: s},
			{Name: rig.CommandRespondGate, LoopID: "L", GateID: s, Action: "approve"},
			{Name: rig.CommandShutdown},
			{Name: rig.CommandInput, LoopID: "L", TurnID: "t", Input: s, Bytes: len(s), From: s},
			{Name: rig.CommandInput, LoopID: "L", TurnID: "t", Hidden: true, Bytes: 9, From: "cli"},
			{Name: rig.CommandInput, LoopID: "L", TurnID: "t", EOF: true},
		} {
			add(recordJSON(rig.Record{Seq: 2, Kind: rig.RecordCommand, At: at, Command: &cmd}))
		}
		o := newObj().set("type", "E"+s).set("kind", "k").set("message", s).set(s, s).set("n", 3).set("at", jsonTime(at)).set("none", jsonTime{})
		add(newObj().raw("error", o.bytes()), nil)
	}
	path := "testdata/json.golden"
	if *update {
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./cli -run TestJSONLinesGolden -update writes it)", err)
	}
	if !bytes.Equal(out, want) {
		gl, wl := bytes.Split(out, []byte("\n")), bytes.Split(want, []byte("\n"))
		for i := range min(len(gl), len(wl)) {
			if !bytes.Equal(gl[i], wl[i]) {
				t.Fatalf("%s line %d:\n got %s\nwant %s", path, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s: %d lines, want %d", path, len(gl), len(wl))
	}
}
