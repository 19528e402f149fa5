package engine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/google/uuid"
)

// codex is the "codex" engine: each turn is one prompt to OpenAI's Codex
// CLI, headless (codex exec --json). Codex mints a conversation's id
// itself (its thread id), so the first turn starts one and reports it
// (AgentSink.Conversation), and every later turn continues it with
// `codex exec resume ID`. The prompt is read from a private file, as the
// claude engine's. What Codex may do is its own configuration's
// (~/.codex/config.toml: sandbox_mode, approval_policy): Codex's headless
// mode asks nobody, so its tool calls are not gates.
type codex struct {
	command string
	sh      *shell
}

// NewCodex returns the "codex" engine.
func NewCodex(cfg Config) Engine {
	cfg = cfg.withDefaults()
	command := cfg.AgentCommand
	if command == "" {
		command = "codex"
	}
	return &codex{command: command, sh: &shell{grace: cfg.ShellGrace, maxLine: maxAgentLine + 1, noTTY: true, term: cfg.Term, path: DefaultShell}}
}

func (c *codex) Name() string { return "codex" }

// NewConversation implements Agent: Codex names its conversations itself,
// at the first turn.
func (c *codex) NewConversation() string { return "" }

// TranscriptPath implements Agent: Codex keeps a conversation in
// CODEX_HOME/sessions/YYYY/MM/DD/rollout-TIME-ID.jsonl (CODEX_HOME being
// $CODEX_HOME or ~/.codex) and finds it by its name's id, in whichever
// day's directory: the file there if there is one, else a name in
// today's.
func (c *codex) TranscriptPath(dir, id string) (string, error) {
	if _, err := uuid.Parse(id); err != nil {
		return "", fmt.Errorf("codex: conversation id %q: %w", id, err)
	}
	home := os.Getenv("CODEX_HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("codex: where its transcripts are: %w", err)
		}
		home = filepath.Join(h, ".codex")
	}
	sessions := filepath.Join(home, "sessions")
	if found, _ := filepath.Glob(filepath.Join(sessions, "*", "*", "*", "rollout-*-"+id+".jsonl")); len(found) > 0 {
		return found[0], nil
	}
	now := time.Now().UTC()
	return filepath.Join(sessions, now.Format("2006"), now.Format("01"), now.Format("02"),
		"rollout-"+now.Format("2006-01-02T15-04-05")+"-"+id+".jsonl"), nil
}

// Run implements Engine.
func (c *codex) Run(ctx context.Context, turn Turn, sink Sink) (Result, error) {
	none := Result{ExitCode: NoExitCode}
	if ctx.Err() != nil {
		return none, interrupted(ctx, "codex")
	}
	if turn.Resume {
		if _, err := uuid.Parse(turn.Conversation); err != nil {
			return none, fmt.Errorf("codex: conversation id %q: %w", turn.Conversation, err)
		}
	}
	program, err := exec.LookPath(c.command)
	if err != nil {
		return none, &AgentNotFoundError{Agent: "codex", Command: c.command, Err: err, Install: "npm install -g @openai/codex"}
	}
	private, err := os.MkdirTemp("", "looprig-agent-")
	if err != nil {
		return none, fmt.Errorf("codex: %w", err)
	}
	defer os.RemoveAll(private)
	prompt := filepath.Join(private, "prompt")
	if err := os.WriteFile(prompt, []byte(turn.Input), 0o600); err != nil {
		return none, fmt.Errorf("codex: %w", err)
	}
	args := []string{program, "exec", "--json", "--skip-git-repo-check"}
	if turn.Resume {
		args = append(args, "resume", turn.Conversation)
	}
	args = append(args, "-")
	agentTurn := turn
	agentTurn.Input = "exec " + shellQuoteAll(args) + " < " + shellQuote(prompt)
	stream := newCodexStream(sink)
	res, err := c.sh.run(ctx, agentTurn, stream)
	stream.finish()
	if err != nil {
		return res, err
	}
	switch {
	case stream.failed != "":
		return res, &AgentFailedError{Agent: "codex", ExitCode: res.ExitCode, Reason: stream.failed}
	case !stream.completed:
		return res, &AgentFailedError{Agent: "codex", ExitCode: res.ExitCode,
			Reason: fmt.Sprintf("it exited with code %d before its turn completed", res.ExitCode)}
	}
	return res, nil
}
