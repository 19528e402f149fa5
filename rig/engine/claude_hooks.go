package engine

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"looprig/internal/peercred"
	"looprig/internal/textsafe"
)

// The hook socket of an agent turn. Claude Code runs the hooks the engine
// passes it (--settings) as commands; each is `looprig hook`, which
// forwards the hook's input to this socket and prints the answer (RunHook).
// The socket lives in the turn's private directory (0700, the socket
// 0600), serves only peers of this uid, and each request carries the
// turn's token (LOOPRIG_HOOK_TOKEN in the agent's environment, never in
// argv). A PreToolUse request is a tool the agent wants to use: allowed by
// the profile's patterns, or asked as a gate; anything else (no answer in
// time, the turn ending, a request that cannot be read) is a denial.

// Environment of the agent's hooks.
const (
	hookSocketEnv = "LOOPRIG_HOOK"
	hookTokenEnv  = "LOOPRIG_HOOK_TOKEN"
)

const (
	// maxHookRequest bounds a hook's request (the agent's hook input).
	maxHookRequest = 1 << 20
	// hookIOTimeout bounds reading a request and writing an answer.
	hookIOTimeout = 5 * time.Second
	// hookSlack is how much longer than the gate's timeout the hook
	// command waits for its answer, and the agent for the hook: the gate
	// times out (and is denied) first.
	hookSlack = 30 * time.Second
)

// hookRequest is what `looprig hook` sends: the turn's token and the
// agent's hook input, as the agent wrote it.
type hookRequest struct {
	Token string          `json:"token"`
	Input json.RawMessage `json:"input"`
}

// hookAnswer is what the hook prints on its stdout for the agent.
type hookAnswer struct {
	Stdout string `json:"stdout"`
}

// hookInput is the part of the agent's hook input the engine reads.
type hookInput struct {
	Event     string          `json:"hook_event_name"`
	Tool      string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
	Message   string          `json:"message"`
	Session   string          `json:"session_id"`
}

// hookServer serves one agent turn's hooks. Its goroutines end by close,
// before the engine's Run returns.
type hookServer struct {
	ln          *net.UnixListener
	path, token string
	sink        Sink
	allow       []string
	gateTimeout time.Duration
	interactive bool // the agent's own interface runs: Stop means it waits for the user
	ctx         context.Context
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	gate        chan struct{} // holds a token while a gate is open: one at a time
}

// startHooks listens on dir/hook.sock for the hooks of a turn whose output
// and gates go to sink.
func startHooks(ctx context.Context, dir string, sink Sink, allow []string, gateTimeout time.Duration, interactive bool) (*hookServer, error) {
	token := make([]byte, 32)
	if _, err := rand.Read(token); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "hook.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen for the agent's hooks: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		return nil, err
	}
	h := &hookServer{ln: ln, path: path, token: hex.EncodeToString(token), sink: sink, allow: allow, gateTimeout: gateTimeout,
		interactive: interactive, gate: make(chan struct{}, 1)}
	h.ctx, h.cancel = context.WithCancel(ctx)
	h.wg.Add(1)
	go h.serve()
	return h, nil
}

// env is the environment the agent (and so its hooks) runs with.
func (h *hookServer) env() []string {
	return []string{hookSocketEnv + "=" + h.path, hookTokenEnv + "=" + h.token}
}

// close stops serving: open gates are closed (their hooks answer deny)
// and every goroutine has returned when it returns.
func (h *hookServer) close() {
	h.cancel()
	_ = h.ln.Close()
	h.wg.Wait()
}

func (h *hookServer) serve() {
	defer h.wg.Done()
	for {
		c, err := h.ln.AcceptUnix()
		if err != nil {
			return
		}
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			defer c.Close()
			stop := context.AfterFunc(h.ctx, func() { _ = c.SetDeadline(time.Now()) })
			defer stop()
			h.handle(c)
		}()
	}
}

func (h *hookServer) handle(c *net.UnixConn) {
	if uid, err := peercred.UID(c); err != nil || uid != os.Geteuid() {
		return
	}
	_ = c.SetReadDeadline(time.Now().Add(hookIOTimeout))
	var req hookRequest
	if json.NewDecoder(io.LimitReader(c, 2*maxHookRequest+4096)).Decode(&req) != nil || subtle.ConstantTimeCompare([]byte(req.Token), []byte(h.token)) != 1 {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	out := h.answer(req.Input)
	b, _ := json.Marshal(hookAnswer{Stdout: out})
	_ = c.SetWriteDeadline(time.Now().Add(hookIOTimeout))
	_, _ = c.Write(append(b, '\n'))
}

// answer decides a hook request and returns what the hook prints.
func (h *hookServer) answer(raw json.RawMessage) string {
	var in hookInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return denial("looprig could not read the request: " + err.Error())
	}
	switch in.Event {
	case "PreToolUse":
		return h.toolUse(in)
	case "Notification":
		if a, ok := h.sink.(AgentSink); ok {
			a.Notify(in.Message)
		}
	case "SessionStart":
		// The interactive interface reports its conversation here (headless
		// turns report it in their stream too).
		if a, ok := h.sink.(AgentSink); ok && validConversation(in.Session) {
			a.Conversation(in.Session)
		}
	case "Stop":
		// The agent finished answering: in its own interface it now waits
		// for the user (a headless turn ends instead).
		if a, ok := h.sink.(AgentSink); ok && h.interactive {
			a.Notify("claude is waiting for you")
		}
	}
	return ""
}

// toolUse decides whether the agent may use a tool: the allow patterns, or
// a gate.
func (h *hookServer) toolUse(in hookInput) string {
	arg := toolArgument(in.ToolInput)
	if toolAllowed(h.allow, in.Tool, arg) {
		return permission("allow", "allowed by the profile's agent_allow")
	}
	// The time to answer runs from the request, also while it waits for
	// the gate before it: the hook's own deadline does.
	deadline := time.Now().Add(h.gateTimeout)
	ctx, cancel := context.WithDeadline(h.ctx, deadline)
	defer cancel()
	select {
	case h.gate <- struct{}{}:
		defer func() { <-h.gate }()
	case <-ctx.Done():
	}
	if ctx.Err() != nil { // never asked: its time ran out behind another gate
		return denial(fmt.Sprintf("nobody answered looprig's gate within %s", h.gateTimeout))
	}
	approved, err := h.sink.Gate(ctx, toolGatePrompt(in.Tool, arg, deadline))
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return denial(fmt.Sprintf("nobody answered looprig's gate within %s", h.gateTimeout))
	case err != nil:
		return denial("looprig's gate was closed: " + err.Error())
	case !approved:
		return denial("the user denied it in looprig")
	}
	return permission("allow", "approved in looprig")
}

// toolGatePrompt is the question a tool's gate asks: the tool, what it
// would do, and when it is denied if nobody answers. Sanitized, one line,
// bounded: it is the agent's (the model's) text.
func toolGatePrompt(tool, arg string, deadline time.Time) string {
	// The deadline before the argument, which can be long: a pane that
	// cuts the line still shows it.
	q := fmt.Sprintf("claude wants to use %s (denied at %s if not answered): %s", tool, deadline.Format("15:04:05"), arg)
	return bound(textsafe.Line(q), maxGatePrompt)
}

// permission is a PreToolUse hook's answer.
func permission(decision, reason string) string {
	b, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]string{
		"hookEventName": "PreToolUse", "permissionDecision": decision, "permissionDecisionReason": reason,
	}})
	return string(b)
}

func denial(reason string) string { return permission("deny", reason) }

// RunHook is `looprig hook`: it forwards the hook input the agent wrote on
// stdin to the turn's hook socket (named by the environment, getenv) and
// returns what to print on stdout. It fails closed: when the socket cannot
// be reached, the input cannot be read, or no answer comes within wait, a
// PreToolUse hook answers deny (and other hooks nothing), so the agent
// never uses a tool nobody approved.
func RunHook(ctx context.Context, stdin io.Reader, getenv func(string) string, wait time.Duration) (string, error) {
	input, err := io.ReadAll(io.LimitReader(stdin, maxHookRequest+1))
	var in hookInput
	_ = json.Unmarshal(input, &in)
	fail := func(err error) (string, error) {
		if in.Event == "PreToolUse" || in.Event == "" {
			return denial("looprig: " + textsafe.Line(err.Error())), err
		}
		return "", err
	}
	switch {
	case err != nil:
		return fail(fmt.Errorf("read the hook's input: %w", err))
	case len(input) > maxHookRequest:
		return fail(fmt.Errorf("the hook's input is over %d bytes", maxHookRequest))
	case !json.Valid(input):
		return fail(errors.New("the hook's input is not JSON"))
	}
	path, token := getenv(hookSocketEnv), getenv(hookTokenEnv)
	if path == "" || token == "" {
		return fail(fmt.Errorf("%s and %s are not set: looprig hook runs only inside a looprig agent turn", hookSocketEnv, hookTokenEnv))
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return fail(fmt.Errorf("reach the session's holder: %w", err))
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	req, _ := json.Marshal(hookRequest{Token: token, Input: input})
	if _, err := c.Write(append(req, '\n')); err != nil {
		return fail(fmt.Errorf("send to the session's holder: %w", err))
	}
	var ans hookAnswer
	if err := json.NewDecoder(io.LimitReader(c, 1<<20)).Decode(&ans); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fail(fmt.Errorf("no answer from the session's holder: %w", err))
	}
	return strings.TrimSpace(ans.Stdout), nil
}
