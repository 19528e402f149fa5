package event

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
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
	sc.Buffer(nil, 2<<20) // a host line's bound
	n := 0
	types := map[Type]bool{}
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

// The envelope lines of every sample event, with hard strings in the
// envelope (invalid UTF-8 as the escape \ufffd, AppendString's) and in
// the payload (a literal U+FFFD, the event codec's):
// testdata/envelope.golden was written by the host's MarshalEnvelope
// before the envelope codec moved here; the bytes must not change.
func TestMarshalEnvelopeGolden(t *testing.T) {
	samples := sampleEvents()
	at := time.Date(2026, 1, 2, 3, 4, 5, 600_000_007, time.FixedZone("X", 3600))
	var out []byte
	add := func(env Envelope) {
		b, err := MarshalEnvelope(env)
		if err != nil {
			t.Fatalf("%+v: %v", env, err)
		}
		out = append(append(out, b...), '\n')
	}
	for _, info := range Registered() {
		ev := samples[info.Type]
		add(Envelope{Seq: 42, Session: "sess-1", LoopID: "loop-1", At: at, Event: ev})
		add(Envelope{Event: ev})
	}
	for _, s := range hardStrings {
		add(Envelope{Seq: 7, Session: s, LoopID: s, At: at, Event: TurnOutput{TurnID: s, Text: s, Elided: 3}})
		add(Envelope{Seq: 8, Session: s, LoopID: s, Event: LoopStarted{LoopID: s, Name: s, Engine: s}})
		add(Envelope{Seq: 9, Session: "s", LoopID: "l", Event: SessionStarted{Title: s, Manifest: map[string]string{s: s}}})
		add(Envelope{Session: "s", LoopID: "l", Event: OutputDelta{TurnID: s, Stream: StreamStderr, Text: s}})
	}
	checkGolden(t, "envelope.golden", out)
}

// sampleEvents has one event of every registered type with every field
// set, strings that need escaping included.
func sampleEvents() map[Type]Event {
	hard := "a \"q\" \\ <b>&\u2028\x07 é"
	return map[Type]Event{
		TypeSessionStarted: SessionStarted{Title: hard, Rig: "default", Fingerprint: "ab12",
			Manifest: map[string]string{"engine": "shell", "x": hard}, Placement: "session", Root: "/r"},
		TypeSessionActive:  SessionActive{},
		TypeSessionIdle:    SessionIdle{},
		TypeSessionStopped: SessionStopped{},
		TypeRestoreStarted: RestoreStarted{Epoch: 7},
		TypeRestoreDone:    RestoreDone{Epoch: 7, Interrupted: []string{"t1"}, GatesClosed: []string{"g1", "g2"}},
		TypeRestoreErrored: RestoreErrored{Kind: "replay_failed", Message: hard},
		TypeConfigurationAdopted: ConfigurationAdopted{Changes: []Change{{Field: "engine", Persisted: "a", Live: "b", Level: LevelWarn}},
			Source: "flag", Fingerprint: "cd34", Manifest: map[string]string{"engine": "b"}},
		TypeSessionFaulted: SessionFaulted{Cause: hard},
		TypeWorkspaceCheckpointed: WorkspaceCheckpointed{Manifest: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
			Files: 3, Bytes: 4096, Read: 100, Skipped: 1, TurnID: "t1", Trigger: TriggerTurn},
		TypeHandedOff: HandedOff{To: hard},
		TypeWorkspaceReconciled: WorkspaceReconciled{Action: ReconcileAdopted, Manifest: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
			From: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Differs: 1, Paths: []string{hard}, Host: hard},
		TypeWorkspaceReverted: WorkspaceReverted{TurnID: "t1", TurnIndex: 2, Manifest: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
			From: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Changed: 1, Paths: []string{hard}, Host: hard},
		TypeAgentConversation:          AgentConversation{Agent: "claude", ID: "0b5c2a4e-8f1d-4c3a-9e7b-2d6f1a0c9b8e", TurnID: "t1"},
		TypeAgentTranscript:            AgentTranscript{Agent: "claude", ID: "0b5c2a4e", Blob: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Bytes: 7, TurnID: "t1"},
		TypeWorktreeAdded:              WorktreeAdded{Repo: hard, Branch: "looprig/1a2b3c4d", Path: hard},
		TypeWorkspaceCheckpointSkipped: WorkspaceCheckpointSkipped{TurnID: "t1", Trigger: TriggerStop, Reason: hard, Bytes: 5 << 30, Limit: 1 << 30},
		TypeLoopStarted:                LoopStarted{LoopID: "loop-1", Name: "root", Engine: "shell"},
		TypeTurnStarted:                TurnStarted{TurnID: "t1", Index: 3, Input: hard},
		TypeTurnOutput:                 TurnOutput{TurnID: "t1", Text: hard + "\n", Elided: 12},
		TypeOutputDelta:                OutputDelta{TurnID: "t1", Stream: StreamStderr, Text: hard},
		TypeTurnDone:                   TurnDone{TurnID: "t1", ExitCode: -1, Duration: 1500 * time.Millisecond},
		TypeTurnFailed:                 TurnFailed{TurnID: "t1", Err: hard},
		TypeTurnInterrupted:            TurnInterrupted{TurnID: "t1", Index: 3, Reason: ReasonUser},
		TypeGateOpened:                 GateOpened{GateID: "g1", TurnID: "t1", Prompt: hard},
		TypeGateResolved:               GateResolved{GateID: "g1", Action: ActionApprove, Reason: "user", By: &Client{Kind: "tui", PID: 4242, Terminal: true}},
		TypeAttention:                  Attention{TurnID: "t1", Reason: AttentionOSC777, Text: hard},
		TypeAttentionSeen:              AttentionSeen{Through: 41, From: "cli"},
		TypeRefused:                    Refused{TurnID: "t1", What: RefusedGateAnswer, GateID: "g1", Action: ActionApprove, By: &Client{Kind: "cli", PID: 77}, Reason: FromTurnCarries, Via: 70},
	}
}

// Every registered event survives MarshalEnvelope and UnmarshalEnvelope,
// the fields an envelope key hides included (a new event type with a field
// named seq, type, session, loop_id or at fails here until it is added to
// shadowed).
func TestEnvelopeRoundTripEveryType(t *testing.T) {
	samples := sampleEvents()
	at := time.Date(2026, 1, 2, 3, 4, 5, 600_000_007, time.FixedZone("X", 3600))
	for _, info := range Registered() {
		ev, ok := samples[info.Type]
		if !ok {
			t.Errorf("no sample of %s: add one", info.Type)
			continue
		}
		loop := ""
		if info.Scope == LoopScope {
			loop = "loop-1"
		}
		for _, env := range []Envelope{
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
	env := Envelope{Seq: 3, Session: "s", LoopID: "L", Event: LoopStarted{LoopID: "L", Name: "root", Engine: "shell"}}
	b, err := MarshalEnvelope(env)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"seq":3,"type":"LoopStarted","session":"s","loop_id":"L","at":null,"name":"root","engine":"shell"}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

// AppendPayload writes the members MarshalEnvelope writes after the
// envelope, less those keep refuses; an event Marshal refuses leaves dst
// as it was, in both.
func TestAppendPayload(t *testing.T) {
	for typ, ev := range sampleEvents() {
		line, err := MarshalEnvelope(Envelope{Seq: 1, Session: "s", LoopID: "L", Event: ev})
		if err != nil {
			t.Fatal(err)
		}
		head := `{"seq":1,"type":"` + string(typ) + `","session":"s","loop_id":"L","at":null`
		got, err := AppendPayload([]byte(head), ev, notEnvelopeKey)
		if err != nil || string(got)+"}" != string(line) {
			t.Errorf("%s: %s (%v), want %s", typ, got, err, line)
		}
	}
	var keys []string
	got, err := AppendPayload([]byte(`{"a":1`), GateOpened{GateID: "g", TurnID: "t", Prompt: "p<&>\xff"}, func(k string) bool {
		keys = append(keys, k)
		return k != "turn_id"
	})
	if want := `{"a":1,"gate_id":"g","prompt":"p<&>` + "\uFFFD" + `"`; err != nil || string(got) != want {
		t.Errorf("got %s (%v), want %s", got, err, want)
	}
	if strings.Join(keys, " ") != "gate_id turn_id prompt" {
		t.Errorf("keep saw %q", keys)
	}
	if got, _ := AppendPayload([]byte(`{"a":1`), TurnDone{TurnID: "t"}, nil); string(got) != `{"a":1,"turn_id":"t","exit_code":0,"duration_ms":0` {
		t.Errorf("keep nil: %s", got)
	}
	bad := OutputDelta{TurnID: "t", Stream: "stdin"}
	for name, f := range map[string]func([]byte) ([]byte, error){
		"AppendPayload":  func(b []byte) ([]byte, error) { return AppendPayload(b, bad, nil) },
		"AppendEnvelope": func(b []byte) ([]byte, error) { return AppendEnvelope(b, Envelope{Event: bad}) },
	} {
		got, err := f([]byte("x"))
		var ee *EncodeError
		if !errors.As(err, &ee) || string(got) != "x" {
			t.Errorf("%s of an invalid event: %q, %v", name, got, err)
		}
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

// sameDecode reports how two UnmarshalEnvelope results differ ("" when
// they do not): the envelope (At by time and location), or the error's
// fields, the cause's kind and message included.
func sameDecode(env1 Envelope, err1 error, env2 Envelope, err2 error) string {
	if (err1 == nil) != (err2 == nil) {
		return fmt.Sprintf("error %v, want %v", err1, err2)
	}
	if err1 != nil {
		var d1, d2 *EnvelopeDecodeError
		if !errors.As(err1, &d1) || !errors.As(err2, &d2) {
			return fmt.Sprintf("error %T %v, want %T %v", err1, err1, err2, err2)
		}
		if d1.Seq != d2.Seq || d1.Type != d2.Type || d1.Reason != d2.Reason || (d1.Err == nil) != (d2.Err == nil) {
			return fmt.Sprintf("error %#v, want %#v", d1, d2)
		}
		var e1, e2 *DecodeError
		if errors.As(d1.Err, &e1) != errors.As(d2.Err, &e2) || e1 != nil && e1.Kind != e2.Kind {
			return fmt.Sprintf("cause %#v, want %#v", d1.Err, d2.Err)
		}
		if err1.Error() != err2.Error() {
			return fmt.Sprintf("error %q, want %q", err1, err2)
		}
		return ""
	}
	if env1.Seq != env2.Seq || env1.Session != env2.Session || env1.LoopID != env2.LoopID ||
		!env1.At.Equal(env2.At) || env1.At.Location().String() != env2.At.Location().String() {
		return fmt.Sprintf("envelope %+v, want %+v", env1, env2)
	}
	if !reflect.DeepEqual(env1.Event, env2.Event) {
		return fmt.Sprintf("event %#v, want %#v", env1.Event, env2.Event)
	}
	return ""
}

// sampleLines are MarshalEnvelope lines of every sample event.
func sampleLines(t testing.TB) [][]byte {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600_000_007, time.UTC)
	var out [][]byte
	for _, ev := range sampleEvents() {
		loop := ""
		if ev.Scope() == LoopScope {
			loop = "loop-1"
		}
		for _, env := range []Envelope{
			{Seq: 42, Session: "sess-1", LoopID: loop, At: at, Event: ev},
			{Session: "s\"<\u2028>é", LoopID: loop + "\\", Event: ev},
		} {
			b, err := MarshalEnvelope(env)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
	}
	return out
}

// Every MarshalEnvelope line but a shadowed type's takes the fast path,
// to the general path's result.
func TestUnmarshalEnvelopeFastPath(t *testing.T) {
	for _, b := range sampleLines(t) {
		want, werr := unmarshalGeneral(b)
		if werr != nil {
			t.Fatalf("%s: %v", b, werr)
		}
		got, ok := unmarshalFast(b)
		if len(shadowed[want.Event.Type()]) > 0 {
			if ok {
				t.Errorf("shadowed %s took the fast path", want.Event.Type())
			}
			continue
		}
		if !ok {
			t.Errorf("fast path refused %s", b)
			continue
		}
		if d := sameDecode(got, nil, want, nil); d != "" {
			t.Errorf("%s: %s", b, d)
		}
	}
}

// Lines not of MarshalEnvelope's exact shape take the general path, and
// decode as it decodes them.
func TestUnmarshalEnvelopeFallback(t *testing.T) {
	const pre = `{"seq":7,"type":"OutputDelta","session":"s","loop_id":"L","at":null`
	for _, c := range []struct {
		in   string
		want Envelope // Event nil: an error
	}{
		// another key order, white space
		{`{"type":"OutputDelta","seq":7,"session":"s","loop_id":"L","at":null,"turn_id":"t","stream":"stdout","text":"x"}`,
			Envelope{Seq: 7, Session: "s", LoopID: "L", Event: OutputDelta{TurnID: "t", Stream: "stdout", Text: "x"}}},
		{`{ "seq":7,"type":"OutputDelta","session":"s","loop_id":"L","at":null,"turn_id":"t","stream":"stdout","text":"x"}`,
			Envelope{Seq: 7, Session: "s", LoopID: "L", Event: OutputDelta{TurnID: "t", Stream: "stdout", Text: "x"}}},
		{pre + `, "turn_id" : "t","stream":"stdout","text":"x"}` + "\n",
			Envelope{Seq: 7, Session: "s", LoopID: "L", Event: OutputDelta{TurnID: "t", Stream: "stdout", Text: "x"}}},
		// envelope keys missing or null
		{`{"seq":7,"type":"SessionIdle"}`, Envelope{Seq: 7, Event: SessionIdle{}}},
		{`{"seq":null,"type":"SessionIdle","session":null,"loop_id":null,"at":null}`, Envelope{Event: SessionIdle{}}},
		// a payload member named like an envelope key: the last wins
		{pre + `,"turn_id":"t","stream":"stdout","text":"x","seq":9}`,
			Envelope{Seq: 9, Session: "s", LoopID: "L", Event: OutputDelta{TurnID: "t", Stream: "stdout", Text: "x"}}},
		{pre + `,"turn_id":"t","stream":"stdout","text":"x","s\u0065ssion":"S"}`,
			Envelope{Seq: 7, Session: "S", LoopID: "L", Event: OutputDelta{TurnID: "t", Stream: "stdout", Text: "x"}}},
		// members the struct decode would take in line order
		{pre + `,"turn_id":"t","stream":"stdout","text":"b","Text":"a"}`,
			Envelope{Seq: 7, Session: "s", LoopID: "L", Event: OutputDelta{TurnID: "t", Stream: "stdout", Text: "b"}}},
		{`{"seq":1,"type":"SessionStarted","session":"s","loop_id":"","at":null,"title":"","rig":"","fingerprint":"","placement":"","root":"","manifest":{"a":"1"},"manifest":{"b":"2"}}`,
			Envelope{Seq: 1, Session: "s", Event: SessionStarted{Manifest: map[string]string{"b": "2"}}}},
		// a shadowed type
		{`{"seq":3,"type":"LoopStarted","session":"s","loop_id":"L","at":null,"name":"root","engine":"shell"}`,
			Envelope{Seq: 3, Session: "s", LoopID: "L", Event: LoopStarted{LoopID: "L", Name: "root", Engine: "shell"}}},
		// escapes in the envelope (fast: decoded by encoding/json)
		{`{"seq":7,"type":"Output\u0044elta","session":"s\"\u00e9","loop_id":"L\ud83d\ude00","at":"2026-01-02T03:04:05.5+01:00","turn_id":"t","stream":"stdout","text":"x"}`,
			Envelope{Seq: 7, Session: "s\"é", LoopID: "L😀", At: time.Date(2026, 1, 2, 3, 4, 5, 5e8, time.FixedZone("", 3600)),
				Event: OutputDelta{TurnID: "t", Stream: "stdout", Text: "x"}}},
	} {
		got, err := UnmarshalEnvelope([]byte(c.in))
		gen, gerr := unmarshalGeneral([]byte(c.in))
		if d := sameDecode(got, err, gen, gerr); d != "" {
			t.Errorf("%s: %s", c.in, d)
		}
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if d := sameDecode(got, nil, c.want, nil); d != "" {
			t.Errorf("%s: %s", c.in, d)
		}
	}
}

// Every way a line is refused, with the error's fields, through both
// paths alike.
func TestUnmarshalEnvelopeErrors(t *testing.T) {
	const pre = `{"seq":7,"type":"OutputDelta","session":"s","loop_id":"L","at":null`
	var noDecodeError DecodeErrorKind = "none"
	for _, c := range []struct {
		in     string
		seq    uint64
		typ    Type
		reason string
		kind   DecodeErrorKind // of Err, if a *DecodeError
	}{
		{``, 0, "", "not a JSON object", noDecodeError},
		{`[]`, 0, "", "not a JSON object", noDecodeError},
		{`{"seq":1,"type":"SessionIdle"} x`, 0, "", "not a JSON object", noDecodeError},
		{`{"seq":1,"type":"SessionIdle","session":"s","loop_id":"","at":null}}`, 0, "", "not a JSON object", noDecodeError},
		{pre + `,"turn_id":"t","stream":"stdout","text":"x"`, 0, "", "not a JSON object", noDecodeError},
		{pre + `,"turn_id":"t","stream":"stdout","text":"a` + "\x01" + `"}`, 0, "", "not a JSON object", noDecodeError},
		{`{"seq":01,"type":"SessionIdle","session":"s","loop_id":"","at":null}`, 0, "", "not a JSON object", noDecodeError},
		{`{}`, 0, "", "missing or bad type", noDecodeError},
		{`{"seq":1,"type":""}`, 0, "", "missing or bad type", noDecodeError},
		{`{"seq":1,"type":null}`, 0, "", "missing or bad type", noDecodeError},
		{`{"seq":1,"type":7}`, 0, "", "missing or bad type", noDecodeError},
		{`{"type":"TurnStarted"}`, 0, "TurnStarted", "missing seq", noDecodeError},
		{`{"seq":-1,"type":"SessionIdle"}`, 0, "SessionIdle", "bad seq", noDecodeError},
		{`{"seq":1.5,"type":"SessionIdle","session":"s","loop_id":"","at":null}`, 0, "SessionIdle", "bad seq", noDecodeError},
		{`{"seq":18446744073709551616,"type":"SessionIdle","session":"s","loop_id":"","at":null}`, 0, "SessionIdle", "bad seq", noDecodeError},
		{`{"seq":"1","type":"SessionIdle","session":"s","loop_id":"","at":null}`, 0, "SessionIdle", "bad seq", noDecodeError},
		{`{"seq":1,"type":"SessionIdle","session":1,"loop_id":"","at":null}`, 1, "SessionIdle", "bad session", noDecodeError},
		{`{"seq":1,"type":"SessionIdle","session":1,"loop_id":2,"at":null}`, 1, "SessionIdle", "bad session", noDecodeError},
		{`{"seq":1,"type":"SessionIdle","session":"s","loop_id":[],"at":null}`, 1, "SessionIdle", "bad loop_id", noDecodeError},
		{`{"seq":1,"type":"SessionIdle","at":"yesterday"}`, 1, "SessionIdle", "bad at", noDecodeError},
		{`{"seq":1,"type":"SessionIdle","session":"s","loop_id":"","at":"2026-01-02"}`, 1, "SessionIdle", "bad at", noDecodeError},
		{`{"seq":1,"type":"SessionIdle","session":"s","loop_id":"","at":5}`, 1, "SessionIdle", "bad at", noDecodeError},
		{`{"seq":1,"type":"Nope"}`, 1, "Nope", "", DecodeUnknownType},
		{`{"seq":1,"type":"Nope","session":"s","loop_id":"","at":null}`, 1, "Nope", "", DecodeUnknownType},
		{`{"seq":1,"type":"SessionIdle","extra":1}`, 1, "SessionIdle", "", DecodeUnknownField},
		{`{"seq":1,"type":"SessionIdle","session":"s","loop_id":"","at":null,"extra":1}`, 1, "SessionIdle", "", DecodeUnknownField},
		{`{"seq":1,"type":"OutputDelta","stream":"stdin","turn_id":"t","text":""}`, 1, "OutputDelta", "", DecodeInvalid},
		{pre + `,"turn_id":"t","stream":"stdin","text":"x"}`, 7, "OutputDelta", "", DecodeInvalid},
		{pre + `,"turn_id":"t","stream":"stdout","text":7}`, 7, "OutputDelta", "", DecodeInvalid},
		{pre + `,"turn_id":"t","stream":"stdout","text":"x","Text":7}`, 7, "OutputDelta", "", DecodeInvalid},
		{pre + `,"turn_id":"t","stream":"stdout","text":"x","text":7}`, 7, "OutputDelta", "", DecodeInvalid},
		{`{"seq":2,"type":"TurnOutput","session":"s","loop_id":"L","at":null,"turn_id":"t","text":"x","elided":1e3}`, 2, "TurnOutput", "", DecodeInvalid},
	} {
		for name, f := range map[string]func([]byte) (Envelope, error){"new": UnmarshalEnvelope, "general": unmarshalGeneral} {
			_, err := f([]byte(c.in))
			var de *EnvelopeDecodeError
			if !errors.As(err, &de) {
				t.Errorf("%s %q: %v, want *EnvelopeDecodeError", name, c.in, err)
				continue
			}
			kind := noDecodeError
			var ee *DecodeError
			if errors.As(de.Err, &ee) {
				kind = ee.Kind
			}
			if de.Seq != c.seq || de.Type != c.typ || de.Reason != c.reason || kind != c.kind {
				t.Errorf("%s %q: seq %d type %q reason %q kind %s, want %d %q %q %s", name, c.in,
					de.Seq, de.Type, de.Reason, kind, c.seq, c.typ, c.reason, c.kind)
			}
		}
		if _, ok := unmarshalFast([]byte(c.in)); ok {
			t.Errorf("%q: the fast path accepted it", c.in)
		}
	}
}

// For any line, UnmarshalEnvelope decodes as the original did (value and
// error), the fast path agrees with the general path whenever it accepts,
// and a decoded envelope re-encodes to a line that decodes (by the fast
// path, shadowed types aside) to it again and re-encodes to itself.
func FuzzUnmarshalEnvelope(f *testing.F) {
	for _, b := range sampleLines(f) {
		f.Add(b)
	}
	if golden, err := os.ReadFile("testdata/run_json.golden"); err == nil {
		for _, l := range bytes.Split(golden, []byte("\n")) {
			f.Add(l)
		}
	}
	const pre = `{"seq":7,"type":"OutputDelta","session":"s","loop_id":"L","at":null`
	for _, s := range []string{
		pre + `,"turn_id":"t","stream":"stdout","text":"x","seq":9}`,
		pre + `,"turn_id":"t","stream":"stdout","text":"x","s\u0065q":9}`,
		pre + `,"turn_id":"t","stream":"stdout","text":"b","Text":"a"}`,
		pre + `,"turn_id":"t","stream":"stdout","text":"x\\\"}","text":"y"} `,
		`{"seq":1,"type":"SessionStarted","session":"s","loop_id":"","at":null,"manifest":{"a":"1"},"manifest":{"b":"2"}}`,
		`{"seq":1,"type":"Nope"}`, `{"seq":1,"type":"SessionIdle","session":1,"loop_id":2,"at":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// UnmarshalEnvelope is the fast path where it accepts the line:
		// its result must be the general path's.
		env, err := UnmarshalEnvelope(b)
		gen, gerr := unmarshalGeneral(b)
		if d := sameDecode(env, err, gen, gerr); d != "" {
			t.Fatalf("%q: %s", b, d)
		}
		if err != nil {
			return
		}
		line, err := MarshalEnvelope(env)
		if err != nil {
			t.Fatalf("%q decoded to %+v, which does not encode: %v", b, env, err)
		}
		back, ok := unmarshalFast(line)
		if !ok {
			if len(shadowed[env.Event.Type()]) == 0 {
				t.Fatalf("fast path refused %s", line)
			}
			if back, err = UnmarshalEnvelope(line); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
		}
		env.At = env.At.UTC() // the line has it in UTC
		if env.At.IsZero() {
			env.At = time.Time{}
		}
		if d := sameDecode(back, nil, env, nil); d != "" {
			t.Fatalf("re-encoded %s: %s", line, d)
		}
		again, err := MarshalEnvelope(back)
		if err != nil || !bytes.Equal(again, line) {
			t.Fatalf("re-encoded %s, then %s (%v)", line, again, err)
		}
	})
}

// benchLines are a seq turn's hot lines: a 32 KiB OutputDelta (a read of
// the engine) and a 64 KiB TurnOutput (a checkpoint).
func benchLines(b *testing.B) map[string][]byte {
	var text strings.Builder
	for i := 1; text.Len() < 64<<10; i++ {
		text.WriteString(strconv.Itoa(i))
		text.WriteByte('\n')
	}
	s := text.String()
	at := time.Date(2026, 1, 2, 3, 4, 5, 600_000_007, time.UTC)
	out := map[string][]byte{}
	for name, env := range map[string]Envelope{
		"OutputDelta": {Session: "b7e1c5fa-32ba-4fef-b71e-95f701ca7fa8", LoopID: "62b19503-95ab-4ae9-8539-47df6f37b3f0", At: at,
			Event: OutputDelta{TurnID: "1f8198b4-c807-474e-bda9-4a21eb18ae40", Stream: StreamStdout, Text: s[:32<<10]}},
		"TurnOutput": {Seq: 1234, Session: "b7e1c5fa-32ba-4fef-b71e-95f701ca7fa8", LoopID: "62b19503-95ab-4ae9-8539-47df6f37b3f0", At: at,
			Event: TurnOutput{TurnID: "1f8198b4-c807-474e-bda9-4a21eb18ae40", Text: s}},
		"TurnStarted": {Seq: 12, Session: "b7e1c5fa-32ba-4fef-b71e-95f701ca7fa8", LoopID: "62b19503-95ab-4ae9-8539-47df6f37b3f0", At: at,
			Event: TurnStarted{TurnID: "1f8198b4-c807-474e-bda9-4a21eb18ae40", Index: 3, Input: "seq 2000000"}},
	} {
		line, err := MarshalEnvelope(env)
		if err != nil {
			b.Fatal(err)
		}
		out[name] = line
	}
	return out
}

// BenchmarkUnmarshalEnvelope: UnmarshalEnvelope ("new") against the
// general path ("general", the implementation before the fast path: map,
// re-encode, strict decode) on a seq turn's lines.
func BenchmarkUnmarshalEnvelope(b *testing.B) {
	lines := benchLines(b)
	for _, name := range []string{"OutputDelta", "TurnOutput", "TurnStarted"} {
		line := lines[name]
		for _, impl := range []struct {
			name string
			f    func([]byte) (Envelope, error)
		}{{"general", unmarshalGeneral}, {"new", UnmarshalEnvelope}} {
			b.Run(name+"/"+impl.name, func(b *testing.B) {
				b.SetBytes(int64(len(line)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := impl.f(line); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkMarshalEnvelope: the host's side of the same lines.
func BenchmarkMarshalEnvelope(b *testing.B) {
	lines := benchLines(b)
	for _, name := range []string{"OutputDelta", "TurnOutput"} {
		env, err := UnmarshalEnvelope(lines[name])
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(lines[name])))
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				if buf, err = AppendEnvelope(buf[:0], env); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// plainMembers takes only distinct [a-z0-9_] keys that are no envelope
// key (today a payload member named like one fails the strict decode of
// every unshadowed type anyway; this keeps a future field from slipping).
func TestPlainMembers(t *testing.T) {
	for in, want := range map[string]bool{
		`}`: true, `,"a":1}`: true, `,"turn_id":"t","text":"x\"}\\","n":[{"a":"]"}],"m":{}}`: true, `,"":1}`: true,
		`,"seq":1}`: false, `,"type":"x"}`: false, `,"session":""}`: false, `,"loop_id":""}`: false, `,"at":null}`: false,
		`,"s\u0065q":1}`: false, `,"Text":"x"}`: false, `,"a":1,"a":2}`: false, `, "a":1}`: false, `,"a" :1}`: false,
		`,"a":"x}`: false, `,"a":{"b":1}`: false, `,"a":1`: false, ``: false, `x`: false,
		`,"k0":0,"k1":0,"k2":0,"k3":0,"k4":0,"k5":0,"k6":0,"k7":0,"k8":0,"k9":0,"ka":0,"kb":0,"kc":0,"kd":0,"ke":0,"kf":0}`:        true,
		`,"k0":0,"k1":0,"k2":0,"k3":0,"k4":0,"k5":0,"k6":0,"k7":0,"k8":0,"k9":0,"ka":0,"kb":0,"kc":0,"kd":0,"ke":0,"kf":0,"kg":0}`: false,
	} {
		if got := plainMembers([]byte(in), 0); got != want {
			t.Errorf("plainMembers(%s) = %v, want %v", in, got, want)
		}
	}
}
