package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// An agent engine ("claude") runs each turn as one prompt to a coding
// agent's command-line program, in the conversation the session keeps
// (Turn.Conversation): the agent's streamed text is the turn's output, each
// tool call and its result a line, and its requests to use a tool are gates
// (Sink.Gate) unless the profile's agent_allow patterns approve them. See
// claude.go for Claude Code.

// Agent is implemented by the engines whose turns continue a conversation
// kept by the agent program in a transcript file outside the workspace.
// The runtime mints the conversation's id when it creates the session,
// passes it in every Turn, and keeps the transcript in the store so that
// the conversation travels with the session.
type Agent interface {
	Engine
	// NewConversation returns a fresh conversation id in the agent's own
	// format.
	NewConversation() string
	// TranscriptPath is the file in which the agent keeps conversation
	// id's transcript when its turns run in dir: where a restore puts the
	// transcript it stored.
	TranscriptPath(dir, id string) (string, error)
}

// ConversationForker is implemented by the agents whose stored transcript
// can begin another conversation, as the agent's own fork of it would: a
// fork of a session (rig/fork.go) copies the source's transcript, each
// line rewritten by ForkLine, under a new id from NewConversation, and
// its first turn resumes that.
type ConversationForker interface {
	Agent
	// ForkLine returns line of conversation from's transcript as a line
	// of conversation to's.
	ForkLine(line []byte, from, to string) []byte
}

// Where a conversation id the agent reported came from (AgentSink's
// Conversation).
const (
	FromStream = "stream" // the agent's output stream (its init message)
	FromHook   = "hook"   // a hook (SessionStart)
)

// AgentSink is implemented by a Sink that records what an agent engine
// reports besides output. The runtime's does; an agent engine checks for
// it and does without when a Sink lacks it.
//
// What comes through the turn's hook socket is not only the agent's: any
// command the agent runs can find the socket and its token (see
// claude_hooks.go), so a sink keeps the session's own facts: a
// conversation id other than the session's is refused, never adopted, and
// a notification is the agent's words, never looprig's.
type AgentSink interface {
	Sink
	// Conversation is called with the conversation id the agent reported
	// for the turn, and where it came from (FromStream, FromHook).
	Conversation(id, from string)
	// Notify is called when the agent asks for the user (it waits for
	// input, or for a permission), with its message ("": it waits, and
	// said nothing).
	Notify(text string)
	// HookRefused is called when the turn's hook socket was sent, with the
	// turn's token, a hook event the turn did not ask for (its name).
	HookRefused(event string)
}

// Defaults of the agent engines.
const (
	// DefaultAgentGateTimeout is how long a tool's gate waits for an answer
	// before it is denied.
	DefaultAgentGateTimeout = 10 * time.Minute
	// maxAgentLine bounds one line of the agent's streamed JSON; a longer
	// one is skipped, with a line saying so.
	maxAgentLine = 16 << 20
	// maxToolLine bounds the line that shows a tool call or its result.
	maxToolLine = 300
	// maxGatePrompt bounds the question a tool's gate asks.
	maxGatePrompt = 2 << 10
)

// DefaultAgentAllow lists the tools an agent engine lets the agent use
// without a gate when the profile names none: the ones that only read.
var DefaultAgentAllow = []string{"Read", "Glob", "Grep", "LS", "NotebookRead", "TodoWrite", "ToolSearch"}

// AgentFailedError: the agent ended its turn with an error of its own
// (not logged in, the API refused, a limit reached). Reason is the agent's
// message, sanitized.
type AgentFailedError struct {
	Agent  string
	Reason string
	// ExitCode is the agent program's exit code (NoExitCode if none).
	ExitCode int
}

func (e *AgentFailedError) Error() string {
	if e.NotLoggedIn() {
		return fmt.Sprintf("%s is not logged in: run `%s` and /login, or set ANTHROPIC_API_KEY (%s)", e.Agent, e.Agent, e.Reason)
	}
	return fmt.Sprintf("%s failed: %s", e.Agent, e.Reason)
}

// NotLoggedIn reports whether the agent said it has no credentials.
func (e *AgentFailedError) NotLoggedIn() bool {
	return strings.Contains(strings.ToLower(e.Reason), "not logged in")
}

// AgentNotFoundError: the agent's program is not installed where the
// profile says (agent_command) or in $PATH.
type AgentNotFoundError struct {
	Agent   string
	Command string
	Err     error
	// Install is how to install it ("": Claude Code's npm package).
	Install string
}

func (e *AgentNotFoundError) Error() string {
	install := e.Install
	if install == "" {
		install = "npm install -g @anthropic-ai/claude-code"
	}
	return fmt.Sprintf("%s: %q not found (%v): install it (%s) or set agent_command in the profile", e.Agent, e.Command, e.Err, install)
}

func (e *AgentNotFoundError) Unwrap() error { return e.Err }

// NoConversationError: an agent turn was run without a conversation id
// (the runtime always passes one).
type NoConversationError struct{ Agent string }

func (e *NoConversationError) Error() string {
	return e.Agent + ": the turn names no conversation"
}

// toolAllowed reports whether the agent may call tool with input (its
// tool_input) without a gate under the allow patterns. "Tool" allows every
// call of Tool (a '*' in the name stands for any run of characters, so "*"
// alone allows every call). "Tool(P)" allows the calls whose argument
// matches P:
//
//   - for Bash, P is matched against each simple command of the command
//     line, which must also keep to a small set of shell constructs
//     (bashAllowed, bash_allow.go); "Bash(*)" is "Bash";
//   - for a tool with a path (file_path, notebook_path, path), P is matched
//     against the path with "." and ".." resolved and, when it is
//     absolute, the symbolic links of its existing part followed, '*'
//     standing for any run of characters ("/" included); a path that
//     cannot be resolved (a link that leads nowhere, a loop) matches
//     nothing;
//   - a search without a path (Grep, Glob) has the argument "", since it
//     runs in the agent's working directory, which a pattern cannot name;
//   - otherwise the url, or the input as compact JSON.
//
// It is the one function the hook server asks (claude_hooks.go, toolUse).
func toolAllowed(allow []string, tool string, input json.RawMessage) bool {
	var fields map[string]any
	_ = json.Unmarshal(input, &fields)
	var bash []string
	for _, p := range allow {
		p = strings.TrimSpace(p)
		name, argPattern, hasArg := strings.Cut(p, "(")
		if hasArg {
			if !strings.HasSuffix(argPattern, ")") {
				continue
			}
			argPattern = strings.TrimSuffix(argPattern, ")")
		}
		if !globMatch(name, tool) {
			continue
		}
		switch {
		case !hasArg:
			return true
		case tool == "Bash" && strings.TrimSpace(argPattern) == "*":
			return true
		case tool == "Bash":
			bash = append(bash, argPattern)
		default:
			if arg, ok := allowArgument(fields, input); ok && globMatch(argPattern, arg) {
				return true
			}
		}
	}
	if len(bash) > 0 {
		command, _ := fields["command"].(string)
		ok, _ := bashAllowed(bash, command)
		return ok
	}
	return false
}

// allowArgument is what a Tool(P) pattern of a tool other than Bash is
// matched against (toolAllowed); ok is false when there is nothing a
// pattern may match (a path that cannot be resolved).
func allowArgument(fields map[string]any, input json.RawMessage) (string, bool) {
	for _, k := range []string{"file_path", "notebook_path", "path"} {
		if v, ok := fields[k].(string); ok {
			return canonicalPath(v)
		}
	}
	if v, ok := fields["url"].(string); ok {
		return v, true
	}
	if _, ok := fields["pattern"]; ok {
		return "", true
	}
	return toolArgument(input), true
}

// canonicalPath is the path a file tool's call would reach: p with "."
// and ".." resolved, and when p is absolute the symbolic links of its
// longest existing part followed (the rest does not exist yet: a file to
// be written). ok is false for a relative path that climbs out with ".."
// and for a path whose existing part cannot be resolved, such as a link
// to nowhere, which a write would follow.
func canonicalPath(p string) (string, bool) {
	c := filepath.Clean(p)
	if !filepath.IsAbs(c) {
		if c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator)) {
			return "", false
		}
		return c, true
	}
	dir, rest := c, ""
	for {
		r, err := filepath.EvalSymlinks(dir)
		if err == nil {
			return filepath.Join(r, rest), true
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", false
		}
		if _, err := os.Lstat(dir); err == nil {
			return "", false // it exists, and leads nowhere
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// globMatch matches s against pattern, in which '*' stands for any run of
// characters (none included) and every other character for itself.
func globMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return strings.HasSuffix(s, last)
}
