package host

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"looprig/rig/event"
)

// testdata/run_json.golden holds lines written by `looprig run --json`
// (cli's envelopeJSON) for real turns: escapes, U+2028, invalid UTF-8,
// gates. MarshalEnvelope must write the same bytes.
func TestMarshalEnvelopeMatchesRunJSON(t *testing.T) {
	f, err := os.Open("testdata/run_json.golden")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, MaxServerLine)
	n := 0
	types := map[event.Type]bool{}
	for sc.Scan() {
		n++
		want := sc.Bytes()
		env, err := UnmarshalEnvelope(want)
		if err != nil {
			t.Fatalf("line %d: %v\n%s", n, err, want)
		}
		types[env.Event.Type()] = true
		got, err := MarshalEnvelope(env)
		if err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("line %d differs from run --json:\n got %s\nwant %s", n, got, want)
		}
	}
	if n < 15 || len(types) < 8 {
		t.Fatalf("golden has %d lines of %d types; regenerate it", n, len(types))
	}
}

// sampleEvents has one event of every registered type with every field
// set, strings that need escaping included.
func sampleEvents() map[event.Type]event.Event {
	hard := "a \"q\" \\ <b>&\u2028\x07 é"
	return map[event.Type]event.Event{
		event.TypeSessionStarted: event.SessionStarted{Title: hard, Rig: "default", Fingerprint: "ab12",
			Manifest: map[string]string{"engine": "shell", "x": hard}, Placement: "session", Root: "/r"},
		event.TypeSessionActive:  event.SessionActive{},
		event.TypeSessionIdle:    event.SessionIdle{},
		event.TypeSessionStopped: event.SessionStopped{},
		event.TypeRestoreStarted: event.RestoreStarted{Epoch: 7},
		event.TypeRestoreDone:    event.RestoreDone{Epoch: 7, Interrupted: []string{"t1"}, GatesClosed: []string{"g1", "g2"}},
		event.TypeRestoreErrored: event.RestoreErrored{Kind: "replay_failed", Message: hard},
		event.TypeConfigurationAdopted: event.ConfigurationAdopted{Changes: []event.Change{{Field: "engine", Persisted: "a", Live: "b", Level: event.LevelWarn}},
			Source: "flag", Fingerprint: "cd34", Manifest: map[string]string{"engine": "b"}},
		event.TypeSessionFaulted:  event.SessionFaulted{Cause: hard},
		event.TypeLoopStarted:     event.LoopStarted{LoopID: "loop-1", Name: "root", Engine: "shell"},
		event.TypeTurnStarted:     event.TurnStarted{TurnID: "t1", Index: 3, Input: hard},
		event.TypeTurnOutput:      event.TurnOutput{TurnID: "t1", Text: hard + "\n", Elided: 12},
		event.TypeOutputDelta:     event.OutputDelta{TurnID: "t1", Stream: event.StreamStderr, Text: hard},
		event.TypeTurnDone:        event.TurnDone{TurnID: "t1", ExitCode: -1, Duration: 1500 * time.Millisecond},
		event.TypeTurnFailed:      event.TurnFailed{TurnID: "t1", Err: hard},
		event.TypeTurnInterrupted: event.TurnInterrupted{TurnID: "t1", Index: 3, Reason: event.ReasonUser},
		event.TypeGateOpened:      event.GateOpened{GateID: "g1", TurnID: "t1", Prompt: hard},
		event.TypeGateResolved:    event.GateResolved{GateID: "g1", Action: event.ActionApprove, Reason: "user"},
	}
}

// Every registered event survives MarshalEnvelope and UnmarshalEnvelope,
// the fields an envelope key hides included (a new event type with a field
// named seq, type, session, loop_id or at fails here until it is added to
// shadowed).
func TestEnvelopeRoundTripEveryType(t *testing.T) {
	samples := sampleEvents()
	at := time.Date(2026, 1, 2, 3, 4, 5, 600_000_007, time.FixedZone("X", 3600))
	for _, info := range event.Registered() {
		ev, ok := samples[info.Type]
		if !ok {
			t.Errorf("no sample of %s: add one", info.Type)
			continue
		}
		loop := ""
		if info.Scope == event.LoopScope {
			loop = "loop-1"
		}
		for _, env := range []event.Envelope{
			{Seq: 42, Session: "sess-1", LoopID: loop, At: at, Event: ev},
			{Seq: 0, Session: "sess-1", LoopID: loop, Event: ev}, // zero At is null
		} {
			b, err := MarshalEnvelope(env)
			if err != nil {
				t.Fatalf("%s: %v", info.Type, err)
			}
			if !json.Valid(b) {
				t.Fatalf("%s: invalid JSON %s", info.Type, b)
			}
			var keys map[string]json.RawMessage
			json.Unmarshal(b, &keys)
			if string(keys["type"]) != `"`+string(info.Type)+`"` {
				t.Errorf("%s: type key %s", info.Type, keys["type"])
			}
			if at := string(keys["at"]); env.At.IsZero() && at != "null" || !env.At.IsZero() && !strings.HasSuffix(at, `Z"`) {
				t.Errorf("%s: at %s, want null or UTC", info.Type, at)
			}
			back, err := UnmarshalEnvelope(b)
			if err != nil {
				t.Fatalf("%s: %v\n%s", info.Type, err, b)
			}
			if back.Seq != env.Seq || back.Session != env.Session || back.LoopID != env.LoopID || !back.At.Equal(env.At) {
				t.Errorf("%s: envelope %+v, want %+v", info.Type, back, env)
			}
			if !reflect.DeepEqual(back.Event, env.Event) {
				t.Errorf("%s: event %#v, want %#v\n%s", info.Type, back.Event, env.Event, b)
			}
		}
	}
}

// LoopStarted's own loop_id is hidden by the envelope's (cli: the first
// key set wins) and restored from it.
func TestEnvelopeShadowedLoopID(t *testing.T) {
	env := event.Envelope{Seq: 3, Session: "s", LoopID: "L", Event: event.LoopStarted{LoopID: "L", Name: "root", Engine: "shell"}}
	b, err := MarshalEnvelope(env)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"seq":3,"type":"LoopStarted","session":"s","loop_id":"L","at":null,"name":"root","engine":"shell"}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

func TestUnmarshalEnvelopeRefuses(t *testing.T) {
	for _, in := range []string{
		``, `[]`, `{}`, `{"type":"TurnStarted"}`, `{"seq":-1,"type":"SessionIdle"}`,
		`{"seq":1,"type":"Nope"}`, `{"seq":1,"type":"SessionIdle","extra":1}`,
		`{"seq":1,"type":"SessionIdle","at":"yesterday"}`, `{"seq":1,"type":"OutputDelta","stream":"stdin","turn_id":"t","text":""}`,
	} {
		_, err := UnmarshalEnvelope([]byte(in))
		var de *EnvelopeDecodeError
		if !errors.As(err, &de) {
			t.Errorf("%q: %v, want *EnvelopeDecodeError", in, err)
		}
	}
}

func TestRemoteErrorJSON(t *testing.T) {
	e := &RemoteError{Type: "BusyError", Kind: "busy", Message: "turn 4 (t) is still running", Hint: "wait",
		Fields: map[string]any{"turn_id": "t", "index": 4}}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"BusyError","kind":"busy","message":"turn 4 (t) is still running","index":4,"turn_id":"t","hint":"wait"}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var back RemoteError
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Type != e.Type || back.Kind != e.Kind || back.Message != e.Message || back.Hint != e.Hint ||
		back.str("turn_id") != "t" || back.num("index") != 4 || len(back.Fields) != 2 {
		t.Fatalf("round trip: %+v", back)
	}
	if !strings.Contains(back.Error(), "still running") {
		t.Errorf("Error() = %q", back.Error())
	}
}

// appendString writes what encoding/json writes with HTML escaping off,
// for the envelope's own strings (ids, keys) too.
func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain-id_1", "<a>&b", "q\"b\\", "\u2028\u2029", "\x00\x1f\x7f", "bad \xff utf8", "é😀", "é<&>", "\"<script>\""} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.Encode(s)
		want := strings.TrimSuffix(b.String(), "\n")
		if got := string(appendString(nil, s)); got != want {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	}
}
