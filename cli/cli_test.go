package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/config"
	"looprig/fsstore"
	"looprig/host"
	"looprig/rig"
	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/explain"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

func testEnv(json bool) (*env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, json: json, cmd: "restore"}, &out, &errb
}

// errorShapeCase is an error and what the CLI reports of it.
type errorShapeCase struct {
	name   string
	err    error
	code   int
	typ    string
	kind   string
	fields map[string]any // expected typed fields (JSON values)
}

func errorShapeCases() []errorShapeCase {
	id := uuid.MustParse("0b9e3a4e-1111-4222-8333-444455556666")
	return []errorShapeCase{
		{"usage", usageErr("run", "missing input"), 2, "UsageError", "usage", nil},
		{"bad id", &rig.BadIDError{Input: "zz"}, 2, "BadIDError", "bad_id", map[string]any{"input": "zz"}},
		{"ambiguous", &rig.AmbiguousIDError{Input: "abcd", Matches: []string{"a", "b"}}, 2, "AmbiguousIDError", "ambiguous_id",
			map[string]any{"matches": []any{"a", "b"}}},
		{"unknown profile", &config.UnknownProfileError{Name: "x", Known: []string{"default", "demo"}}, 2, "UnknownProfileError", "unknown_profile",
			map[string]any{"profile": "x", "known": []any{"default", "demo"}}},
		{"config", &config.Error{File: "/c.toml", Line: 3, Field: "profiles.w.engine", Reason: "bad"}, 1, "ConfigError", "config_invalid",
			map[string]any{"file": "/c.toml", "line": 3.0, "field": "profiles.w.engine"}},
		{"unsafe store", &StoreError{Path: "/s", Err: &fsstore.UnsafeStoreError{Path: "/s", Reason: "open", Fix: "chmod 700 /s"}}, 1, "StoreError", "unsafe_store",
			map[string]any{"path": "/s", "hint": "chmod 700 /s"}},
		{"lease held", &rig.RestoreError{Kind: rig.RestoreLeaseFailed, Session: id, Cause: fmt.Errorf("acquire: %w",
			&storage.LeaseHeldError{Name: "sessions/x", HolderEpoch: 7, Holder: storage.Holder{PID: 42, Host: "box"}})}, 4, "RestoreError", "lease_failed",
			map[string]any{"session": id.String(), "holder_epoch": 7.0, "holder": map[string]any{"acquired": nil, "pid": 42.0, "host": "box"}}},
		{"discovery", &rig.RestoreError{Kind: rig.RestoreDiscoveryFailed, Session: id, Cause: errors.New("no journal")}, 3, "RestoreError", "discovery_failed",
			map[string]any{"session": id.String()}},
		{"unknown prefix", &rig.RestoreError{Kind: rig.RestoreDiscoveryFailed, Cause: &rig.UnknownSessionError{Input: "abcd"}}, 3, "RestoreError", "discovery_failed",
			map[string]any{"session": nil, "input": "abcd"}},
		{"rejected", &rig.RestoreRejectedError{Session: id, Source: "default", Assessment: rig.Assessment{Changes: []event.Change{
			{Field: "engine", Persisted: "shell", Live: "demo", Level: "warn"}}}}, 3, "RestoreRejectedError", "config_rejected",
			map[string]any{"source": "default", "changes": []any{map[string]any{"field": "engine", "persisted": "shell", "live": "demo", "level": "warn"}}}},
		{"mismatch", &rig.ConfigMismatchError{Session: id, Persisted: "aa", Live: "bb"}, 3, "ConfigMismatchError", "config_mismatch",
			map[string]any{"persisted": "aa", "live": "bb"}},
		{"lease lost", &LeaseLostError{Session: id.String(), Epoch: 2, NewEpoch: 3, Reason: "replaced"}, 4, "LeaseLostError", "lease_lost",
			map[string]any{"epoch": 2.0, "new_epoch": 3.0, "reason": "replaced"}},
		{"root busy", &rig.LifecycleError{Stage: rig.StagePlacement, Cause: &rig.WorkspaceRootBusyError{Root: "/r", HolderEpoch: 5}}, 1, "LifecycleError", "placement",
			map[string]any{"root": "/r", "holder_epoch": 5.0}},
		{"broken journal", fmt.Errorf("replay: %w", &journal.RecordDecodeError{Seq: 9, Reason: "bad event"}), 1, "RecordDecodeError", "broken_journal",
			map[string]any{"seq": 9.0}},
		{"unknown session", &NotFoundError{Input: "abcd", Store: "/s"}, 1, "UnknownSessionError", "unknown_session", nil},
		{"unknown session id", &rig.UnknownSessionError{Input: "abcd"}, 1, "UnknownSessionError", "unknown_session", nil},
		{"profile gone", &rig.ProfileGoneError{Session: id.String(), Profile: "w", Known: []string{"default"}}, 3, "ProfileGoneError", "unknown_profile",
			map[string]any{"session": id.String(), "profile": "w", "known": []any{"default"}}},
		{"session held", fmt.Errorf("delete: %w", &storage.LeaseHeldError{Name: storage.SessionName(id.String()), HolderEpoch: 3, Holder: storage.Holder{PID: 7, Host: "h", Acquired: time.Date(2026, 1, 2, 3, 4, 5, 5e8, time.UTC)}}),
			4, "LeaseHeldError", "lease_held", map[string]any{"session": id.String(), "holder_epoch": 3.0, "holder": map[string]any{"acquired": "2026-01-02T03:04:05.5Z", "pid": 7.0, "host": "h"}}},
		{"restore: root busy", &rig.RestoreError{Kind: rig.RestoreLeaseFailed, Session: id, Cause: &rig.WorkspaceRootBusyError{Root: "/r", HolderEpoch: 5,
			Cause: &storage.LeaseHeldError{Name: storage.RootLeaseName("ab"), HolderEpoch: 5, Holder: storage.Holder{PID: 9, Host: "b"}}}}, 4, "RestoreError", "lease_failed",
			map[string]any{"cause_type": "WorkspaceRootBusyError", "root": "/r", "holder_epoch": 5.0, "holder": map[string]any{"acquired": nil, "pid": 9.0, "host": "b"}}},
		{"restore: epoch file", &rig.RestoreError{Kind: rig.RestoreLeaseFailed, Session: id, Cause: &storage.CorruptError{Path: "/s/x.epoch", Offset: -1, EpochFile: true}}, 3,
			"RestoreError", "lease_failed", map[string]any{"cause_type": "CorruptError", "path": "/s/x.epoch"}},
		{"engine unresponsive", &rig.EngineUnresponsiveError{Session: id, Turn: "t", Waited: 2 * time.Second}, 1, "EngineUnresponsiveError", "engine_unresponsive",
			map[string]any{"session": id.String(), "turn_id": "t", "waited_ms": 2000.0}},
		{"journal lease lost", &journal.JournalLeaseLostError{Name: storage.SessionName(id.String()), Epoch: 3,
			Cause: &storage.LeaseLostError{Name: storage.SessionName(id.String()), Epoch: 3, Reason: storage.LossReplaced, NewEpoch: 4}}, 4, "LeaseLostError", "lease_lost",
			map[string]any{"session": id.String(), "epoch": 3.0, "new_epoch": 4.0, "reason": "replaced"}},
		{"unknown engine", &rig.LifecycleError{Stage: rig.StageLoop, Cause: &engine.UnknownEngineError{Name: "gpt", Known: []string{"shell"}}}, 1, "LifecycleError", "loop",
			map[string]any{"stage": "loop", "engine": "gpt", "known": []any{"shell"}}},
		{"corrupt", &storage.CorruptError{Name: "sessions/x", Path: "/s/x.log", Offset: 12}, 1, "CorruptError", "corrupt",
			map[string]any{"name": "sessions/x", "path": "/s/x.log", "offset": 12.0}},
		{"protocol mismatch", &host.ProtocolMismatchError{Client: 2, Server: 1, ServerVersion: "v0.9", Session: id.String(), PID: 42,
			Hint: "stop the old host with 'looprig stop 0b9e3a4e'"}, 1, "ProtocolMismatchError", "protocol_mismatch",
			map[string]any{"session": id.String(), "pid": 42.0, "client_protocol": 2.0, "server_protocol": 1.0, "server_version": "v0.9"}},
		{"plain", errors.New("boom"), 1, "Error", "error", nil},
	}
}

func TestErrorJSONShape(t *testing.T) {
	for _, tt := range errorShapeCases() {
		t.Run(tt.name, func(t *testing.T) {
			e, out, errb := testEnv(true)
			if code := e.fail(tt.err); code != tt.code {
				t.Fatalf("exit %d, want %d", code, tt.code)
			}
			if errb.Len() != 0 {
				t.Fatalf("JSON mode wrote to stderr: %q", errb)
			}
			if !strings.HasSuffix(out.String(), "}\n") || strings.Count(out.String(), "\n") != 1 {
				t.Fatalf("not one JSON line: %q", out)
			}
			var v map[string]map[string]any
			if err := json.Unmarshal(out.Bytes(), &v); err != nil {
				t.Fatal(err)
			}
			got := v["error"]
			if got["type"] != tt.typ || got["kind"] != tt.kind || got["message"] == "" {
				t.Fatalf("got %v", got)
			}
			if !strings.HasPrefix(out.String(), `{"error":{"type":`) {
				t.Fatalf("type is not the first key: %s", out)
			}
			for k, want := range tt.fields {
				if !reflect.DeepEqual(got[k], want) {
					t.Errorf("field %s = %#v, want %#v", k, got[k], want)
				}
			}
			for k := range got {
				if k != strings.ToLower(k) || strings.Contains(k, "-") {
					t.Errorf("key %q is not snake_case", k)
				}
			}

			// Human mode: stderr, "looprig: " prefix, a hint line.
			e, out, errb = testEnv(false)
			if code := e.fail(tt.err); code != tt.code {
				t.Fatalf("human: exit %d", code)
			}
			if out.Len() != 0 || !strings.HasPrefix(errb.String(), "looprig: ") {
				t.Fatalf("human: stdout %q stderr %q", out, errb)
			}
		})
	}
}

// fromHost is err as the client of a host that failed with it gets it:
// host.Describe, through JSON, back into a *host.RemoteError.
func fromHost(t *testing.T, err error) error {
	t.Helper()
	b, merr := json.Marshal(host.Describe(err))
	if merr != nil {
		t.Fatal(merr)
	}
	var re host.RemoteError
	if uerr := json.Unmarshal(b, &re); uerr != nil {
		t.Fatal(uerr)
	}
	return fmt.Errorf("host: %w", &re)
}

// A failure a host reports is described as the same failure in this
// process: exit code, type, kind, typed fields and hint (the message is
// the host's).
func TestHostErrorsDescribedAsOwn(t *testing.T) {
	cases := errorShapeCases()
	id := uuid.MustParse("0b9e3a4e-1111-4222-8333-444455556666")
	cases = append(cases,
		errorShapeCase{name: "busy", err: &rig.BusyError{TurnID: "t", Index: 2}},
		errorShapeCase{name: "session closed", err: rig.ErrSessionClosed},
		errorShapeCase{name: "input timeout", err: &rig.InputTimeoutError{TurnID: "t", Written: 1, Len: 2}},
		errorShapeCase{name: "fenced", err: &journal.FencedError{Name: storage.SessionName(id.String()), Epoch: 3}},
		errorShapeCase{name: "replay", err: &rig.RestoreError{Kind: rig.RestoreReplayFailed, Session: id, Cause: errors.New("io")}},
		errorShapeCase{name: "timeout", err: context.DeadlineExceeded},
	)
	described := func(err error) (int, map[string]any) {
		e, out, _ := testEnv(true)
		code := e.fail(err)
		var v map[string]map[string]any
		if jerr := json.Unmarshal(out.Bytes(), &v); jerr != nil {
			t.Fatalf("%s: %v", out, jerr)
		}
		delete(v["error"], "message")
		return code, v["error"]
	}
	for _, tt := range cases {
		if !explain.Explain(tt.err).Classified() {
			continue // the CLI's own input, never a host's failure
		}
		t.Run(tt.name, func(t *testing.T) {
			code, own := described(tt.err)
			hostCode, hosts := described(fromHost(t, tt.err))
			if hostCode != code || !reflect.DeepEqual(hosts, own) {
				t.Errorf("from a host: exit %d %v\nwant exit %d %v", hostCode, hosts, code, own)
			}
		})
	}
}

// A failure a host reports is printed with --json byte for byte as the
// same failure in this process (but for its message): its fields in the
// same order (host.AppendErrorJSON's name order, which a host's error,
// decoded into a map, keeps).
func TestHostErrorsPrintedAsOwn(t *testing.T) {
	id := uuid.MustParse("0b9e3a4e-1111-4222-8333-444455556666")
	cases := append(errorShapeCases(),
		errorShapeCase{name: "replay", err: &rig.RestoreError{Kind: rig.RestoreReplayFailed, Session: id, Cause: errors.New("io")}},
		errorShapeCase{name: "busy", err: &rig.BusyError{TurnID: "t", Index: 2, Checkpointing: true}},
	)
	printed := func(err error) string {
		e, out, _ := testEnv(true)
		e.fail(err)
		dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
		var v map[string]json.RawMessage
		if jerr := dec.Decode(&v); jerr != nil {
			t.Fatalf("%s: %v", out, jerr)
		}
		// The members of the error object, in order, but the message's value.
		dec = json.NewDecoder(bytes.NewReader(v["error"]))
		var b strings.Builder
		if _, jerr := dec.Token(); jerr != nil {
			t.Fatal(jerr)
		}
		for dec.More() {
			k, _ := dec.Token()
			var raw json.RawMessage
			if jerr := dec.Decode(&raw); jerr != nil {
				t.Fatal(jerr)
			}
			if k == "message" {
				raw = json.RawMessage(`"…"`)
			}
			fmt.Fprintf(&b, "%q:%s,", k, raw)
		}
		return b.String()
	}
	for _, tt := range cases {
		if !explain.Explain(tt.err).Classified() {
			continue // the CLI's own input, never a host's failure
		}
		t.Run(tt.name, func(t *testing.T) {
			if own, hosts := printed(tt.err), printed(fromHost(t, tt.err)); hosts != own {
				t.Errorf("from a host: %s\nwant        %s", hosts, own)
			}
		})
	}
}

func TestHumanErrorsAreSanitized(t *testing.T) {
	e, _, errb := testEnv(false)
	e.fail(&rig.RestoreError{Kind: rig.RestoreReplayFailed, Cause: errors.New("evil \x1b]52;c;AAAA\x07 \u202e")})
	if strings.ContainsAny(errb.String(), "\x1b\x07\u202e") || !strings.Contains(errb.String(), "^[]52;c;AAAA^G <U+202E>") {
		t.Fatalf("stderr %q", errb)
	}
	if !strings.Contains(errb.String(), "\nhint: ") {
		t.Fatalf("no hint: %q", errb)
	}
}

func TestFailRun(t *testing.T) {
	e, _, _ := testEnv(false)
	if code := e.failRun(usageErr("run", "x")); code != exitUsage {
		t.Fatalf("usage: %d", code)
	}
	if code := e.failRun(&rig.RestoreError{Kind: rig.RestoreLeaseFailed, Cause: &storage.LeaseHeldError{}}); code != exitRunFailed {
		t.Fatalf("lease held: %d", code)
	}
	if code := e.failRun(&StoreError{Path: "/x", Err: errors.New("nope")}); code != exitRunFailed {
		t.Fatalf("store: %d", code)
	}
}

func TestParseArgs(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	j := fs.Bool("json", false, "")
	r := fs.String("rig", "", "")
	pos, after, dash, err := parseArgs(fs, []string{"abcd", "--json", "--rig", "demo", "--", "echo", "--json", "--"})
	if err != nil || !*j || *r != "demo" || !reflect.DeepEqual(pos, []string{"abcd"}) || !dash ||
		!reflect.DeepEqual(after, []string{"echo", "--json", "--"}) {
		t.Fatalf("pos %v after %v dash %v err %v json %v rig %q", pos, after, dash, err, *j, *r)
	}
	pos, _, dash, err = parseArgs(fs, []string{"--rig=x", "a", "b"})
	if err != nil || dash || !reflect.DeepEqual(pos, []string{"a", "b"}) {
		t.Fatalf("pos %v dash %v err %v", pos, dash, err)
	}
	if _, _, _, err := parseArgs(fs, []string{"--nope"}); err == nil || flagMessage(fs, err) != "unknown flag --nope" {
		t.Fatalf("err %v", err)
	}
	fs.Duration("timeout", 0, "")
	want := `invalid value "abc" for --timeout: want a duration such as 30s, 5m or 1h`
	if _, _, _, err := parseArgs(fs, []string{"--timeout", "abc"}); err == nil || flagMessage(fs, err) != want {
		t.Fatalf("a bad duration: %q, want %q", flagMessage(fs, err), want)
	}
}

func TestProfileFlags(t *testing.T) {
	root := t.TempDir()
	def := rig.DefaultProfile()
	tests := []struct {
		pf      profileFlags
		base    rig.Profile
		want    rig.Placement
		root    string
		wantErr string
	}{
		{profileFlags{}, def, rig.PlacementSession, "", ""},
		{profileFlags{placement: "exclusive", root: root}, def, rig.PlacementExclusive, root, ""},
		{profileFlags{placement: "shared", root: root}, def, rig.PlacementShared, root, ""},
		{profileFlags{placement: "exclusive"}, def, "", "", "needs --root"},
		{profileFlags{root: root}, def, "", "", "--root needs --placement"},
		{profileFlags{placement: "session", root: root}, def, "", "", "does not go with"},
		{profileFlags{placement: "moon"}, def, "", "", "must be session"},
		{profileFlags{root: root}, rig.Profile{Name: "x", Engine: "shell", Placement: rig.PlacementShared, Root: "/old"}, rig.PlacementShared, root, ""},
		{profileFlags{placement: "session"}, rig.Profile{Name: "x", Engine: "shell", Placement: rig.PlacementShared, Root: "/old"}, rig.PlacementSession, "", ""},
	}
	for i, tt := range tests {
		p, err := tt.pf.apply("new", tt.base)
		if tt.wantErr != "" {
			var ue *UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%d: err %v, want usage error %q", i, err, tt.wantErr)
			}
			continue
		}
		if err != nil || p.Placement != tt.want || p.Root != tt.root {
			t.Errorf("%d: %+v, %v", i, p, err)
		}
	}
}

func TestStoreDirDefaults(t *testing.T) {
	e := &env{}
	t.Setenv("LOOPRIG_STORE", "/a")
	if d, _ := e.storeDir(); d != "/a" {
		t.Fatal(d)
	}
	t.Setenv("LOOPRIG_STORE", "")
	t.Setenv("XDG_STATE_HOME", "/state")
	if d, _ := e.storeDir(); d != "/state/looprig" {
		t.Fatal(d)
	}
	t.Setenv("XDG_STATE_HOME", "relative") // ignored, as the XDG spec says
	t.Setenv("HOME", "/home/u")
	if d, _ := e.storeDir(); d != "/home/u/.local/state/looprig" {
		t.Fatal(d)
	}
	e = &env{store: "/flag", storeSet: true}
	if d, _ := e.storeDir(); d != "/flag" {
		t.Fatal(d)
	}
}

func TestReadLine(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		w.Write([]byte("y"))
		time.Sleep(20 * time.Millisecond)
		w.Write([]byte("es\nmore"))
	}()
	line, err := readLine(context.Background(), r)
	if err != nil || line != "yes" {
		t.Fatalf("readLine = %q, %v", line, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	r2, w2, _ := os.Pipe()
	defer r2.Close()
	defer w2.Close()
	if _, err := readLine(ctx, r2); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("readLine did not stop with its context: %v", err)
	}
	w.Close()
	if err := waitEOF(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

// TestMainInProcess drives Main without a subprocess, so the race detector
// sees the command paths.
func TestMainInProcess(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(append([]string{"--store", store}, args...), strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, out, _ := run("ls", "--json"); code != 0 || out != "[]\n" {
		t.Fatalf("ls --json on a new store: %d %q", code, out)
	}
	code, out, errs := run("new", "--json", "--title", "in-process")
	if code != 0 {
		t.Fatalf("new: %d %s", code, errs)
	}
	var created struct{ ID string }
	json.Unmarshal([]byte(out), &created)
	// The host run starts is this test binary, which ends at once
	// (TestMain): run says so and runs the turn itself.
	if code, out, errs := run("run", created.ID, "--", "printf", "'a\\nb'"); code != 0 || out != "a\nb" ||
		!strings.Contains(errs, "ended before it was ready") || !strings.Contains(errs, "running the turn in this process instead") ||
		!strings.Contains(errs, "\nlooprig: turn 0 exited 0") {
		t.Fatalf("run: %d %q %q", code, out, errs)
	}
	if code, out, errs := run("run", "--in-process", created.ID, "--", "echo", "here"); code != 0 || out != "here\n" ||
		strings.Contains(errs, "host") {
		t.Fatalf("run --in-process: %d %q %q", code, out, errs)
	}
	if code, out, _ := run("log", created.ID[:6]); code != 0 || !strings.Contains(out, "TurnDone") {
		t.Fatalf("log: %d %s", code, out)
	}
	if code, out, _ := run("restore", created.ID, "--json"); code != 0 || !strings.Contains(out, `"interrupted":[]`) {
		t.Fatalf("restore: %d %s", code, out)
	}
	if code, out, _ := run("ls"); code != 0 || !strings.Contains(out, "in-process") {
		t.Fatalf("ls: %d %s", code, out)
	}
	if code, _, _ := run("lease", "break", created.ID); code != exitUsage {
		t.Fatalf("lease break without --yes: %d", code)
	}
}
