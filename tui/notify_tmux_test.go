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

// TestTmuxNotifyBell: a gate opened in a session in the background rings
// the terminal's bell, which sets tmux's bell flag on the TUI's window; a
// gate in the session in front of the user does not.
func TestTmuxNotifyBell(t *testing.T) {
	looprig := binary(t)
	e := newTmux(t, looprig)
	cfgDir := filepath.Join(e.home, "config", "looprig")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(cfgDir, "config.toml")
	// tui_fps as a user who wants a key's frame sooner sets it.
	if err := os.WriteFile(cfg, []byte("notify_after = \"1h\"\ntui_fps = 120\n[profiles.gated]\ngate_policy = [\"touch\"]\n"), 0o600); err != nil {
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
		out := cli("new", "--scratch", "--detach", "--json", "--rig", "gated", "--title", title)
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.ID == "" {
			t.Fatalf("new --json printed %q (%v)", out, err)
		}
		return res.ID
	}
	back := newID("background")
	front := newID("front") // newest: selected
	bell := func() string {
		return strings.TrimSpace(e.Run("display-message", "-p", "-t", "bell", "#{window_bell_flag}"))
	}

	e.start("bell")
	e.started("bell")
	e.WaitFor("bell", 10*time.Second, "front", "background")
	if f := bell(); f != "0" {
		t.Fatalf("bell flag %q before any gate", f)
	}
	cli("run", front, "--detach", "--", "touch here")
	e.WaitFor("bell", 10*time.Second, "? gate")
	time.Sleep(1500 * time.Millisecond) // a listing or two
	if f := bell(); f != "0" {
		t.Fatalf("a gate in the session in front of the user rang the bell (flag %q)", f)
	}
	cli("run", back, "--detach", "--", "touch there")
	deadline := time.Now().Add(10 * time.Second)
	for bell() != "1" {
		if time.Now().After(deadline) {
			t.Fatalf("a gate in the background did not ring the bell; screen:\n%s", e.Screen("bell"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.Send("bell", "C-c") // a turn runs in the attached session: q would ask
	e.WaitFor("bell", 20*time.Second, "[exit 0]")
	if b, err := os.ReadFile(filepath.Join(e.store, "tui.log")); err != nil || !strings.Contains(string(b), " fps=120") {
		t.Errorf("the TUI did not draw at tui_fps = 120 (its log: %v):\n%s", err, b)
	}
	cli("stop", back)
	cli("stop", front)
}
