package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"looprig/internal/agenttest"
)

// agentScript is the scripted model of the agent tests: "use the tool"
// calls Bash (echo made > made.txt), "hang" holds the reply until the test
// ends (a turn killed midway), anything else is answered with the
// prompt's echo.
type agentScript struct {
	tools   atomic.Int64 // tool calls so far: each has an id of its own
	hanging chan struct{}
	hung    chan struct{} // closed when a request hangs
	once    sync.Once
}

func newAgentScript() *agentScript {
	return &agentScript{hanging: make(chan struct{}), hung: make(chan struct{})}
}

func (s *agentScript) answer(req agenttest.Request) agenttest.Reply {
	if res, ok := req.LastToolResult(); ok {
		return agenttest.Reply{Text: "the tool said: " + string(res.Content)}
	}
	p := req.Prompt()
	switch {
	case strings.Contains(p, "use the tool"):
		return agenttest.Reply{ToolID: fmt.Sprintf("toolu_%d", s.tools.Add(1)), ToolName: "Bash", ToolInput: map[string]any{"command": "echo made > made.txt && echo done", "description": "make a file"}}
	case strings.Contains(p, "hang"):
		s.once.Do(func() { close(s.hung) })
		<-s.hanging
		return agenttest.Reply{Text: "too late"}
	}
	return agenttest.Reply{Text: "you said: " + p}
}

// agentHome makes h's sessions of profile "agent" Claude Code sessions
// against srv, with their own ~/.claude.
func agentHome(t *testing.T, h *harness, srv *agenttest.Server, claude string) {
	t.Helper()
	h.writeConfig("[profiles.agent]\nengine = \"claude\"\nagent_command = \"" + claude + "\"\nagent_gate_timeout = \"1m\"\n")
	for _, kv := range agenttest.Env(srv, h.home) {
		if !strings.HasPrefix(kv, "HOME=") {
			h.env = append(h.env, kv)
		}
	}
}

// newAgentSession creates a session of profile "agent" live in a host and
// returns its id and workspace.
func (h *harness) newAgentSession() (id, workspace string) {
	h.t.Helper()
	v := decode[struct {
		ID        string `json:"id"`
		Workspace string `json:"workspace"`
	}](h.t, h.must(0, "new", "--rig", "agent", "--scratch", "--detach", "--json").stdout)
	return v.ID, v.Workspace
}

// waitTurnEnd waits until session id's journal records n turn ends.
func (h *harness) waitTurnEnd(id string, n int) []record {
	h.t.Helper()
	return h.waitCount(id, "TurnDone TurnFailed TurnInterrupted", n)
}

// waitCount waits until session id's journal holds n records of the
// types listed (space-separated), and returns it.
func (h *harness) waitCount(id, types string, n int) []record {
	h.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		recs := h.log(id)
		count := 0
		for _, r := range recs {
			if strings.Contains(" "+types+" ", " "+r.Type+" ") {
				count++
			}
		}
		if count >= n {
			return recs
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("session %s: %d records of %s, want %d: %+v", id, count, types, n, recs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func outputOf(recs []record) string {
	var b strings.Builder
	for _, r := range recs {
		if r.Type == "TurnOutput" {
			b.WriteString(r.Text)
		}
	}
	return b.String()
}

// A Claude Code session in a host: a turn streams the model's text; a
// tool call is a gate, approved (the command runs) or denied (the agent
// is told); the host is SIGKILLed in the middle of a turn, and the next
// turn, in a restored session, carries the earlier conversation.
func TestAgentSession(t *testing.T) {
	claude := agenttest.Claude(t)
	h := newHarness(t)
	script := newAgentScript()
	srv := agenttest.NewServer(t, script.answer)
	t.Cleanup(func() { close(script.hanging) })
	agentHome(t, h, srv, claude)

	id, ws := h.newAgentSession()
	if r := h.must(0, "run", id, "--", "say hello"); !strings.Contains(r.stdout, "you said: say hello") {
		t.Fatalf("run: %q", r.stdout)
	}

	for i, answer := range []string{"approve", "deny"} {
		h.must(0, "run", id, "--detach", "--", "please use the tool")
		h.waitCount(id, "GateOpened", i+1)
		r := h.must(0, "gate", id, answer)
		if !strings.Contains(r.stdout, "if not answered): echo made > made.txt && echo done") {
			t.Errorf("gate %s: %q", answer, r.stdout)
		}
		recs := h.waitTurnEnd(id, 2+i)
		out := outputOf(recs)
		reqs := srv.Requests()
		res, _ := reqs[len(reqs)-1].LastToolResult()
		switch answer {
		case "approve":
			if !strings.Contains(out, "the tool said: ") || !strings.Contains(string(res.Content), "done") {
				t.Errorf("approved: output %q, tool result %s", out, res.Content)
			}
			if b, err := os.ReadFile(filepath.Join(ws, "made.txt")); err != nil || string(b) != "made\n" {
				t.Errorf("made.txt in %s: %q %v", ws, b, err)
			}
			os.Remove(filepath.Join(ws, "made.txt"))
		case "deny":
			if !res.IsError || !strings.Contains(string(res.Content), "denied it in looprig") {
				t.Errorf("denied: tool result %+v, output %q", res, out)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); err == nil {
		t.Error("the denied command ran")
	}

	// Killed mid-turn; the next turn continues the conversation.
	h.must(0, "run", id, "--detach", "--", "hang on")
	<-script.hung
	h.killHostOf(id)
	r := h.must(0, "run", id, "--", "after the crash")
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	if !strings.Contains(r.stdout, "you said: after the crash") || !last.Carries("say hello") || !last.Carries("you said: say hello") {
		t.Errorf("after the crash: %q; request carries the first turn: %v", r.stdout, last.Carries("say hello"))
	}
	recs := h.log(id)
	var convs []string
	for _, rec := range recs {
		if rec.Type == "AgentConversation" {
			convs = append(convs, rec.TurnID)
		}
	}
	if len(convs) != 2 || convs[0] != "" || convs[1] == "" {
		t.Errorf("AgentConversation records (turn ids) %q: want the minted one, then the first turn's", convs)
	}
	var rows []struct {
		ID           string `json:"id"`
		Conversation *struct {
			Agent string `json:"agent"`
			ID    string `json:"id"`
		} `json:"conversation"`
	}
	if err := json.Unmarshal([]byte(h.must(0, "ls", "--json").stdout), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Conversation == nil || rows[0].Conversation.Agent != "claude" || len(rows[0].Conversation.ID) != 36 ||
		!strings.Contains(h.must(0, "log", id, "--json").stdout, `"type":"AgentConversation"`) ||
		!strings.Contains(h.must(0, "log", id).stdout, "claude conversation "+rows[0].Conversation.ID) {
		t.Errorf("ls --json names the conversation %+v; want the journaled one", rows[0].Conversation)
	}
}

// With no credentials the turn fails with the typed not-logged-in error.
func TestAgentNotLoggedIn(t *testing.T) {
	claude := agenttest.Claude(t)
	h := newHarness(t)
	srv := agenttest.NewServer(t, newAgentScript().answer)
	agentHome(t, h, srv, claude)
	h.env = append(h.env, "ANTHROPIC_API_KEY=", "ANTHROPIC_BASE_URL=")
	id, _ := h.newAgentSession()
	r := h.run("run", id, "--", "hello")
	if r.code == 0 || !strings.Contains(r.stderr+r.stdout, "not logged in: run `claude` and /login") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
}

// Two homes on one NATS server, as two machines: A's host dies in the
// middle of a turn; B's next turn continues the conversation of A's
// turns, from the transcript in the store.
func TestAgentTravelsBetweenHomes(t *testing.T) {
	claude := agenttest.Claude(t)
	a, b := twoHomesOnNATS(t)
	script := newAgentScript()
	model := agenttest.NewServer(t, script.answer)
	t.Cleanup(func() { close(script.hanging) })
	agentHome(t, a, model, claude)
	agentHome(t, b, model, claude)

	id, _ := a.newAgentSession()
	a.must(0, "run", id, "--", "remember the word tangerine")
	a.must(0, "run", id, "--detach", "--", "hang on")
	<-script.hung
	a.killHostOf(id)

	b.runOnceFree(id, "--rig", "agent", "--", "what was the word?")
	reqs := model.Requests()
	if last := reqs[len(reqs)-1]; !last.Carries("remember the word tangerine") {
		t.Errorf("B's request does not carry A's conversation: %+v", last.Messages)
	}
	b.must(0, "stop", id)
}

// runOnceFree runs looprig run ID ARGS... until it succeeds, for at most
// 30 s: the session is free once the store has seen its dead holder's
// lease expire (NATS) or its lock released.
func (h *harness) runOnceFree(id string, args ...string) result {
	h.t.Helper()
	var r result
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if r = h.run(append([]string{"run", id}, args...)...); r.code == 0 || time.Now().After(deadline) {
			break
		}
	}
	if r.code != 0 {
		h.t.Fatalf("run %s: exit %d\n%s\n%s", id, r.code, r.stdout, r.stderr)
	}
	return r
}

// codexHome makes h's sessions of profile "codex" Codex sessions against
// srv, with a Codex home of their own.
func codexHome(t *testing.T, h *harness, srv *agenttest.Server, codex string) {
	t.Helper()
	h.writeConfig("[profiles.codex]\nengine = \"codex\"\nagent_command = \"" + codex + "\"\n")
	h.env = append(h.env, agenttest.CodexHome(t, srv, h.home)...)
}

// A Codex session on two homes sharing a NATS store: Codex names the
// conversation at the first turn, the journal records it, and after A's
// host is SIGKILLed B's turn resumes it from the stored transcript.
func TestCodexTravelsBetweenHomes(t *testing.T) {
	codex := agenttest.Codex(t)
	a, b := twoHomesOnNATS(t)
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		return agenttest.Reply{Text: "codex heard: " + strings.TrimSpace(req.Prompt())}
	})
	codexHome(t, a, model, codex)
	codexHome(t, b, model, codex)

	v := decode[struct {
		ID string `json:"id"`
	}](t, a.must(0, "new", "--rig", "codex", "--detach", "--json").stdout)
	id := v.ID
	if r := a.must(0, "run", id, "--", "remember the word quince"); !strings.Contains(r.stdout, "codex heard: remember the word quince") {
		t.Fatalf("run on A: %q", r.stdout)
	}
	recs := a.log(id)
	var named bool
	for _, rec := range recs {
		named = named || (rec.Type == "AgentConversation" && rec.TurnID != "")
	}
	if !named {
		t.Fatalf("no AgentConversation reported by the first turn: %+v", recs)
	}
	a.waitLog(id, "SessionIdle") // the turn's checkpoint is on record: the workspace travels
	a.killHostOf(id)

	b.runOnceFree(id, "--rig", "codex", "--", "what was the word?")
	reqs := model.Requests()
	if last := reqs[len(reqs)-1]; !last.Carries("remember the word quince") {
		t.Errorf("B's request does not carry A's conversation")
	}
	b.must(0, "stop", id)
}
