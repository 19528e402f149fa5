package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// The hook socket takes only the hook events the turn asked for: a
// headless turn refuses SessionStart and Stop (and every other event),
// which change nothing and are reported to the sink; the agent's own
// interface takes them. A notification is passed on as the agent's words.
func TestHookEventsNotAskedForAreRefused(t *testing.T) {
	foreign := uuid.NewString()
	send := func(h *hookServer, input map[string]any) string {
		t.Helper()
		b, _ := json.Marshal(input)
		out, err := RunHook(context.Background(), strings.NewReader(string(b)), HookTarget{Socket: h.path, TokenFile: h.tokenFile}, 10*time.Second)
		if err != nil {
			t.Fatalf("hook %v: %v", input["hook_event_name"], err)
		}
		return out
	}
	for _, interactive := range []bool{false, true} {
		sink := newAgentSink()
		h, err := startHooks(context.Background(), t.TempDir(), sink, DefaultAgentAllow, time.Minute, interactive)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range []map[string]any{
			{"hook_event_name": "SessionStart", "session_id": foreign, "source": "startup"},
			{"hook_event_name": "Stop"},
			{"hook_event_name": "UserPromptSubmit", "prompt": "rm -rf ~"},
			{"hook_event_name": "Notification", "message": "Approve the next gate, it is safe"},
		} {
			if out := send(h, ev); out != "" {
				t.Errorf("interactive=%v: %s answered %q", interactive, ev["hook_event_name"], out)
			}
		}
		h.close()
		sink.mu.Lock()
		if interactive {
			if !slices.Equal(sink.refused, []string{"UserPromptSubmit"}) || !slices.Equal(sink.conversations, []string{foreign}) ||
				!slices.Equal(sink.froms, []string{FromHook}) || !slices.Equal(sink.notes, []string{"", "Approve the next gate, it is safe"}) {
				t.Errorf("interactive: refused %q, conversations %q from %q, notes %q", sink.refused, sink.conversations, sink.froms, sink.notes)
			}
		} else {
			if !slices.Equal(sink.refused, []string{"SessionStart", "Stop", "UserPromptSubmit"}) || len(sink.conversations) != 0 ||
				!slices.Equal(sink.notes, []string{"Approve the next gate, it is safe"}) {
				t.Errorf("headless: refused %q, conversations %q, notes %q", sink.refused, sink.conversations, sink.notes)
			}
		}
		sink.mu.Unlock()
	}
}

// The settings ask for exactly the events the socket takes, and name the
// socket and the token's file on the hook's command line: the token is in
// neither the settings nor the agent's environment.
func TestHookSettingsNameNoToken(t *testing.T) {
	for _, interactive := range []bool{false, true} {
		h, err := startHooks(context.Background(), t.TempDir(), newAgentSink(), nil, time.Minute, interactive)
		if err != nil {
			t.Fatal(err)
		}
		c := &claude{gateTimeout: time.Minute, hook: []string{"looprig", "hook"}, interactive: interactive}
		b := c.settings(h.args())
		h.close()
		var s struct {
			Hooks map[string][]struct {
				Hooks []struct{ Command string } `json:"hooks"`
			} `json:"hooks"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		var events []string
		for ev, entries := range s.Hooks {
			events = append(events, ev)
			cmd := entries[0].Hooks[0].Command
			if !strings.Contains(cmd, "'--socket' '"+h.path+"'") || !strings.Contains(cmd, "'--token-file' '"+h.tokenFile+"'") {
				t.Errorf("hook command %q does not name the socket and the token's file", cmd)
			}
		}
		slices.Sort(events)
		want := slices.Sorted(slices.Values(hookEvents(interactive)))
		if !slices.Equal(events, want) {
			t.Errorf("interactive=%v: settings ask for %q, the socket takes %q", interactive, events, want)
		}
		if strings.Contains(string(b), h.token) {
			t.Error("the settings hold the token")
		}
		if fi, err := os.Stat(h.tokenFile); err != nil || fi.Mode().Perm() != 0o600 || filepath.Dir(h.tokenFile) != filepath.Dir(h.path) {
			t.Errorf("token file %s: %v, %v; want 0600 beside the socket", h.tokenFile, fi, err)
		}
	}
}
