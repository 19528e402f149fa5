package engine

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// agentSink is a testSink that records what an agent reports.
type agentSink struct {
	*testSink
	mu            sync.Mutex
	conversations []string
	froms         []string // where each conversation came from
	notes         []string
	refused       []string // hook events refused
}

func (s *agentSink) Conversation(id, from string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conversations = append(s.conversations, id)
	s.froms = append(s.froms, from)
}

func (s *agentSink) HookRefused(event string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused = append(s.refused, event)
}

func (s *agentSink) Notify(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes = append(s.notes, text)
}

func newAgentSink() *agentSink { return &agentSink{testSink: newSink()} }

// hasControl reports whether s holds a byte a terminal would interpret:
// C0 controls other than newline and tab, DEL, and ESC above all.
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
			return true
		}
	}
	return strings.ContainsRune(s, '\u009b')
}

// The agent's stream is model and tool output: nothing of it reaches the
// turn's output unsanitized, tool lines are bounded, a line over the
// limit is skipped with a note, and garbage passes as sanitized text.
func TestClaudeStreamHostile(t *testing.T) {
	sink := newAgentSink()
	c := newClaudeStream(sink)
	esc := "\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\u009b31m"
	lines := []map[string]any{
		{"type": "system", "subtype": "init", "session_id": "not-a-uuid" + esc},
		{"type": "stream_event", "event": map[string]any{"type": "content_block_delta", "delta": map[string]any{"type": "text_delta", "text": "hi" + esc}}},
		{"type": "assistant", "message": map[string]any{"content": []any{map[string]any{"type": "tool_use", "name": "Bash" + esc, "input": map[string]any{"command": strings.Repeat("x", 100_000) + esc}}}}},
		{"type": "user", "message": map[string]any{"content": []any{map[string]any{"type": "tool_result", "content": esc + "\nsecond\nthird", "is_error": true}}}},
	}
	for _, l := range lines {
		b, _ := json.Marshal(l)
		c.Output(Stdout, string(b)+"\n")
	}
	c.Output(Stdout, "not json "+esc+"\n")
	c.Output(Stderr, "warning "+esc+"\n")
	c.Output(Stdout, `{"type":"assistant","message":{"content":"`+strings.Repeat("y", maxAgentLine)+`"}}`+"\n")
	c.finish()
	out := sink.text(Stdout) + sink.text(Stderr)
	if hasControl(out) {
		t.Errorf("control characters reached the output: %q", out[:min(len(out), 400)])
	}
	for _, want := range []string{"hi^[]52;c;", "⏺ Bash^[]52", "⎿ error: ^[]52", "… +2 lines", "not json ^[", "warning ^[", "skipped: over"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%.600s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if len(line) > maxToolLine+len(" … +2 lines") && !strings.HasPrefix(line, "hi") {
			t.Errorf("a line of %d bytes", len(line))
		}
	}
	if len(sink.conversations) != 0 {
		t.Errorf("an id that is no UUID was reported: %q", sink.conversations)
	}
}

// A hostile hook request: escapes and a huge command in the tool's
// input. The gate's question is one sanitized line, bounded; an input
// over the limit is denied before it reaches the session.
func TestHookHostileInput(t *testing.T) {
	dir := t.TempDir()
	sink := newAgentSink()
	var asked []string
	sink.gate = func(ctx context.Context, prompt string) (bool, error) {
		asked = append(asked, prompt)
		return true, nil
	}
	h, err := startHooks(context.Background(), dir, sink, DefaultAgentAllow, time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	target := HookTarget{Socket: h.path, TokenFile: h.tokenFile}
	esc := "\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J"
	ask := func(input map[string]any) (string, error) {
		b, _ := json.Marshal(input)
		return RunHook(context.Background(), strings.NewReader(string(b)), target, 10*time.Second)
	}
	out, err := ask(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash" + esc,
		"tool_input": map[string]any{"command": strings.Repeat("z", 200_000) + esc + "\nrm -rf ~"}})
	if err != nil || !strings.Contains(out, `"permissionDecision":"allow"`) {
		t.Fatalf("approved gate: %s, %v", out, err)
	}
	if len(asked) != 1 || hasControl(asked[0]) || strings.Contains(asked[0], "\n") || len(asked[0]) > maxGatePrompt+64 {
		t.Errorf("the gate asked %d questions; the first is %d bytes: %.200q", len(asked), len(asked[0]), asked[0])
	}

	// Over the limit: denied by the hook itself, nothing asked.
	out, err = ask(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": strings.Repeat("z", maxHookRequest)}})
	if err == nil || !strings.Contains(out, `"permissionDecision":"deny"`) || len(asked) != 1 {
		t.Errorf("oversized request: %s, %v, %d gates", out, err, len(asked))
	}
	// A wrong token: denied.
	target = HookTarget{Socket: h.path, Token: strings.Repeat("0", 64)}
	out, err = ask(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": map[string]any{"command": "ls"}})
	if err == nil || !strings.Contains(out, `"permissionDecision":"deny"`) || len(asked) != 1 {
		t.Errorf("wrong token: %s, %v, %d gates", out, err, len(asked))
	}
	// The socket is the user's only.
	if fi, err := os.Stat(h.path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v %v", fi.Mode(), err)
	}
}

// A hook whose holder is gone is denied.
func TestHookHolderGone(t *testing.T) {
	target := HookTarget{Socket: t.TempDir() + "/gone.sock", Token: "x"}
	out, err := RunHook(context.Background(), strings.NewReader(`{"hook_event_name":"PreToolUse","tool_name":"Bash"}`), target, time.Second)
	if err == nil || !strings.Contains(out, `"permissionDecision":"deny"`) {
		t.Errorf("%s, %v", out, err)
	}
	// Not a tool: nothing to deny, nothing printed.
	out, _ = RunHook(context.Background(), strings.NewReader(`{"hook_event_name":"Notification","message":"hi"}`), target, time.Second)
	if out != "" {
		t.Errorf("notification answered %q", out)
	}
}

// Codex's stream: the same rules.
func TestCodexStreamHostile(t *testing.T) {
	sink := newAgentSink()
	c := newCodexStream(sink)
	esc := "\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J"
	exit := 3
	for _, l := range []map[string]any{
		{"type": "thread.started", "thread_id": "../../etc" + esc},
		{"type": "item.completed", "item": map[string]any{"type": "agent_message", "text": "hi" + esc}},
		{"type": "item.completed", "item": map[string]any{"type": "command_execution", "command": strings.Repeat("c", 10_000) + esc, "aggregated_output": esc + "\nmore", "exit_code": exit}},
		{"type": "item.completed", "item": map[string]any{"type": "file_change", "changes": []any{map[string]any{"path": "a" + esc, "kind": "add"}}}},
		{"type": "turn.failed", "error": map[string]any{"message": "bad" + esc}},
	} {
		b, _ := json.Marshal(l)
		c.Output(Stdout, string(b)+"\n")
	}
	c.finish()
	out := sink.text(Stdout)
	if hasControl(out) || hasControl(c.failed) {
		t.Errorf("control characters reached the output: %q / %q", out, c.failed)
	}
	for _, want := range []string{"hi^[]52", "⏺ Bash(ccc", "(exit 3)", "⏺ add a^[", "… +1 lines"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if len(sink.conversations) != 0 {
		t.Errorf("a thread id that is no UUID was reported: %q", sink.conversations)
	}
}

// Gates are asked one at a time, and a request's time to be answered runs
// from its arrival: one that waited out its time behind an unanswered gate
// is denied without being asked.
func TestHookGatesQueueWithinTheirTime(t *testing.T) {
	sink := newAgentSink()
	var mu sync.Mutex
	var asked []string
	sink.gate = func(ctx context.Context, prompt string) (bool, error) {
		mu.Lock()
		asked = append(asked, prompt)
		mu.Unlock()
		<-ctx.Done()
		// The first gate holds the line a little past its own time (as
		// recording its end may), so that the second request, which came
		// in moments after it, has surely waited out its time behind it,
		// however the two requests' arrivals are spread on a slow machine.
		time.Sleep(200 * time.Millisecond)
		return false, ctx.Err()
	}
	h, err := startHooks(context.Background(), t.TempDir(), sink, nil, 300*time.Millisecond, false)
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	target := HookTarget{Socket: h.path, TokenFile: h.tokenFile}
	outs := make(chan string, 2)
	for _, cmd := range []string{"first", "second"} {
		go func() {
			b, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": map[string]any{"command": cmd}})
			out, _ := RunHook(context.Background(), strings.NewReader(string(b)), target, 10*time.Second)
			outs <- out
		}()
	}
	for range 2 {
		if out := <-outs; !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "nobody answered") {
			t.Errorf("answer %s", out)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 {
		t.Errorf("%d gates asked, want 1: the second's time ran out behind the first: %q", len(asked), asked)
	}
}
