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
	"slices"
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
// turn's token, which the hook reads from a file beside the socket (0600):
// the settings name both on the hook's command line, so neither is in the
// agent's environment, and so in no tool command's. A PreToolUse request
// is a tool the agent wants to use: allowed by the profile's patterns, or
// asked as a gate; anything else (no answer in time, the turn ending, a
// request that cannot be read) is a denial.
//
// The token tells the hook from another user's process, not from the
// agent's own tools: they run as the user, beside the hook, and one that
// looks for it finds it (the settings file is named on the agent's command
// line, and the token file is the user's). So the socket takes nothing on
// the token's word that would let a tool speak for the user or pose as
// the agent's program: only the hook events the turn asked for
// (hookEvents: a headless turn takes no SessionStart or Stop), an event of
// another kind is refused (AgentSink.HookRefused); a conversation id is
// only reported, and the runtime refuses one that is not the session's; a
// notification is journaled as the agent's words; and a gate is answered
// only by a client outside the session's turns (rig.FromTurnError).

// The environment of the agent's hooks of an earlier looprig (the socket
// and the token): `looprig hook` still reads them when its command line
// names neither, so that a turn its earlier host started goes on.
const (
	hookSocketEnv = "LOOPRIG_HOOK"
	hookTokenEnv  = "LOOPRIG_HOOK_TOKEN"
)

// The hook events a turn asks the agent for.
const (
	hookPreToolUse   = "PreToolUse"
	hookNotification = "Notification"
	hookSessionStart = "SessionStart"
	hookStop         = "Stop"
)

// hookEvents are the hook events a turn asks the agent for, and the only
// ones its socket takes: PreToolUse (a gate) and Notification (attention);
// the agent's own interface also SessionStart (its conversation) and Stop
// (it waits for the user). Headless turns report the conversation in
// their stream and end where the agent stops.
func hookEvents(interactive bool) []string {
	if interactive {
		return []string{hookPreToolUse, hookNotification, hookSessionStart, hookStop}
	}
	return []string{hookPreToolUse, hookNotification}
}

const (
	// maxHookRequest bounds a hook's request (the agent's hook input).
	maxHookRequest = 1 << 20
	// hookIOTimeout bounds reading a request and writing an answer.
	hookIOTimeout = 5 * time.Second
	// hookSlack is how much longer than the gate's timeout the hook
	// command waits for its answer, and the agent for the hook: the gate
	// times out (and is denied) first.
	hookSlack = 30 * time.Second
	// maxTokenFile bounds the token file the hook reads.
	maxTokenFile = 4 << 10
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
	tokenFile   string
	events      []string // the hook events the turn asked for (hookEvents)
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
	tokenFile := filepath.Join(dir, "hook.token")
	if err := os.WriteFile(tokenFile, []byte(hex.EncodeToString(token)), 0o600); err != nil {
		return nil, fmt.Errorf("write the hooks' token: %w", err)
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
	h := &hookServer{ln: ln, path: path, token: hex.EncodeToString(token), tokenFile: tokenFile, events: hookEvents(interactive),
		sink: sink, allow: allow, gateTimeout: gateTimeout, interactive: interactive, gate: make(chan struct{}, 1)}
	h.ctx, h.cancel = context.WithCancel(ctx)
	h.wg.Add(1)
	go h.serve()
	return h, nil
}

// args is what the hook's command line adds to `looprig hook`: where
// its socket and its token are.
func (h *hookServer) args() []string {
	return []string{"--socket", h.path, "--token-file", h.tokenFile}
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

// answer decides a hook request and returns what the hook prints. An
// event the turn did not ask for (hookEvents) is refused: it changes
// nothing, and the sink is told.
func (h *hookServer) answer(raw json.RawMessage) string {
	var in hookInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return denial("looprig could not read the request: " + err.Error())
	}
	a, _ := h.sink.(AgentSink)
	if !slices.Contains(h.events, in.Event) {
		if a != nil {
			a.HookRefused(in.Event)
		}
		if in.Event == "" {
			return denial("looprig could not read the request: it names no hook event")
		}
		return ""
	}
	switch in.Event {
	case hookPreToolUse:
		return h.toolUse(in)
	case hookNotification:
		if a != nil {
			a.Notify(in.Message)
		}
	case hookSessionStart:
		// The interactive interface reports its conversation here; the
		// runtime keeps the session's own (headless turns report it in
		// their stream).
		if a != nil && validConversation(in.Session) {
			a.Conversation(in.Session, FromHook)
		}
	case hookStop:
		// The agent finished answering: in its own interface it now waits
		// for the user.
		if a != nil {
			a.Notify("")
		}
	}
	return ""
}

// toolUse decides whether the agent may use a tool: the allow patterns, or
// a gate.
func (h *hookServer) toolUse(in hookInput) string {
	arg := toolArgument(in.ToolInput)
	if toolAllowed(h.allow, in.Tool, in.ToolInput) {
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

// HookTarget is where `looprig hook` reaches its turn: the hook socket and
// the file that holds the turn's token, as the turn's settings name them
// on the hook's command line.
type HookTarget struct {
	Socket    string
	TokenFile string
	// Token is the token itself, for a hook started by an earlier looprig,
	// which had it in the agent's environment (HookTargetFromEnv).
	Token string
}

// HookTargetFromEnv is the target a hook of an earlier looprig found in
// its environment.
func HookTargetFromEnv(getenv func(string) string) HookTarget {
	return HookTarget{Socket: getenv(hookSocketEnv), Token: getenv(hookTokenEnv)}
}

// token reads the target's token.
func (t HookTarget) token() (string, error) {
	if t.TokenFile == "" {
		if t.Token == "" {
			return "", errors.New("no token: looprig hook runs only as an agent turn's hook (its settings name --socket and --token-file)")
		}
		return t.Token, nil
	}
	f, err := os.Open(t.TokenFile)
	if err != nil {
		return "", fmt.Errorf("read the turn's token: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("read the turn's token: %s is not a regular file", t.TokenFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile))
	if err != nil {
		return "", fmt.Errorf("read the turn's token: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// RunHook is `looprig hook`: it forwards the hook input the agent wrote on
// stdin to the turn's hook socket (target) and returns what to print on
// stdout. It fails closed: when the socket cannot be reached, the input or
// the token cannot be read, or no answer comes within wait, a PreToolUse
// hook answers deny (and other hooks nothing), so the agent never uses a
// tool nobody approved.
func RunHook(ctx context.Context, stdin io.Reader, target HookTarget, wait time.Duration) (string, error) {
	input, err := io.ReadAll(io.LimitReader(stdin, maxHookRequest+1))
	var in hookInput
	_ = json.Unmarshal(input, &in)
	fail := func(err error) (string, error) {
		if in.Event == hookPreToolUse || in.Event == "" {
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
	if target.Socket == "" {
		return fail(errors.New("no hook socket: looprig hook runs only as an agent turn's hook (its settings name --socket and --token-file)"))
	}
	token, err := target.token()
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", target.Socket)
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
