package engine

import (
	"encoding/json"
	"fmt"

	"looprig/internal/textsafe"
)

// codexStream reads the Codex CLI's JSON lines (codex exec --json): the
// agent's messages, a line for each command it ran and for its result, a
// line for each file change, and how the turn ended. The lines and what is
// written of them are agentOutput's.
type codexStream struct {
	*agentOutput
	completed bool   // turn.completed arrived
	failed    string // turn.failed's message, sanitized
}

func newCodexStream(sink Sink) *codexStream {
	c := &codexStream{}
	c.agentOutput = &agentOutput{sink: sink, agent: "codex", parse: c.message}
	return c
}

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
	switch ev.Type {
	case "thread.started":
		if a, ok := c.sink.(AgentSink); ok && validConversation(ev.Thread) {
			a.Conversation(ev.Thread, FromStream)
		}
	case "item.completed":
		it := ev.Item
		if it == nil {
			break
		}
		switch it.Type {
		case "agent_message":
			c.newline()
			c.text(it.Text)
			c.newline()
		case "command_execution":
			c.say("⏺ Bash(" + it.Command + ")")
			summary := resultSummary(mustJSON(it.Output), it.ExitCode != nil && *it.ExitCode != 0)
			if it.ExitCode != nil && *it.ExitCode != 0 {
				summary += fmt.Sprintf(" (exit %d)", *it.ExitCode)
			}
			c.say("  ⎿ " + summary)
		case "file_change":
			for _, ch := range it.Changes {
				c.say("⏺ " + ch.Kind + " " + ch.Path)
			}
		case "error":
			c.say("! " + it.Message)
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
		c.say("! " + ev.Message)
	}
	return true
}

func mustJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
