package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// samples returns one non-trivial value of every event type, plus a few
// edge values (empty collections, unicode, HTML characters).
func samples() []Event {
	return []Event{
		SessionStarted{Title: "demo <&>", Rig: "default", Fingerprint: "sha256:ab",
			Manifest: map[string]string{"engine": "shell", "root": "/w"}, Placement: "session", Root: "/w"},
		SessionStarted{},
		SessionStarted{Title: "fork", Rig: "default", Placement: "session", ForkedFrom: &ForkedFrom{Session: "0b5c2a4e-8f1d-4c3a-9e7b-2d6f1a0c9b8e",
			TurnIndex: 3, TurnID: "t3", Checkpoint: strings.Repeat("cd", 32), Conversation: "9f1c2a4e-8f1d-4c3a-9e7b-2d6f1a0c9b8e"}},
		SessionActive{},
		SessionIdle{},
		SessionStopped{},
		RestoreStarted{Epoch: 7},
		RestoreDone{Epoch: 7, Interrupted: []string{"t1", "t2"}, GatesClosed: []string{"g1"}},
		RestoreDone{Epoch: 1, Interrupted: []string{}, GatesClosed: nil},
		RestoreDone{Epoch: 8, Interrupted: []string{}, GatesClosed: []string{}, Holder: "4250@other-box"},
		RestoreErrored{Kind: "replay_failed", Message: "bad record at 12"},
		ConfigurationAdopted{Changes: []Change{
			{Field: "engine", Persisted: "shell", Live: "demo", Level: LevelWarn},
			{Field: "title", Persisted: "a", Live: "b", Level: LevelInfo},
		}, Source: "--accept-drift"},
		ConfigurationAdopted{Changes: []Change{{Field: "engine", Persisted: "shell", Live: "demo", Level: LevelWarn}},
			Source: "default", Fingerprint: "abc", Manifest: map[string]string{"engine": "demo", "root": ""}},
		SessionFaulted{Cause: "lease lost"},
		WorkspaceCheckpointed{Manifest: strings.Repeat("ab", 32), Files: 10_000, Bytes: 100 << 20, Read: 4096, Skipped: 1, TurnID: "t1", Trigger: TriggerTurn},
		WorkspaceCheckpointed{Manifest: strings.Repeat("0", 64), Trigger: TriggerStop},
		WorkspaceCheckpointed{Manifest: strings.Repeat("cd", 32), Files: 3, Bytes: 12, Trigger: TriggerFork, Host: "box"},
		WorkspaceCheckpointSkipped{TurnID: "t1", Trigger: TriggerTurn, Reason: "the workspace is 2 GiB, over checkpoint_max (1 GiB)", Bytes: 2 << 30, Limit: 1 << 30},
		HandedOff{To: "4242@other-box"},
		WorkspaceReconciled{Action: ReconcileMovedAside, Manifest: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
			Differs: 2, Paths: []string{"a", "b"}, Host: "box", MovedTo: "/ws/x.diverged-20261202-101500"},
		AgentConversation{Agent: "claude", ID: "0b5c2a4e-8f1d-4c3a-9e7b-2d6f1a0c9b8e"},
		AgentConversation{Agent: "claude", ID: "0b5c2a4e-8f1d-4c3a-9e7b-2d6f1a0c9b8e", TurnID: "t1"},
		AgentTranscript{Agent: "claude", ID: "0b5c2a4e-8f1d-4c3a-9e7b-2d6f1a0c9b8e", Blob: strings.Repeat("cd", 32), Bytes: 12345, TurnID: "t1"},
		WorktreeAdded{Repo: "/src/app", Branch: "looprig/1a2b3c4d", Path: "/src/app.worktrees/looprig/1a2b3c4d"},
		LoopStarted{LoopID: "l1", Name: "shell", Engine: "shell"},
		TurnStarted{TurnID: "t1", Index: 3, Input: "for i in $(seq 60); do echo $i && sleep 1; done"},
		TurnOutput{TurnID: "t1", Text: "1\n2\nünïcødé \x1b[31mred\x1b[0m\n", Elided: 1 << 40},
		OutputDelta{TurnID: "t1", Stream: StreamStderr, Text: "oops\n"},
		TurnDone{TurnID: "t1", ExitCode: 130, Duration: 61234 * time.Millisecond},
		TurnDone{TurnID: "t1", ExitCode: -1, Duration: -5 * time.Millisecond},
		TurnFailed{TurnID: "t2", Err: "exec: not found"},
		TurnInterrupted{TurnID: "t1", Index: 3, Reason: ReasonCrash},
		TurnInterrupted{TurnID: "t1", Index: 4, Reason: ReasonHandoff},
		GateOpened{GateID: "g1", TurnID: "t1", Prompt: "run rm -rf build?"},
		GateResolved{GateID: "g1", Action: ActionClose, Reason: "restore_unavailable"},
		GateResolved{GateID: "g1", Action: ActionApprove, Reason: "user", By: &Client{Kind: "cli", PID: 4242, Terminal: true}},
		Attention{TurnID: "t1", Reason: AttentionOSC9, Text: "build done <&> ünï"},
		Attention{TurnID: "t1", Reason: AttentionBell},
		Attention{TurnID: "t1", Reason: AttentionAgent, Text: "Claude needs your permission", Agent: "claude"},
		AttentionSeen{Through: 42, From: "tui"},
		Refused{TurnID: "t1", What: RefusedGateAnswer, GateID: "g1", Action: ActionApprove, By: &Client{Kind: "cli", PID: 77}, Reason: FromTurnCarries, Via: 70},
		Refused{TurnID: "t1", What: RefusedInput, By: &Client{Kind: "unknown"}, Reason: FromTurnGone},
		Refused{TurnID: "t1", What: RefusedHook, Agent: "claude", Hook: "SessionStart"},
		Refused{TurnID: "t1", What: RefusedConversation, Agent: "claude", ID: "0b5c2a4e-8f1d-4c3a-9e7b-2d6f1a0c9b8e", Source: SourceHook},
		WorkspaceCheckpointed{Manifest: strings.Repeat("ab", 32), Files: 3, Bytes: 12, TurnID: "t1", Trigger: TriggerRevert, Host: "box"},
		WorkspaceReverted{TurnID: "t1", TurnIndex: 3, Manifest: strings.Repeat("0", 64), From: strings.Repeat("ab", 32),
			Files: 2, Bytes: 10, Changed: 4, Removed: 1, Paths: []string{"a.txt", "dir/b"}, Host: "box"},
		WorkspaceReverted{TurnID: "t1", TurnIndex: 3, Undo: true, Manifest: strings.Repeat("ab", 32), From: strings.Repeat("0", 64), Host: "box"},
	}
}

func TestSamplesCoverRegistry(t *testing.T) {
	seen := map[Type]bool{}
	for _, ev := range samples() {
		seen[ev.Type()] = true
	}
	reg := Registered()
	if len(reg) != 29 {
		t.Errorf("Registered() has %d types, want 29", len(reg))
	}
	for _, info := range reg {
		if !seen[info.Type] {
			t.Errorf("no sample for %s", info.Type)
		}
		z, ok := Zero(info.Type)
		if !ok || z.Type() != info.Type || z.Class() != info.Class || z.Scope() != info.Scope {
			t.Errorf("Zero(%s) = %#v, %v", info.Type, z, ok)
		}
	}
	if _, ok := Zero("Nope"); ok {
		t.Error("Zero(Nope) found something")
	}
}

func TestClassesAndScopes(t *testing.T) {
	ephemeral := map[Type]bool{TypeSessionFaulted: true, TypeOutputDelta: true}
	session := map[Type]bool{
		TypeSessionStarted: true, TypeSessionActive: true, TypeSessionIdle: true, TypeSessionStopped: true,
		TypeRestoreStarted: true, TypeRestoreDone: true, TypeRestoreErrored: true,
		TypeConfigurationAdopted: true, TypeSessionFaulted: true,
		TypeWorkspaceCheckpointed: true, TypeWorkspaceCheckpointSkipped: true, TypeHandedOff: true, TypeWorkspaceReconciled: true,
		TypeWorkspaceReverted: true,
		TypeAgentConversation: true, TypeAgentTranscript: true, TypeWorktreeAdded: true,
	}
	for _, info := range Registered() {
		wantClass, wantScope := Enduring, LoopScope
		if ephemeral[info.Type] {
			wantClass = Ephemeral
		}
		if session[info.Type] {
			wantScope = SessionScope
		}
		if info.Class != wantClass || info.Scope != wantScope {
			t.Errorf("%s: class %v scope %v, want %v %v", info.Type, info.Class, info.Scope, wantClass, wantScope)
		}
	}
}

func TestRoundTripEveryType(t *testing.T) {
	for _, ev := range samples() {
		b, err := Marshal(ev)
		if err != nil {
			t.Fatalf("Marshal(%#v): %v", ev, err)
		}
		got, err := Unmarshal(b)
		if err != nil {
			t.Fatalf("Unmarshal(%s): %v", b, err)
		}
		if !reflect.DeepEqual(got, ev) {
			t.Errorf("round trip of %s:\n got %#v\nwant %#v", b, got, ev)
		}
		again, err := Marshal(got)
		if err != nil || !bytes.Equal(again, b) {
			t.Errorf("re-encoding differs:\n%s\n%s (%v)", b, again, err)
		}
	}
}

var snake = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// checkKeys walks decoded JSON and reports every object key that is not
// snake_case. Manifest keys are user data and are skipped.
func checkKeys(t *testing.T, path string, v any) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		for k, vv := range x {
			if !snake.MatchString(k) {
				t.Errorf("%s: key %q is not snake_case", path, k)
			}
			if k == "manifest" {
				continue
			}
			checkKeys(t, path+"."+k, vv)
		}
	case []any:
		for _, vv := range x {
			checkKeys(t, path+"[]", vv)
		}
	}
}

func TestWireFieldsAreSnakeCase(t *testing.T) {
	for _, ev := range samples() {
		b, err := Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		checkKeys(t, string(ev.Type()), v)
	}
	// Plain encoding/json of an event uses the same names (the CLI prints
	// payloads that way).
	b, _ := json.Marshal(TurnDone{TurnID: "t", ExitCode: 2, Duration: 1500 * time.Millisecond})
	if string(b) != `{"turn_id":"t","exit_code":2,"duration_ms":1500}` {
		t.Errorf("json.Marshal(TurnDone) = %s", b)
	}
}

func TestWireForm(t *testing.T) {
	b, err := Marshal(TurnStarted{TurnID: "t1", Index: 2, Input: "a && b < c"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"type":"TurnStarted","data":{"turn_id":"t1","index":2,"input":"a && b < c"}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	b, _ = Marshal(SessionIdle{})
	if string(b) != `{"v":1,"type":"SessionIdle","data":{}}` {
		t.Errorf("got %s", b)
	}
}

func TestDurationIsMilliseconds(t *testing.T) {
	b, _ := Marshal(TurnDone{TurnID: "t", Duration: 1999999 * time.Microsecond})
	if !strings.Contains(string(b), `"duration_ms":1999`) {
		t.Errorf("got %s", b)
	}
}

func TestUnmarshalFailsClosed(t *testing.T) {
	cases := []struct {
		name string
		in   string
		kind DecodeErrorKind
	}{
		{"empty", ``, DecodeSyntax},
		{"garbage", `nope`, DecodeSyntax},
		{"truncated", `{"v":1,"type":"SessionIdle","data":{}`, DecodeSyntax},
		{"not object", `[1,2]`, DecodeInvalid},
		{"null", `null`, DecodeVersion},
		{"no version", `{"type":"SessionIdle","data":{}}`, DecodeVersion},
		{"version 2", `{"v":2,"type":"SessionIdle","data":{}}`, DecodeVersion},
		{"version 2 new fields", `{"v":2,"type":"SessionIdle","data":{},"extra":1}`, DecodeVersion},
		{"version 0", `{"v":0,"type":"SessionIdle","data":{}}`, DecodeVersion},
		{"version string", `{"v":"1","type":"SessionIdle","data":{}}`, DecodeInvalid},
		{"unknown type", `{"v":1,"type":"SessionExploded","data":{}}`, DecodeUnknownType},
		{"no type", `{"v":1,"data":{}}`, DecodeUnknownType},
		{"unknown envelope field", `{"v":1,"type":"SessionIdle","data":{},"x":1}`, DecodeUnknownField},
		{"unknown data field", `{"v":1,"type":"SessionIdle","data":{"x":1}}`, DecodeUnknownField},
		{"unknown data field nested", `{"v":1,"type":"ConfigurationAdopted","data":{"changes":[{"field":"a","level":"info","x":1}],"source":""}}`, DecodeUnknownField},
		{"unknown TurnDone field", `{"v":1,"type":"TurnDone","data":{"turn_id":"t","duration":5}}`, DecodeUnknownField},
		{"go field name", `{"v":1,"type":"TurnDone","data":{"Duration":5}}`, DecodeUnknownField},
		{"missing data", `{"v":1,"type":"SessionIdle"}`, DecodeInvalid},
		{"null data", `{"v":1,"type":"SessionIdle","data":null}`, DecodeInvalid},
		{"array data", `{"v":1,"type":"SessionIdle","data":[]}`, DecodeInvalid},
		{"wrong field type", `{"v":1,"type":"TurnStarted","data":{"index":"3"}}`, DecodeInvalid},
		{"bad reason", `{"v":1,"type":"TurnInterrupted","data":{"turn_id":"t","index":1,"reason":"bored"}}`, DecodeInvalid},
		{"empty reason", `{"v":1,"type":"TurnInterrupted","data":{"turn_id":"t","index":1}}`, DecodeInvalid},
		{"bad action", `{"v":1,"type":"GateResolved","data":{"gate_id":"g","action":"maybe"}}`, DecodeInvalid},
		{"gate answered by nobody", `{"v":1,"type":"GateResolved","data":{"gate_id":"g","action":"approve","reason":"user","by":{"kind":"","pid":1,"terminal":false}}}`, DecodeInvalid},
		{"gate answered by a control", `{"v":1,"type":"GateResolved","data":{"gate_id":"g","action":"approve","reason":"user","by":{"kind":"cli\u001b","pid":1,"terminal":false}}}`, DecodeInvalid},
		{"unknown client field", `{"v":1,"type":"GateResolved","data":{"gate_id":"g","action":"approve","reason":"user","by":{"kind":"cli","pid":1,"terminal":false,"user":"root"}}}`, DecodeUnknownField},
		{"refused what", `{"v":1,"type":"Refused","data":{"turn_id":"t","what":"everything"}}`, DecodeInvalid},
		{"refused reason", `{"v":1,"type":"Refused","data":{"turn_id":"t","what":"input","reason":"because"}}`, DecodeInvalid},
		{"refused id with a space", `{"v":1,"type":"Refused","data":{"turn_id":"t","what":"conversation","id":"a b"}}`, DecodeInvalid},
		{"attention agent with a control", `{"v":1,"type":"Attention","data":{"turn_id":"t","reason":"agent","text":"","agent":"c\u0007"}}`, DecodeInvalid},
		{"bad stream", `{"v":1,"type":"OutputDelta","data":{"turn_id":"t","stream":"stdin"}}`, DecodeInvalid},
		{"bad checkpoint trigger", `{"v":1,"type":"WorkspaceCheckpointed","data":{"manifest":"` + strings.Repeat("a", 64) + `","files":1,"bytes":1,"read":0,"skipped":0,"turn_id":"","trigger":"cron"}}`, DecodeInvalid},
		{"bad checkpoint manifest", `{"v":1,"type":"WorkspaceCheckpointed","data":{"manifest":"` + strings.Repeat("A", 64) + `","files":1,"bytes":1,"read":0,"skipped":0,"turn_id":"","trigger":"turn"}}`, DecodeInvalid},
		{"short checkpoint manifest", `{"v":1,"type":"WorkspaceCheckpointed","data":{"manifest":"abc","files":1,"bytes":1,"read":0,"skipped":0,"turn_id":"","trigger":"turn"}}`, DecodeInvalid},
		{"negative checkpoint bytes", `{"v":1,"type":"WorkspaceCheckpointed","data":{"manifest":"` + strings.Repeat("a", 64) + `","files":1,"bytes":-1,"read":0,"skipped":0,"turn_id":"","trigger":"turn"}}`, DecodeInvalid},
		{"negative checkpoint read", `{"v":1,"type":"WorkspaceCheckpointed","data":{"manifest":"` + strings.Repeat("a", 64) + `","files":1,"bytes":1,"read":-1,"skipped":0,"turn_id":"","trigger":"turn"}}`, DecodeInvalid},
		{"bad skip trigger", `{"v":1,"type":"WorkspaceCheckpointSkipped","data":{"turn_id":"","trigger":"x","reason":"","bytes":0,"limit":0}}`, DecodeInvalid},
		{"bad attention reason", `{"v":1,"type":"Attention","data":{"turn_id":"t","reason":"osc99","text":""}}`, DecodeInvalid},
		{"no attention reason", `{"v":1,"type":"Attention","data":{"turn_id":"t"}}`, DecodeInvalid},
		{"attention text too long", `{"v":1,"type":"Attention","data":{"turn_id":"t","reason":"osc9","text":"` + strings.Repeat("x", MaxAttentionText+1) + `"}}`, DecodeInvalid},
		{"unknown attention field", `{"v":1,"type":"AttentionSeen","data":{"through":1,"seq":2}}`, DecodeUnknownField},
		{"bad level", `{"v":1,"type":"ConfigurationAdopted","data":{"changes":[{"level":"fatal"}]}}`, DecodeInvalid},
		{"duration overflow", `{"v":1,"type":"TurnDone","data":{"duration_ms":9223372036854775807}}`, DecodeInvalid},
		{"trailing garbage", `{"v":1,"type":"SessionIdle","data":{}}x`, DecodeTrailingData},
		{"trailing value", `{"v":1,"type":"SessionIdle","data":{}} {}`, DecodeTrailingData},
		{"trailing in data", `{"v":1,"type":"SessionIdle","data":{}}}`, DecodeTrailingData},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev, err := Unmarshal([]byte(c.in))
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Unmarshal(%s) = %#v, %v; want *DecodeError", c.in, ev, err)
			}
			if ev != nil {
				t.Errorf("got event %#v with error", ev)
			}
			if de.Kind != c.kind {
				t.Errorf("kind = %s, want %s (%v)", de.Kind, c.kind, de)
			}
			if de.Error() == "" {
				t.Error("empty message")
			}
		})
	}
	// Whitespace around a valid value is fine.
	if _, err := Unmarshal([]byte(" {\"v\":1,\"type\":\"SessionIdle\",\"data\":{}}\n")); err != nil {
		t.Errorf("whitespace: %v", err)
	}
}

type foreign struct{}

func (foreign) Type() Type   { return TypeSessionIdle }
func (foreign) Class() Class { return Enduring }
func (foreign) Scope() Scope { return SessionScope }

type unregistered struct{}

func (unregistered) Type() Type   { return "Unregistered" }
func (unregistered) Class() Class { return Enduring }
func (unregistered) Scope() Scope { return SessionScope }

func TestMarshalRefuses(t *testing.T) {
	cases := map[string]Event{
		"nil":            nil,
		"pointer":        &TurnStarted{TurnID: "t"},
		"foreign":        foreign{},
		"unregistered":   unregistered{},
		"bad reason":     TurnInterrupted{TurnID: "t", Reason: "nap"},
		"bad action":     GateResolved{GateID: "g", Action: ""},
		"bad client":     GateResolved{GateID: "g", Action: ActionDeny, By: &Client{Kind: "a b"}},
		"bad refused":    Refused{What: RefusedHook, Hook: "Session\nStart"},
		"bad stream":     OutputDelta{Stream: "tty"},
		"bad level":      ConfigurationAdopted{Changes: []Change{{Level: "debug"}}},
		"bad attention":  Attention{TurnID: "t", Reason: "beep"},
		"long attention": Attention{TurnID: "t", Reason: AttentionOSC9, Text: strings.Repeat("é", MaxAttentionText/2+1)},
	}
	for name, ev := range cases {
		b, err := Marshal(ev)
		var ee *EncodeError
		if !errors.As(err, &ee) || b != nil {
			t.Errorf("Marshal(%s) = %q, %v; want *EncodeError", name, b, err)
		}
	}
}

func TestEphemeralRefusedForPersistence(t *testing.T) {
	for _, info := range Registered() {
		z, _ := Zero(info.Type)
		var ev Event
		for _, s := range samples() {
			if s.Type() == info.Type {
				ev = s
			}
		}
		if ev == nil {
			ev = z
		}
		cerr := CheckDurable(ev)
		var eph *EphemeralError
		if info.Class == Ephemeral {
			if !errors.As(cerr, &eph) || eph.Type != info.Type {
				t.Errorf("CheckDurable(%s) = %v; want *EphemeralError", info.Type, cerr)
			}
			// Ephemeral events still encode for live delivery.
			if _, err := Marshal(ev); err != nil {
				t.Errorf("Marshal(%s): %v", info.Type, err)
			}
		} else if cerr != nil {
			t.Errorf("CheckDurable(%s): %v", info.Type, cerr)
		}
	}
}

func TestStrings(t *testing.T) {
	if Enduring.String() != "enduring" || Ephemeral.String() != "ephemeral" || Class(9).String() != "class(9)" {
		t.Error("Class.String")
	}
	if SessionScope.String() != "session" || LoopScope.String() != "loop" || Scope(0).String() != "scope(0)" {
		t.Error("Scope.String")
	}
}

func FuzzUnmarshal(f *testing.F) {
	for _, ev := range samples() {
		b, _ := Marshal(ev)
		f.Add(b)
	}
	f.Add([]byte(`{"v":2,"type":"SessionIdle","data":{}}`))
	f.Add([]byte(`{"v":1,"type":"TurnDone","data":{"duration_ms":9223372036854775807}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := Unmarshal(b)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T %v is not *DecodeError", err, err)
			}
			if ev != nil {
				t.Fatalf("event %#v returned with error", ev)
			}
			return
		}
		// Whatever decodes re-encodes, and re-decodes to the same value,
		// and the encoding is stable.
		b1, err := Marshal(ev)
		if err != nil {
			t.Fatalf("Marshal(%#v) after Unmarshal(%q): %v", ev, b, err)
		}
		ev2, err := Unmarshal(b1)
		if err != nil {
			t.Fatalf("Unmarshal(Marshal) %s: %v", b1, err)
		}
		if !reflect.DeepEqual(ev, ev2) {
			t.Fatalf("round trip differs:\n%#v\n%#v", ev, ev2)
		}
		b2, _ := Marshal(ev2)
		if !bytes.Equal(b1, b2) {
			t.Fatalf("unstable encoding:\n%s\n%s", b1, b2)
		}
	})
}

func BenchmarkMarshalTurnOutput(b *testing.B) {
	// A full output checkpoint: 64 KiB of shell output lines.
	ev := TurnOutput{TurnID: "0f8fad5b-d9cb-469f-a165-70867728950e", Text: strings.Repeat("line of shell output 0123456789\n", 2048)}
	enc, _ := Marshal(ev)
	b.Run("marshal", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Marshal(ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("round_trip", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		b.ReportAllocs()
		for b.Loop() {
			p, err := Marshal(ev)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := Unmarshal(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestEncodingIsCanonical(t *testing.T) {
	// Invalid UTF-8 in a string is written as the U+FFFD it decodes to, so
	// re-encoding a decoded event gives the original bytes; other escapes
	// are kept. Output text keeps its exact bytes (text_b64) unless it is
	// valid UTF-8 (text), so it is canonical too.
	ev := TurnOutput{TurnID: "t\xff", Text: "a\ufffdb \\ufffd \ufffd \x00 \u2028 \"q\" \ufffd"}
	b, err := Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(bytes.ReplaceAll(b, []byte(`\\ufffd`), nil), []byte(`\ufffd`)) {
		t.Errorf("escape left in %s", b)
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	want := TurnOutput{TurnID: "t\ufffd", Text: "a\ufffdb \\ufffd \ufffd \x00 \u2028 \"q\" \ufffd"}
	if got != want {
		t.Errorf("decoded %#v, want %#v", got, want)
	}
	again, _ := Marshal(got)
	if !bytes.Equal(again, b) {
		t.Errorf("not canonical:\n%s\n%s", b, again)
	}
	// Bytes that are not UTF-8 survive exactly.
	raw := TurnOutput{TurnID: "t", Offset: 3, Text: "\xe9t\xe9 \xff\xfe \xe2\x82", Elided: 1}
	b, err = Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"text_b64":"`)) || bytes.Contains(b, []byte(`"text":`)) {
		t.Errorf("invalid UTF-8 not spelled as text_b64: %s", b)
	}
	if got, err := Unmarshal(b); err != nil || got != raw {
		t.Errorf("decoded %#v, %v; want %#v", got, err, raw)
	}
	if again, _ := Marshal(raw); !bytes.Equal(again, b) {
		t.Errorf("not canonical:\n%s\n%s", b, again)
	}
}

// The two spellings of output text are refused together, and text_b64
// that is not base64 or spells valid UTF-8 (which text spells) is refused.
func TestOutputTextSpellings(t *testing.T) {
	for _, data := range []string{
		`{"turn_id":"t","offset":0,"text":"a","text_b64":"/w==","elided":0}`,
		`{"turn_id":"t","offset":0,"text_b64":"not base64!","elided":0}`,
		`{"turn_id":"t","offset":0,"text_b64":"YQ==","elided":0}`,
	} {
		if _, err := Unmarshal([]byte(`{"v":1,"type":"TurnOutput","data":` + data + `}`)); err == nil {
			t.Errorf("accepted %s", data)
		}
		if _, err := Unmarshal([]byte(`{"v":1,"type":"OutputDelta","data":` + strings.Replace(data, `"offset"`, `"stream":"stdout","offset"`, 1) + `}`)); err == nil {
			t.Errorf("accepted a delta %s", data)
		}
	}
	// Records written before text_b64: text, with U+FFFD where bytes were.
	old := `{"v":1,"type":"TurnOutput","data":{"turn_id":"t","offset":0,"text":"\ufffdt\ufffd","elided":0}}`
	if ev, err := Unmarshal([]byte(old)); err != nil || ev.(TurnOutput).Text != "\ufffdt\ufffd" {
		t.Errorf("old record: %#v, %v", ev, err)
	}
}
