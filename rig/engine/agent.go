package engine

import (
	"fmt"
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

// AgentSink is implemented by a Sink that records what an agent engine
// reports besides output. The runtime's does; an agent engine checks for
// it and does without when a Sink lacks it.
type AgentSink interface {
	Sink
	// Conversation is called with the conversation id the agent reported
	// for the turn, once at the start of each turn.
	Conversation(id string)
	// Notify is called when the agent asks for the user (it waits for
	// input, or for a permission), with its message.
	Notify(text string)
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

// toolAllowed reports whether a call of tool with argument arg (the
// command of a Bash call, the path of a file tool, "" otherwise) matches
// one of the allow patterns: "Tool" matches every call of Tool, "Tool(P)"
// the calls whose argument matches P, in which '*' stands for any run of
// characters; "*" alone matches every call.
func toolAllowed(allow []string, tool, arg string) bool {
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
		if !hasArg || globMatch(argPattern, arg) {
			return true
		}
	}
	return false
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
