package tui

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"looprig/internal/agenttest"
)

// TestTmuxClaudeScreen: Claude Code's own interface (agent_interactive,
// the real CLI against the scripted model) in the TUI's events pane: its
// screen shows the answer and the prompt box, and survives the attention
// the agent raises at the end of each answer (its Stop hook, journaled as
// an Attention between its output chunks); f gives it the keys, and what
// is typed shows in its prompt box at once; Enter submits it, and the
// screen survives the next answer's attention too.
func TestTmuxClaudeScreen(t *testing.T) {
	if testing.Short() {
		t.Skip("tmux end-to-end tests are slow; skipped with -short")
	}
	claude := agenttest.Claude(t)
	looprig := binary(t)
	e := newTmux(t, looprig)
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		return agenttest.Reply{Text: "you said: " + strings.TrimSpace(req.Prompt())}
	})
	agentEnv := agenttest.Env(model, e.home)
	cfgDir := filepath.Join(e.home, "config", "looprig")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := "[profiles.agent]\nengine = \"claude\"\nagent_command = \"" + claude + "\"\nagent_gate_timeout = \"1m\"\nagent_interactive = true\n"
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(looprig, append([]string{"--store", e.store}, args...)...)
		cmd.Dir = e.project
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(e.home, "config"), "XDG_STATE_HOME="+filepath.Join(e.home, "state"), "LOOPRIG_STORE=")
		cmd.Env = append(cmd.Env, agentEnv...) // the host's, so the agent's
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("looprig %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	var s struct {
		ID        string `json:"id"`
		Workspace string `json:"workspace"`
	}
	if err := json.Unmarshal([]byte(cli("new", "--rig", "agent", "--scratch", "--detach", "--json", "--title", "agent")), &s); err != nil {
		t.Fatal(err)
	}
	seedClaude(t, agentEnv, s.Workspace)
	attentions := func() int {
		n := 0
		for _, l := range strings.Split(cli("log", s.ID, "--json"), "\n") {
			if strings.Contains(l, `"type":"Attention"`) {
				n++
			}
		}
		return n
	}
	waitAttentions := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); attentions() < n; time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no attention %d from the agent; screen:\n%s", n, e.Screen("tui"))
			}
		}
	}

	e.start("tui")
	e.started("tui")
	e.WaitFor("tui", 10*time.Second, "agent")
	cli("run", s.ID, "--detach", "--", "say hello")
	e.WaitFor("tui", 30*time.Second, "turn 0's screen", "you said: say hello", "❯")
	waitAttentions(1)
	time.Sleep(time.Second) // the TUI has had the attention and the output after it
	scr := e.WaitFor("tui", 5*time.Second, "turn 0's screen", "Claude Code v", "❯ say hello", "you said: say hello", "auto mode on")
	if strings.Contains(scr, "full-screen program ended") {
		t.Fatalf("the attention ended the screen view:\n%s", scr)
	}

	e.Send("tui", "f")
	e.WaitFor("tui", 5*time.Second, "keys go to the full-screen program")
	e.Type("tui", "typed at once")
	e.WaitFor("tui", 3*time.Second, "❯\u00a0typed at once") // (the prompt box has a no-break space after ❯)
	e.Send("tui", "Enter")
	e.WaitFor("tui", 30*time.Second, "you said: typed at once")
	waitAttentions(2)
	time.Sleep(time.Second)
	scr = e.WaitFor("tui", 5*time.Second, "turn 0's screen", "❯ say hello", "you said: typed at once", "auto mode on")
	if strings.Contains(scr, "full-screen program ended") || strings.Contains(scr, "Claude Code\n") {
		t.Fatalf("the screen did not survive the second attention:\n%s", scr)
	}
	e.Type("tui", "more")
	e.WaitFor("tui", 3*time.Second, "❯\u00a0more")
	e.Send("tui", "C-]")
	e.WaitFor("tui", 5*time.Second, "keys go to looprig again")
}

// seedClaude marks Claude Code's first run done and dir trusted in the
// configuration env names, as on a machine where the user ran claude
// before: its interface opens without the onboarding dialogs (which need
// the network).
func seedClaude(t *testing.T, env []string, dir string) {
	t.Helper()
	var config string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "CLAUDE_CONFIG_DIR="); ok {
			config = v
		}
	}
	projects := map[string]any{dir: map[string]any{"hasTrustDialogAccepted": true}}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		projects[real] = map[string]any{"hasTrustDialogAccepted": true}
	}
	b, _ := json.Marshal(map[string]any{
		"hasCompletedOnboarding": true, "theme": "dark", "projects": projects,
		"customApiKeyResponses": map[string]any{"approved": []string{"sk-looprig-test"}, "rejected": []string{}},
	})
	if err := os.MkdirAll(config, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(config, ".claude.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}
