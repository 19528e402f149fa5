package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

// claudeStream reads Claude Code's streamed JSON (-p --output-format
// stream-json --verbose --include-partial-messages), one message a line:
// the assistant's text as it streams, a line for each tool call and for
// its result, and the turn's result. The lines and what is written of
// them are agentOutput's.
type claudeStream struct {
	*agentOutput
	// streamed: text arrived as deltas since the last assistant message,
	// whose text blocks then repeat it.
	streamed bool
	// result is the turn's result message, nil until it arrives.
	result *claudeResult
}

// validConversation reports whether id is a Claude Code conversation id (a
// UUID): what the agent reports is its output, and only an id of that
// form is passed on to be journaled.
func validConversation(id string) bool {
	_, err := uuid.Parse(id)
	return err == nil && len(id) == 36
}

// claudeResult is the end of Claude Code's turn.
type claudeResult struct {
	Subtype string `json:"subtype"`
	IsError bool   `json:"is_error"`
	Result  string `json:"result"`
	Session string `json:"session_id"`
}

func newClaudeStream(sink Sink) *claudeStream {
	c := &claudeStream{}
	c.agentOutput = &agentOutput{sink: sink, agent: "claude", parse: c.parse}
	return c
}

// parse handles one line; false: not a message of the stream.
func (c *claudeStream) parse(line []byte) bool {
	var msg claudeMessage
	if err := json.Unmarshal(line, &msg); err != nil || msg.Type == "" {
		return false
	}
	c.message(&msg, line)
	return true
}

// claudeMessage is the part of a streamed message the engine reads.
type claudeMessage struct {
	Type    string        `json:"type"`
	Subtype string        `json:"subtype"`
	Session string        `json:"session_id"`
	Event   *claudeEvent  `json:"event"`
	Message *claudeAPIMsg `json:"message"`
}

type claudeEvent struct {
	Type  string `json:"type"`
	Delta *struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"delta"`
}

type claudeAPIMsg struct {
	Content []claudeBlock `json:"content"`
}

// claudeBlock is a content block: text, a tool call or a tool's result.
type claudeBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Content json.RawMessage `json:"content"` // tool_result: a string or blocks
	IsError bool            `json:"is_error"`
}

func (c *claudeStream) message(msg *claudeMessage, line []byte) {
	switch msg.Type {
	case "system":
		if msg.Subtype == "init" && validConversation(msg.Session) {
			if a, ok := c.sink.(AgentSink); ok {
				a.Conversation(msg.Session, FromStream)
			}
		}
	case "stream_event":
		if e := msg.Event; e != nil && e.Type == "content_block_delta" && e.Delta != nil && e.Delta.Type == "text_delta" && e.Delta.Text != "" {
			c.streamed = true
			c.text(e.Delta.Text)
		}
	case "assistant":
		if msg.Message == nil {
			return
		}
		for _, b := range msg.Message.Content {
			switch b.Type {
			case "text":
				if !c.streamed {
					c.text(b.Text)
				}
			case "tool_use":
				c.say("⏺ " + b.Name + "(" + toolArgument(b.Input) + ")")
			}
		}
		c.streamed = false
	case "user":
		if msg.Message == nil {
			return
		}
		for _, b := range msg.Message.Content {
			if b.Type == "tool_result" {
				c.say("  ⎿ " + resultSummary(b.Content, b.IsError))
			}
		}
	case "result":
		var r claudeResult
		if json.Unmarshal(line, &r) == nil {
			c.result = &r
		}
	}
}

// toolArgument is what a tool call is shown with: the command of a Bash
// call, the path of a file tool, else its input as compact JSON.
func toolArgument(input json.RawMessage) string {
	var fields map[string]any
	_ = json.Unmarshal(input, &fields)
	for _, k := range []string{"command", "file_path", "path", "pattern", "url"} {
		if v, ok := fields[k].(string); ok {
			return v
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, input) != nil {
		return ""
	}
	return b.String()
}

// resultSummary is the first line of a tool's result and how many more
// there are.
func resultSummary(content json.RawMessage, isError bool) string {
	var text string
	if json.Unmarshal(content, &text) != nil {
		var blocks []claudeBlock
		_ = json.Unmarshal(content, &blocks)
		var parts []string
		for _, b := range blocks {
			if b.Type == "text" {
				parts = append(parts, b.Text)
			}
		}
		text = strings.Join(parts, "\n")
	}
	text = strings.TrimSpace(text)
	first, rest, _ := strings.Cut(text, "\n")
	if first == "" {
		first = "(no output)"
	}
	if isError {
		first = "error: " + first
	}
	if n := strings.Count(rest, "\n"); rest != "" {
		first += fmt.Sprintf(" … +%d lines", n+1)
	}
	return first
}

// bound cuts s to at most n bytes, on a character boundary, marking the
// cut with an ellipsis.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
