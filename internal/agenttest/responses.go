package agenttest

// OpenAI's Responses API, as the Codex CLI calls it.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// responsesRequest is the part of a Responses API request the server
// reads: its input items.
type responsesRequest struct {
	Model string `json:"model"`
	Input []struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		CallID    string          `json:"call_id"`
		Output    json.RawMessage `json:"output"`
	} `json:"input"`
}

// serveResponses answers a Responses API request (Codex) with the
// script's text, streamed.
func (s *Server) serveResponses(w http.ResponseWriter, r *http.Request) {
	var rr responsesRequest
	if !decodeBody(w, r, &rr) {
		return
	}
	req := Request{Model: rr.Model, Stream: true}
	for _, in := range rr.Input {
		switch in.Type {
		case "message", "":
			m := Message{Role: in.Role}
			for _, c := range in.Content {
				m.Content = append(m.Content, Block{Type: "text", Text: c.Text})
			}
			req.Messages = append(req.Messages, m)
		case "function_call":
			req.Messages = append(req.Messages, Message{Role: "assistant", Content: []Block{{Type: "tool_use", ID: in.CallID, Name: in.Name, Input: json.RawMessage(strconv.Quote(in.Arguments))}}})
		case "function_call_output":
			req.Messages = append(req.Messages, Message{Role: "user", Content: []Block{{Type: "tool_result", ToolUseID: in.CallID, Content: in.Output}}})
		}
	}
	n := s.record(req)
	reply := s.script(req)
	stream := eventStream(w)
	send := func(data map[string]any) { stream(data["type"].(string), data) }
	id := fmt.Sprintf("msg_%d", n)
	send(map[string]any{"type": "response.created", "response": map[string]any{"id": fmt.Sprintf("resp_%d", n)}})
	send(map[string]any{"type": "response.output_item.added", "item": map[string]any{"type": "message", "role": "assistant", "id": id, "content": []any{}}})
	send(map[string]any{"type": "response.output_text.delta", "item_id": id, "delta": reply.Text})
	send(map[string]any{"type": "response.output_item.done", "item": map[string]any{"type": "message", "role": "assistant", "id": id,
		"content": []any{map[string]any{"type": "output_text", "text": reply.Text}}}})
	send(map[string]any{"type": "response.completed", "response": map[string]any{"id": fmt.Sprintf("resp_%d", n),
		"usage": map[string]any{"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}})
}

// CodexPinnedVersion is the Codex CLI version .ci/run installs.
const CodexPinnedVersion = "0.171.0"

// CodexEnv names the variable that points the tests at the Codex CLI.
const CodexEnv = "LOOPRIG_TEST_CODEX"

// Codex returns the path of the Codex CLI the tests run, as Claude does
// for Claude Code; it skips the test, saying so, when there is none.
func Codex(t testing.TB) string {
	t.Helper()
	return findCLI(t, CodexEnv, "codex", CodexPinnedVersion, "@openai/codex")
}

// CodexHome makes a Codex home under dir whose model provider is s, and
// returns the environment the CLI runs with there.
func CodexHome(t testing.TB, s *Server, dir string) []string {
	t.Helper()
	home := filepath.Join(dir, ".codex")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`model_provider = "scripted"
model = "gpt-test"
[model_providers.scripted]
name = "scripted"
base_url = %q
env_key = "OPENAI_API_KEY"
wire_api = "responses"
supports_websockets = false
`, s.URL+"/v1")
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"CODEX_HOME=" + home, "OPENAI_API_KEY=sk-looprig-test"}
}
