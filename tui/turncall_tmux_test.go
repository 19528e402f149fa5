package tui

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTmuxTurnCall: a turn in a session in the background sends a
// desktop notification (OSC 9). The TUI marks the session ("! note"),
// announces it (the bell, its notify mode), and w goes to it; opening it
// is looking at it: the mark goes, and so does ls --json's attention (an
// AttentionSeen from the TUI in the journal).
func TestTmuxTurnCall(t *testing.T) {
	looprig := binary(t)
	e := newTmux(t, looprig)
	cfgDir := filepath.Join(e.home, "config", "looprig")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(cfgDir, "config.toml")
	if err := os.WriteFile(cfg, []byte("notify = \"bell\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(looprig, append([]string{"--store", e.store, "--config", cfg}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("looprig %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	newID := func(title string) string {
		var res struct {
			ID string `json:"id"`
		}
		out := cli("new", "--scratch", "--detach", "--json", "--title", title)
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.ID == "" {
			t.Fatalf("new --detach --json printed %q (%v)", out, err)
		}
		return res.ID
	}
	attention := func(id string) *struct{ Reason, Text string } {
		var rows []struct {
			ID        string                         `json:"id"`
			Attention *struct{ Reason, Text string } `json:"attention"`
		}
		if err := json.Unmarshal([]byte(cli("ls", "--json")), &rows); err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.ID == id {
				return r.Attention
			}
		}
		t.Fatalf("session %s not listed", id)
		return nil
	}
	caller := newID("caller")
	newID("quiet") // newest: selected
	bell := func() string {
		return strings.TrimSpace(e.Run("display-message", "-p", "-t", "calls", "#{window_bell_flag}"))
	}

	e.start("calls")
	e.started("calls")
	e.WaitFor("calls", 10*time.Second, "caller", "quiet")
	cli("run", caller, "--detach", "--", `printf '\033]9;build done\007'; sleep 60`)
	screen := e.WaitFor("calls", 10*time.Second, "! note")
	if !strings.Contains(screen, "caller") {
		t.Fatalf("the mark is not on the caller's row:\n%s", screen)
	}
	deadline := time.Now().Add(10 * time.Second)
	for bell() != "1" {
		if time.Now().After(deadline) {
			t.Fatalf("the call in the background was not announced (no bell); screen:\n%s", e.Screen("calls"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if a := attention(caller); a == nil || a.Reason != "osc9" || a.Text != "build done" {
		t.Fatalf("ls --json attention %+v, want osc9 \"build done\"", a)
	}

	e.Send("calls", "w")
	e.WaitFor("calls", 10*time.Second, "attached to "+caller[:8])
	deadline = time.Now().Add(10 * time.Second)
	for {
		s := e.Screen("calls")
		if !strings.Contains(s, "! note") && strings.Contains(s, "seen (by tui)") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("opening the session did not clear its mark; screen:\n%s", s)
		}
		time.Sleep(100 * time.Millisecond)
	}
	deadline = time.Now().Add(10 * time.Second)
	for attention(caller) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("ls --json still has the attention: %+v", attention(caller))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if log := cli("log", caller, "--json"); !strings.Contains(log, `"type":"AttentionSeen"`) || !strings.Contains(log, `"from":"tui"`) {
		t.Errorf("no AttentionSeen from the TUI in the journal:\n%s", log)
	}
}
