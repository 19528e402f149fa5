package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"looprig/internal/textsafe"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/google/uuid"
)

// claude is the "claude" engine: each turn is one prompt to Claude Code,
// headless (claude -p, streaming JSON), in the session's conversation:
// the first turn starts it with --session-id ID, every later one (and every
// turn after a restore) continues it with --resume ID. The prompt is read
// from a file in the turn's private directory, never from argv. The agent
// runs in the shell engine's process machinery (its own process group,
// watched against the death of this process, its pgid recorded by
// Turn.Started), on pipes. Its hooks (--settings, a file in the private
// directory; nothing is written into the user's own settings) are
// `looprig hook` commands that reach this turn's hook socket: PreToolUse
// (a tool the agent wants to use: allowed by pattern or asked as a gate)
// and Notification (attention); see claude_hooks.go.
type claude struct {
	command     string
	allow       []string
	gateTimeout time.Duration
	hook        []string // argv of `looprig hook`
	interactive bool     // Config.AgentInteractive
	sh          *shell   // headless turns: pipes
	pty         *shell   // interactive turns: a pseudo-terminal
}

// NewClaude returns the "claude" engine configured by cfg's Agent fields.
func NewClaude(cfg Config) Engine {
	cfg = cfg.withDefaults()
	if cfg.AgentCommand == "" {
		cfg.AgentCommand = "claude"
	}
	sh := &shell{grace: cfg.ShellGrace, maxLine: maxAgentLine + 1, noTTY: true, term: cfg.Term, path: DefaultShell}
	pty := &shell{grace: cfg.ShellGrace, maxLine: cfg.MaxLine, term: cfg.Term, path: DefaultShell}
	return &claude{command: cfg.AgentCommand, allow: cfg.AgentAllow, gateTimeout: cfg.AgentGateTimeout, hook: cfg.HookCommand,
		interactive: cfg.AgentInteractive, sh: sh, pty: pty}
}

func (c *claude) Name() string { return "claude" }

// NewConversation implements Agent: Claude Code's session ids are UUIDs.
func (c *claude) NewConversation() string { return uuid.NewString() }

// ForkLine implements ConversationForker: each line of a Claude Code
// transcript is a JSON object naming its conversation ("sessionId"), so
// every JSON string that is exactly from's id becomes to's (both are
// UUIDs: the line keeps its length). This is what Claude Code's own
// --fork-session writes; the source's file is left as it is.
func (c *claude) ForkLine(line []byte, from, to string) []byte {
	return bytes.ReplaceAll(line, []byte(`"`+from+`"`), []byte(`"`+to+`"`))
}

// TranscriptPath implements Agent: Claude Code keeps a conversation in
// CONFIG/projects/SLUG/ID.jsonl, CONFIG being $CLAUDE_CONFIG_DIR or
// ~/.claude and SLUG the working directory's absolute path, symbolic
// links resolved, with every character but ASCII letters and digits
// turned into '-' (see claudeSlug).
func (c *claude) TranscriptPath(dir, id string) (string, error) {
	if _, err := uuid.Parse(id); err != nil {
		return "", fmt.Errorf("claude: conversation id %q: %w", id, err)
	}
	config := os.Getenv("CLAUDE_CONFIG_DIR")
	if config == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("claude: where its transcripts are: %w", err)
		}
		config = filepath.Join(home, ".claude")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	// The agent names the directory it runs in as the kernel does: with
	// its symbolic links resolved (macOS's /tmp, a linked home).
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return filepath.Join(config, "projects", claudeSlug(abs), id+".jsonl"), nil
}

// claudeSlug is Claude Code's name for a project directory: every UTF-16
// code unit of path that is not an ASCII letter or digit becomes '-'; a
// name over 200 units is cut to 200 and followed by '-' and the base-36
// absolute value of the path's 32-bit Java string hash.
func claudeSlug(path string) string {
	units := utf16.Encode([]rune(path))
	b := make([]byte, len(units))
	var hash int32
	for i, u := range units {
		hash = hash*31 + int32(u)
		switch {
		case 'a' <= u && u <= 'z', 'A' <= u && u <= 'Z', '0' <= u && u <= '9':
			b[i] = byte(u)
		default:
			b[i] = '-'
		}
	}
	if len(b) <= 200 {
		return string(b)
	}
	h := int64(hash)
	if h < 0 {
		h = -h
	}
	return string(b[:200]) + "-" + strconvBase36(h)
}

func strconvBase36(n int64) string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	if n == 0 {
		return "0"
	}
	var out []byte
	for ; n > 0; n /= 36 {
		out = append([]byte{digits[n%36]}, out...)
	}
	return string(out)
}

// Run implements Engine.
func (c *claude) Run(ctx context.Context, turn Turn, sink Sink) (Result, error) {
	none := Result{ExitCode: NoExitCode}
	if ctx.Err() != nil {
		return none, interrupted(ctx, "claude")
	}
	if turn.Conversation == "" {
		return none, &NoConversationError{Agent: "claude"}
	}
	if _, err := uuid.Parse(turn.Conversation); err != nil {
		return none, fmt.Errorf("claude: conversation id %q: %w", turn.Conversation, err)
	}
	program, err := exec.LookPath(c.command)
	if err != nil {
		return none, &AgentNotFoundError{Agent: "claude", Command: c.command, Err: err}
	}
	private, err := os.MkdirTemp("", "looprig-agent-")
	if err != nil {
		return none, fmt.Errorf("claude: %w", err)
	}
	defer os.RemoveAll(private)
	hooks, err := startHooks(ctx, private, sink, c.allow, c.gateTimeout, c.interactive)
	if err != nil {
		return none, fmt.Errorf("claude: %w", err)
	}
	defer hooks.close() // no gate outlives the agent
	settings := filepath.Join(private, "settings.json")
	if err := os.WriteFile(settings, c.settings(hooks.args()), 0o600); err != nil {
		return none, fmt.Errorf("claude: %w", err)
	}
	pin := []string{"--session-id", turn.Conversation}
	if turn.Resume {
		pin = []string{"--resume", turn.Conversation}
	}
	agentTurn := turn
	if c.interactive {
		// The agent's own interface, on the turn's terminal: its output is
		// the turn's, as a full-screen program's; the first prompt, if
		// any, is its last argument.
		args := append([]string{program, "--settings", settings}, pin...)
		if strings.TrimSpace(turn.Input) != "" {
			args = append(args, "--", turn.Input)
		}
		agentTurn.Input = "exec " + shellQuoteAll(args)
		return c.pty.run(ctx, agentTurn, sink)
	}
	prompt := filepath.Join(private, "prompt")
	if err := os.WriteFile(prompt, []byte(turn.Input), 0o600); err != nil {
		return none, fmt.Errorf("claude: %w", err)
	}
	args := append([]string{program, "-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages", "--settings", settings}, pin...)
	agentTurn.Input = "exec " + shellQuoteAll(args) + " < " + shellQuote(prompt)
	stream := newClaudeStream(sink)
	res, err := c.sh.run(ctx, agentTurn, stream)
	stream.finish()
	if err != nil {
		return res, err
	}
	return res, stream.result.err(res.ExitCode)
}

// err is the error of a headless turn that ended with result r (nil when
// the agent printed none): nil for a success, else *AgentFailedError with
// the agent's reason.
func (r *claudeResult) err(exitCode int) error {
	switch {
	case r == nil:
		return &AgentFailedError{Agent: "claude", ExitCode: exitCode,
			Reason: fmt.Sprintf("it exited with code %d before its result", exitCode)}
	case r.IsError:
		reason := r.Result
		if reason == "" {
			reason = r.Subtype
		}
		return &AgentFailedError{Agent: "claude", ExitCode: exitCode, Reason: bound(textsafe.Line(reason), maxToolLine)}
	}
	return nil
}

// settings is the --settings file: the hooks, each `looprig hook` with
// hookArgs (where its socket and token are), with a timeout longer than
// the gate's so that the gate's denial arrives first: the events of
// hookEvents, which are the only ones the hook socket takes.
func (c *claude) settings(hookArgs []string) []byte {
	wait := c.gateTimeout + hookSlack
	cmd := shellQuoteAll(append(append(c.hookArgv()[:len(c.hookArgv()):len(c.hookArgv())], "--wait", wait.String()), hookArgs...))
	hook := []map[string]any{{"type": "command", "command": cmd, "timeout": int((wait + hookSlack).Seconds())}}
	hooks := map[string]any{}
	for _, ev := range hookEvents(c.interactive) {
		entry := map[string]any{"hooks": hook}
		if ev == hookPreToolUse {
			entry["matcher"] = "*"
		}
		hooks[ev] = []map[string]any{entry}
	}
	b, _ := json.Marshal(map[string]any{"hooks": hooks})
	return b
}

// hookArgv is the command line of `looprig hook`: Config.HookCommand, else
// this executable's hook command.
func (c *claude) hookArgv() []string {
	if len(c.hook) > 0 {
		return c.hook
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "looprig"
	}
	return []string{exe, "hook"}
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func shellQuoteAll(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}
