package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"looprig/internal/textsafe"
)

// codexStream reads the Codex CLI's JSON lines (codex exec --json) from
// the turn's stdout and turns them into the turn's output: the agent's
// messages, a line for each command it ran and for its result, a line for
// each file change. Like claudeStream, everything is sanitized and tool
// lines are bounded; it reuses claudeStream's line splitting and output.
type codexStream struct {
	lines     *claudeStream // the line reader and writer (its messages are not Claude's here)
	completed bool          // turn.completed arrived
	failed    string        // turn.failed's message, sanitized
}

func newCodexStream(sink Sink) *codexStream {
	c := &codexStream{}
	c.lines = newClaudeStream(sink)
	c.lines.onMessage = c.message
	return c
}

func (c *codexStream) Output(stream Stream, text string) { c.lines.Output(stream, text) }

func (c *codexStream) Gate(ctx context.Context, prompt string) (bool, error) {
	return c.lines.Gate(ctx, prompt)
}

func (c *codexStream) finish() { c.lines.finish() }

// codexEvent is the part of a Codex event the engine reads.
type codexEvent struct {
	Type   string `json:"type"`
	Thread string `json:"thread_id"`
	Item   *struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Message  string `json:"message"`
		Command  string `json:"command"`
		Output   string `json:"aggregated_output"`
		ExitCode *int   `json:"exit_code"`
		Status   string `json:"status"`
		Changes  []struct {
			Path string `json:"path"`
			Kind string `json:"kind"`
		} `json:"changes"`
	} `json:"item"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
	Message string `json:"message"`
}

// message handles one JSON line; false: not a Codex event.
func (c *codexStream) message(line []byte) bool {
	var ev codexEvent
	if json.Unmarshal(line, &ev) != nil || ev.Type == "" {
		return false
	}
	out := c.lines
	switch ev.Type {
	case "thread.started":
		if a, ok := out.sink.(AgentSink); ok && validConversation(ev.Thread) {
			a.Conversation(ev.Thread)
		}
	case "item.completed":
		it := ev.Item
		if it == nil {
			break
		}
		switch it.Type {
		case "agent_message":
			out.newline()
			out.text(it.Text)
			out.newline()
		case "command_execution":
			out.say("⏺ Bash(" + it.Command + ")")
			summary := resultSummary(mustJSON(it.Output), it.ExitCode != nil && *it.ExitCode != 0)
			if it.ExitCode != nil && *it.ExitCode != 0 {
				summary += fmt.Sprintf(" (exit %d)", *it.ExitCode)
			}
			out.say("  ⎿ " + summary)
		case "file_change":
			for _, ch := range it.Changes {
				out.say("⏺ " + ch.Kind + " " + ch.Path)
			}
		case "error":
			out.say("! " + it.Message)
		}
	case "turn.completed":
		c.completed = true
	case "turn.failed":
		msg := "the turn failed"
		if ev.Error != nil && ev.Error.Message != "" {
			msg = ev.Error.Message
		}
		c.failed = bound(textsafe.Line(msg), maxToolLine)
	case "error":
		out.say("! " + ev.Message)
	}
	return true
}

func mustJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
