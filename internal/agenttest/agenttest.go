// Package agenttest runs the real Claude Code and Codex CLIs against a
// scripted model server, offline: tests of looprig's agent sessions use
// Server for the model and Claude or Codex for the program.
//
// The server answers POST /v1/messages (Anthropic's Messages API, for
// Claude Code) and POST /v1/responses (OpenAI's Responses API, for Codex)
// with server-sent events, as the APIs stream them: each request goes to
// the test's Script, which returns the assistant's reply (text, or for
// Claude Code a tool call). Every request is kept, so a test can check
// what the agent sent (the conversation it carried, the tool results).
package agenttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// PinnedVersion is the Claude Code version .ci/run installs.
const PinnedVersion = "2.1.328"

// ClaudeEnv names the variable that points the tests at the CLI.
const ClaudeEnv = "LOOPRIG_TEST_CLAUDE"

// Claude returns the path of the Claude Code CLI the tests run: $LOOPRIG_TEST_CLAUDE,
// else the one .ci/run installs into its cache, else `claude` in $PATH. It skips
// the test, saying so, when there is none.
func Claude(t testing.TB) string {
	t.Helper()
	return findCLI(t, ClaudeEnv, "claude", PinnedVersion, "@anthropic-ai/claude-code")
}

// findCLI finds an agent's CLI for a test: $env, else the cache .ci/run
// installs version into (looprig-ci/NAME-VERSION), else name in $PATH;
// it skips the test, naming pkg, when there is none.
func findCLI(t testing.TB, env, name, version, pkg string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s=%s: %v", env, p, err)
		}
		return p
	}
	if cache, err := os.UserCacheDir(); err == nil {
		p := filepath.Join(cache, "looprig-ci", name+"-"+version, "node_modules", ".bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	t.Skipf("agent test skipped: the %s CLI was not found (set %s, or install %s@%s: .ci/run does)", name, env, pkg, version)
	return ""
}

// Request is one request the agent made.
type Request struct {
	Model    string    `json:"model"`
	Stream   bool      `json:"stream"`
	Messages []Message `json:"messages"`
}

// Message is one message of a request's conversation.
type Message struct {
	Role    string
	Content []Block
}

// Block is a content block of a message.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// UnmarshalJSON reads a message whose content is a string or blocks.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.Role = raw.Role
	var s string
	if json.Unmarshal(raw.Content, &s) == nil {
		m.Content = []Block{{Type: "text", Text: s}}
		return nil
	}
	return json.Unmarshal(raw.Content, &m.Content)
}

// Prompt is the last text the user wrote in the request: the text blocks
// of the last user message that has any, without the CLI's
// <system-reminder> blocks.
func (r Request) Prompt() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role != "user" {
			continue
		}
		var parts []string
		for _, b := range m.Content {
			if b.Type == "text" && !strings.HasPrefix(strings.TrimSpace(b.Text), "<system-reminder>") {
				parts = append(parts, b.Text)
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, "\n")
		}
	}
	return ""
}

// ToolResult returns the result of tool call id in the request, and
// whether there is one.
func (r Request) ToolResult(id string) (Block, bool) {
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_result" && b.ToolUseID == id {
				return b, true
			}
		}
	}
	return Block{}, false
}

// LastToolResult returns the tool result the request's last user message
// holds: the request is the agent's follow-up to a tool call, not a new
// prompt.
func (r Request) LastToolResult() (Block, bool) {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role != "user" {
			continue
		}
		for _, b := range m.Content {
			if b.Type == "tool_result" {
				return b, true
			}
		}
		return Block{}, false
	}
	return Block{}, false
}

// Carries reports whether any message of the request holds text (a text
// block, a tool call's input or a tool result) containing s: the
// conversation the agent sent includes it.
func (r Request) Carries(s string) bool {
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if strings.Contains(b.Text, s) || strings.Contains(string(b.Input), s) || strings.Contains(string(b.Content), s) {
				return true
			}
		}
	}
	return false
}

// Reply is the assistant's answer to one request: text, or a tool call
// (ToolName and ToolInput, with ToolID naming it).
type Reply struct {
	Text      string
	ToolID    string
	ToolName  string
	ToolInput map[string]any
}

// Script answers the agent's streamed requests.
type Script func(Request) Reply

// Server is a scripted Messages API server on loopback.
type Server struct {
	URL    string
	script Script
	mu     sync.Mutex
	reqs   []Request
}

// NewServer starts a server answering with script; it stops with the test.
func NewServer(t testing.TB, script Script) *Server {
	s := &Server{script: script}
	hs := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	return s
}

// Requests returns the streamed requests so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/responses" && r.Method == http.MethodPost {
		s.serveResponses(w, r)
		return
	}
	if r.URL.Path != "/v1/messages" || r.Method != http.MethodPost {
		w.WriteHeader(http.StatusOK) // the CLI's reachability probes
		return
	}
	var req Request
	if !decodeBody(w, r, &req) {
		return
	}
	if !req.Stream { // side requests (titles, summaries)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_side","type":"message","role":"assistant","model":%q,"content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`, req.Model)
		return
	}
	n := s.record(req)
	reply := s.script(req)
	send := eventStream(w)
	usage := map[string]int{"input_tokens": 1, "output_tokens": 1}
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": req.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}})
	stop := "end_turn"
	if reply.ToolName != "" {
		stop = "tool_use"
		input, _ := json.Marshal(reply.ToolInput)
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": reply.ToolID, "name": reply.ToolName, "input": map[string]any{}}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
	} else {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		// In two pieces, so that the text streams.
		half := len(reply.Text) / 2
		for _, piece := range []string{reply.Text[:half], reply.Text[half:]} {
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": piece}})
		}
	}
	send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": 1}})
	send("message_stop", map[string]any{"type": "message_stop"})
}

// Env is the environment the CLI runs with against s, isolated from the
// user's own Claude Code: its configuration and transcripts under home.
func Env(s *Server, home string) []string {
	return []string{
		"HOME=" + home,
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"ANTHROPIC_BASE_URL=" + s.URL,
		"ANTHROPIC_API_KEY=sk-looprig-test",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	}
}

// decodeBody reads r's JSON body into v; on failure it answers 400 and
// returns false.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err == nil {
		err = json.Unmarshal(body, v)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

// record keeps req and returns its number (from 1).
func (s *Server) record(req Request) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	return len(s.reqs)
}

// eventStream starts a server-sent event stream on w and returns the
// function that sends one event, flushed.
func eventStream(w http.ResponseWriter) func(name string, data any) {
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	return func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
}
