//go:build linux

package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"looprig/internal/agenttest"
)

// codexRig is the real Codex CLI against the scripted server, its home
// in $CODEX_HOME (which TranscriptPath reads in this process too).
type codexRig struct {
	eng Engine
	srv *agenttest.Server
	dir string
	env []string
}

func newCodexRig(t *testing.T) *codexRig {
	t.Helper()
	srv := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		return agenttest.Reply{Text: "codex heard: " + strings.TrimSpace(req.Prompt())}
	})
	env := agenttest.CodexHome(t, srv, t.TempDir())
	t.Setenv("CODEX_HOME", strings.TrimPrefix(env[0], "CODEX_HOME="))
	return &codexRig{eng: NewCodex(Config{AgentCommand: agenttest.Codex(t)}), srv: srv, dir: t.TempDir(), env: env}
}

func (r *codexRig) run(t *testing.T, input, conversation string, sink *agentSink) (Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return r.eng.Run(ctx, Turn{ID: "t", Input: input, Dir: r.dir, Env: r.env, Conversation: conversation, Resume: conversation != ""}, sink)
}

// Codex names the conversation at the first turn; the next resumes it;
// its transcript, put in another Codex home, is found there by its id.
func TestCodexConversation(t *testing.T) {
	r := newCodexRig(t)
	sink := newAgentSink()
	if _, err := r.run(t, "remember plums", "", sink); err != nil {
		t.Fatalf("Run: %v (%q)", err, sink.text(Stdout)+sink.text(Stderr))
	}
	if out := sink.text(Stdout); !strings.Contains(out, "codex heard: remember plums\n") {
		t.Errorf("output %q", out)
	}
	if len(sink.conversations) != 1 {
		t.Fatalf("conversations reported: %q", sink.conversations)
	}
	id := sink.conversations[0]
	path, err := r.eng.(Agent).TranscriptPath(r.dir, id)
	if err != nil {
		t.Fatal(err)
	}
	transcript, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the transcript is not where TranscriptPath says: %v", err)
	}

	// Another machine: another home; the transcript put where
	// TranscriptPath says.
	other := agenttest.CodexHome(t, r.srv, t.TempDir())
	t.Setenv("CODEX_HOME", strings.TrimPrefix(other[0], "CODEX_HOME="))
	r.env, r.dir = other, t.TempDir()
	there, err := r.eng.(Agent).TranscriptPath(r.dir, id)
	if err != nil || there == path {
		t.Fatalf("TranscriptPath in the other home: %s, %v", there, err)
	}
	if err := os.MkdirAll(filepath.Dir(there), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(there, transcript, 0o600); err != nil {
		t.Fatal(err)
	}
	sink = newAgentSink()
	if _, err := r.run(t, "what fruit?", id, sink); err != nil {
		t.Fatalf("resumed Run: %v (%q)", err, sink.text(Stdout)+sink.text(Stderr))
	}
	reqs := r.srv.Requests()
	if last := reqs[len(reqs)-1]; !last.Carries("remember plums") || !last.Carries("what fruit?") {
		t.Errorf("the resumed turn's request does not carry the conversation")
	}
	if len(sink.conversations) != 1 || sink.conversations[0] != id {
		t.Errorf("resumed conversation reported %q, want %s", sink.conversations, id)
	}
}

// Codex's own failure fails the turn with its reason.
func TestCodexFails(t *testing.T) {
	r := newCodexRig(t)
	r.env = append(r.env, "OPENAI_API_KEY=")
	_, err := r.run(t, "hi", "", newAgentSink())
	var failed *AgentFailedError
	if !errors.As(err, &failed) || !strings.Contains(failed.Reason, "OPENAI_API_KEY") {
		t.Errorf("err %v, want codex's missing key", err)
	}
}
