//go:build linux

package engine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"looprig/internal/agenttest"
)

// The real Claude Code CLI under agent_allow ["Bash(git status:*)"]: the
// scripted model calls Bash once with each command, one after the other,
// in one turn. `git status` alone runs without a gate; each bypass form
// opens a gate, which the test denies, and nothing it would have made
// exists.
func TestClaudeAllowRuleGatesEveryBypass(t *testing.T) {
	commands := []string{
		"git status",
		"git status; touch PWNED1",
		"git status && touch PWNED2",
		"git status || touch PWNED3",
		"git status | touch PWNED4",
		"git status $(touch PWNED5)",
		"git status `touch PWNED6`",
		"git status <(touch PWNED7)",
		"git status\ntouch PWNED8",
		"eval 'touch PWNED9'",
		"git statusX; touch PWNED10",
		"git status > PWNED11",
		"bash -c 'git status; touch PWNED12'",
	}
	var mu sync.Mutex
	next := 0
	script := func(req agenttest.Request) agenttest.Reply {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := req.LastToolResult(); !ok && !strings.Contains(req.Prompt(), "use the tool") {
			return agenttest.Reply{Text: "Hello from the script."}
		}
		if next == len(commands) {
			return agenttest.Reply{Text: "all done"}
		}
		next++
		return agenttest.Reply{ToolID: fmt.Sprintf("toolu_%d", next), ToolName: "Bash", ToolInput: map[string]any{"command": commands[next-1], "description": "check"}}
	}
	r := newClaudeRig(t, script, Config{AgentAllow: []string{"Bash(git status:*)"}})
	if out, err := exec.Command("git", "init", "-q", r.dir).CombinedOutput(); err != nil {
		t.Skipf("git init: %v %s", err, out)
	}
	sink := newAgentSink()
	sink.gate = func(context.Context, string) (bool, error) { return false, nil }
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := r.eng.Run(ctx, Turn{ID: "t", Input: "please use the tool", Dir: r.dir, Env: r.env, Conversation: r.convID}, sink); err != nil {
		t.Fatalf("Run: %v (output %q)", err, sink.text(Stdout))
	}
	if next != len(commands) {
		t.Fatalf("the agent made %d of %d calls", next, len(commands))
	}
	reqs := r.srv.Requests()
	last := reqs[len(reqs)-1]
	// git status ran, with no gate.
	res, ok := last.ToolResult("toolu_1")
	if !ok || res.IsError || !strings.Contains(string(res.Content), "On branch") {
		t.Errorf("git status: result %+v", res)
	}
	gates := sink.gateCalls()
	if len(gates) != len(commands)-1 {
		t.Errorf("%d gates for %d bypass forms: %q", len(gates), len(commands)-1, gates)
	}
	for i, c := range commands[1:] {
		marker := fmt.Sprintf("PWNED%d", i+1)
		if i >= len(gates) || !strings.Contains(gates[i], marker) {
			t.Errorf("no gate for %q", c)
		}
		res, _ := last.ToolResult(fmt.Sprintf("toolu_%d", i+2))
		if !res.IsError || !strings.Contains(string(res.Content), "denied it in looprig") {
			t.Errorf("%q: result %+v, want the denial", c, res)
		}
		if _, err := os.Stat(filepath.Join(r.dir, marker)); err == nil {
			t.Errorf("%q ran: %s exists", c, marker)
		}
	}
	if t.Failed() || testing.Verbose() {
		for i, c := range commands {
			res, _ := last.ToolResult(fmt.Sprintf("toolu_%d", i+1))
			t.Logf("%q → error %v: %.80s", c, res.IsError, res.Content)
		}
	}
}
