// Package engine defines how a turn is run: the Engine interface, the Sink
// an engine streams into, and the built-in engines, "shell", "demo",
// "claude" and "codex".
//
// The session runtime (package rig) owns everything around a turn: it
// records events, checkpoints output into the journal, resolves gates and
// decides when to interrupt. An engine only runs one turn and streams its
// output. Implementing an Engine takes one method besides Name:
//
//	Run(ctx, turn, sink) (Result, error)
//
// Contract for every Engine (the built-ins and user-written ones):
//
//   - Run streams output with sink.Output, from one goroutine at a time
//     (calls are serialized, never concurrent), and never after Run has
//     returned.
//   - Before doing anything a policy wants confirmed, Run asks sink.Gate.
//     A denial makes Run return *GateDeniedError without running anything.
//   - Cancelling ctx interrupts the turn: Run stops promptly and returns an
//     error wrapping context.Cause(ctx) (and ctx.Err()), so errors.Is(err,
//     cause) and errors.Is(err, context.Canceled) hold.
//   - A turn that ran to its end returns a nil error and its exit code, even
//     when that code is not zero: a failing command is a result, not an
//     engine error. Result.ExitCode is NoExitCode (-1) when there is no exit
//     status (nothing ran, or an engine without processes was interrupted).
//
// # The shell engine
//
// "shell" runs the input as "SHELL -c INPUT" in Turn.Dir, SHELL being
// Config.Shell: DefaultShell (/bin/sh) unless the caller names another (the
// runtime passes its profile's shell, else the user's $SHELL: UserShell).
// The environment is os.Environ() + TERM (pty mode only) + Turn.Env (later
// entries win). Each turn runs in its own session and process group
// (setsid), so it can be signalled as a whole and never shares the
// caller's terminal. The turn ends when the shell exits; whatever it left
// running in its process group (a "cmd &" it did not wait for) is killed
// then. Only the input runs in SHELL: the go-ahead wrapper before it and
// the watcher beside it (see Parent death) are /bin/sh.
//
// Terminal (the default): the turn runs on a pseudo-terminal of its own.
// The shell is the session leader and the pty's slave is its controlling
// terminal and its stdin, stdout and stderr, so programs see a terminal
// (isatty, tty prints /dev/pts/N, stty works, ^C and window size as in a
// terminal emulator); its process group is the terminal's foreground group.
// TERM is Config.Term (default DefaultTerm, "xterm-256color"). stdout and
// stderr arrive merged, in the order written, as Stdout; nothing arrives as
// Stderr. The terminal starts in the usual cooked mode (canonical input,
// echo, signal characters) except that output post-processing does not turn
// "\n" into "\r\n" (ONLCR off), so line-oriented output looks as through a
// pipe; programs may change the modes (stty raw, a full-screen editor).
// Everything written to the terminal is output, escape sequences included;
// the engine does not emulate a screen.
//
// The runtime drives the terminal through Turn.Console (see Console):
// window size (Resize: TIOCSWINSZ, the turn gets SIGWINCH), input (Write,
// with the echo state so a password can be masked; EOF, the VEOF character)
// and ^C (Interrupt: the VINTR character, or SIGINT to the foreground group
// when the program turned signal characters off). With Turn.Console nil the
// engine makes a Console of the default size (DefaultCols×DefaultRows); it
// attaches the pty when the turn starts and detaches it when it ends.
// Console.Write never blocks beyond its ctx, even when the turn does not
// read its input. Input written after the engine attached the pty but before
// the turn's command started waits in the terminal, like typeahead.
//
// Config.NoTTY: the turn runs as it did before terminals: stdin on
// /dev/null, stdout and stderr on two pipes, delivered as Stdout and Stderr;
// the turn has no controlling terminal, TERM is inherited unchanged, and its
// Console stays unattached (Write returns ErrNoTerminal).
//
// Interrupt (ctx cancelled), in both modes: SIGTERM to the whole process
// group; when the group is not gone after Config.ShellGrace, SIGKILL to the
// group. Run returns once the group is gone and the output is drained. This
// is the runtime's interrupt; Console.Interrupt (^C) is a separate, softer
// request the program may handle.
//
// Turn.Started is called with the turn's process group id once the group
// exists and the parent-death watcher is armed, before the input runs; the
// turn's processes carry Turn.Env, so whoever finds the group can tell it is
// the turn's. An error from it makes the turn exit without running anything.
//
// Parent death: a SIGKILL of the process running the engine leaves no turn
// process behind. Next to each turn runs a tiny watcher (/bin/sh reading a
// pipe whose only writer is this process). When this process dies for any
// reason, the kernel closes the pipe, the watcher reads EOF and SIGKILLs the
// turn's process group. At the end of a normal turn the watcher is told
// "done" and exits without killing. The turn's shell does not start the
// user's command before the watcher is armed (it waits for a go-ahead line on
// a pipe and exits on EOF), so there is no window in which a crash leaves an
// unwatched turn. The same holds when the process exits normally (os.Exit)
// with a turn still running. On a pty the kernel also hangs the terminal up
// when the master closes with this process (SIGHUP to the foreground group),
// but the watcher does not rely on it: processes ignoring SIGHUP die too.
// Limits: processes that leave the process group (setsid, setpgid, a shell
// with job control) are not followed, and a process stuck in uninterruptible
// sleep outlives SIGKILL until its I/O completes (Run waits for it at most
// 5 s). The input is one argv string, so the kernel's limit applies (128 KiB
// on Linux).
//
// Output: the pty master (or both pipes) is read as data arrives and
// delivered in chunks of at most 32 KiB without waiting for a newline (a
// progress bar streams). On pipes, lines are bounded: a line longer than
// Config.MaxLine bytes is broken by inserting a newline every MaxLine bytes
// (never inside a UTF-8 sequence when it can be avoided, so pieces are
// MaxLine-3..MaxLine bytes). A pty's output is passed exactly: it is a
// terminal's byte stream, and a full-screen program writes no newline, so
// one inserted every MaxLine bytes moved its cursor down a row (its screen
// under attach went wrong after about 900 typed lines); the views bound
// what they keep themselves (termrender wraps lines at its cell bound).
// Bytes are otherwise passed through unchanged,
// invalid UTF-8 included; an incomplete UTF-8 sequence at the end of a read
// (at most 3 bytes) is held back until the next read so that chunks do not
// split characters. At the end of the turn the output is drained until the
// master reports EIO (the last slave descriptor closed) or the pipes EOF; a
// process that left the group and keeps the slave or a pipe open does not
// make Run hang: reading stops once nothing is buffered (at most 5 s).
//
// Gate policy: before running, the whitespace-normalized input (runs of
// spaces, tabs and newlines collapsed to one space) is searched for each
// whitespace-normalized policy pattern as a plain, case-sensitive substring.
// The first matching pattern opens a gate. This is a guard rail against
// accidents, not a security boundary: "rm -r -f", quoting or a script file
// get past it.
//
// The exit code is the shell's; a shell killed by signal N reports 128+N, as
// shells do. An interrupted turn returns the interruption error together with
// that exit code (usually 143 or 137).
//
// # The demo engine
//
// "demo" runs no program. It emits Config.DemoSteps lines (default 10) on
// stdout, the first at once and the next ones every Config.DemoInterval
// (default 1s), then ends with exit code 0. Its input language:
//
//	TEXT        emits "step i/N: TEXT" for i = 1..N, exit code 0
//	fail        emits "step 1/N: fail", then exits with code 1
//	gate PROMPT asks a gate with PROMPT first; denied → *GateDeniedError,
//	            approved → runs PROMPT as above (so "gate fail" asks, then fails)
//
// Cancelling ctx stops it at once. Output is deterministic. It has no
// terminal: Turn.Console stays unattached (Write returns ErrNoTerminal).
//
// # The claude engine
//
// "claude" is an Agent: each turn is one prompt to Claude Code, headless,
// in the conversation Turn.Conversation names (started with --session-id,
// continued with --resume when Turn.Resume). It runs in the shell engine's
// process machinery on pipes (no terminal), so Started, interrupts and
// parent death behave as above. Its tool requests are gates through a
// per-turn hook socket (see claude_hooks.go and RunHook); anything but an
// approval denies the tool. Its output is sanitized text: the agent's
// streamed text, a line per tool call and per result (see
// claude_stream.go). An error the agent reports is *AgentFailedError; a
// missing program *AgentNotFoundError. With Config.AgentInteractive the
// turn is the agent's own interface on the turn's pseudo-terminal instead.
//
// # The codex engine
//
// "codex" is an Agent whose conversations Codex names itself: the first
// turn starts one (NewConversation returns "") and reports its id, later
// ones resume it (codex exec resume). Its tool calls are not gates (see
// codex.go).
package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"looprig/rig/fault"
)

// Turn is one submitted input.
type Turn struct {
	SessionID string
	LoopID    string
	ID        string // turn id
	Index     int
	Input     string
	// Dir is the workspace directory the turn runs in. Empty means the
	// current directory of the process (the runtime always sets it).
	Dir string
	// Env is extra environment, appended to os.Environ() (later entries
	// win). The runtime passes LOOPRIG_SESSION=... and LOOPRIG_TURN=....
	Env []string
	// Console is the turn's terminal as the runtime drives it (size, input,
	// ^C). The runtime creates one per turn with NewConsole. nil: an engine
	// that uses a terminal makes its own of the default size. Engines
	// without a terminal leave it unattached (its Write returns
	// ErrNoTerminal).
	Console *Console
	// Started, when set, is called by an engine that runs processes once
	// the turn's process group exists (pgid is its id) and before the
	// input runs, so that the caller can record where the turn runs. An
	// error stops the turn before anything of the input ran: Run returns
	// an error wrapping it, with no exit code.
	Started func(pgid int) error
	// Conversation is the id of the conversation an agent engine's turn
	// continues (see Agent); Resume says the agent has it already (a turn
	// before this one started it), so the turn resumes it instead of
	// starting it. Other engines ignore both.
	Conversation string
	Resume       bool
}

// Stream names an output stream. The values equal event.StreamStdout and
// event.StreamStderr.
type Stream string

// Output streams.
const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// Sink receives a turn's output and answers gate questions. The runtime
// implements it.
type Sink interface {
	// Output receives a chunk of output. Engines call it from one goroutine
	// at a time, never after Run returned, and never with empty text. Text is
	// raw bytes of the child (possibly invalid UTF-8); the receiver sanitizes
	// for display. Output must not block for long: it is on the path that
	// drains the child's pipes.
	Output(stream Stream, text string)
	// Gate asks a yes/no question and blocks until it is answered or ctx
	// ends (then it returns ctx's error).
	Gate(ctx context.Context, prompt string) (approved bool, err error)
}

// NoExitCode is Result.ExitCode when the turn has no exit status.
const NoExitCode = -1

// Result is how a turn ended.
type Result struct {
	// ExitCode is the exit code of the turn (128+N when a process was
	// killed by signal N), or NoExitCode.
	ExitCode int
}

// Engine runs turns. Implementations must be safe for concurrent Runs.
type Engine interface {
	// Name is the registry name ("shell", "demo").
	Name() string
	// Run runs the turn and streams its output into sink. Cancelling ctx
	// interrupts it: the engine stops promptly and returns an error
	// wrapping context.Cause(ctx). See the package documentation for the
	// full contract.
	Run(ctx context.Context, turn Turn, sink Sink) (Result, error)
}

// GateDeniedError is returned by Run when a gate was denied; nothing ran.
type GateDeniedError struct {
	Prompt string
}

func (e *GateDeniedError) Error() string {
	return "engine: gate denied: " + e.Prompt
}

// UnknownEngineError is returned by Lookup for a name that is not a
// built-in engine.
type UnknownEngineError struct {
	Name  string
	Known []string
}

func (e *UnknownEngineError) Error() string {
	return fmt.Sprintf("engine: unknown engine %q (known: %s)", e.Name, strings.Join(e.Known, ", "))
}

// Explanation explains it: kind unknown_engine.
func (e *UnknownEngineError) Explanation() fault.Explanation {
	return fault.Of(fault.KindUnknownEngine, fault.Fact("engine", e.Name), fault.Fact("known", e.Known))
}

// Defaults for Config fields left zero.
const (
	DefaultDemoSteps    = 10
	DefaultDemoInterval = time.Second
	DefaultShellGrace   = 3 * time.Second
	DefaultMaxLine      = 64 << 10
	DefaultTerm         = "xterm-256color"
)

// DefaultGatePolicy is the shell engine's gate policy when Config.GatePolicy
// is nil.
var DefaultGatePolicy = []string{
	"rm -rf",
	"rm -fr",
	"sudo",
	"git push --force",
	"git push -f",
	"mkfs",
	"dd if=",
	"> /dev/sd",
}

// Config configures the built-in engines. Zero values mean defaults.
type Config struct {
	// GatePolicy lists the shell engine's gate patterns. nil means
	// DefaultGatePolicy; an empty non-nil slice means no gates.
	GatePolicy []string
	// DemoSteps is the number of demo steps (≤ 0: DefaultDemoSteps).
	DemoSteps int
	// DemoInterval is the time between demo steps (≤ 0: DefaultDemoInterval).
	DemoInterval time.Duration
	// ShellGrace is the time between SIGTERM and SIGKILL on interrupt
	// (≤ 0: DefaultShellGrace).
	ShellGrace time.Duration
	// MaxLine bounds output lines on pipes, in bytes (≤ 0:
	// DefaultMaxLine); a pty's output is not cut.
	MaxLine int
	// NoTTY makes the shell engine run turns without a terminal: stdin on
	// /dev/null, stdout and stderr on separate pipes. By default (false) a
	// turn runs on a pseudo-terminal.
	NoTTY bool
	// Term is TERM for turns on a pseudo-terminal ("": DefaultTerm).
	Term string
	// Shell is the shell engine's shell, an absolute path: a turn runs as
	// "Shell -c INPUT" ("": DefaultShell). See CheckShell and UserShell.
	Shell string
	// ShellInteractive runs a turn as "Shell -i -c INPUT": an interactive
	// shell, which reads the user's rc file (~/.bashrc, ~/.zshrc) and so
	// knows their aliases and functions.
	ShellInteractive bool
	// AgentCommand is the agent engine's program: a path, or a name looked
	// up in $PATH ("": the engine's own, "claude" or "codex").
	AgentCommand string
	// AgentAllow lists the tool patterns an agent may use without a gate
	// (nil: DefaultAgentAllow; an empty non-nil slice: every tool asks).
	AgentAllow []string
	// AgentGateTimeout is how long a tool's gate waits before the tool is
	// denied (≤ 0: DefaultAgentGateTimeout).
	AgentGateTimeout time.Duration
	// HookCommand is the argv of `looprig hook`, which an agent's hooks run
	// (nil: this executable, "hook").
	HookCommand []string
	// AgentInteractive runs the agent's own full-screen interface on the
	// turn's pseudo-terminal instead of one headless prompt: the turn is
	// the agent's session, until it exits; its input is the first prompt.
	AgentInteractive bool
}

func (c Config) withDefaults() Config {
	if c.GatePolicy == nil {
		c.GatePolicy = DefaultGatePolicy
	}
	if c.DemoSteps <= 0 {
		c.DemoSteps = DefaultDemoSteps
	}
	if c.DemoInterval <= 0 {
		c.DemoInterval = DefaultDemoInterval
	}
	if c.ShellGrace <= 0 {
		c.ShellGrace = DefaultShellGrace
	}
	if c.MaxLine <= 0 {
		c.MaxLine = DefaultMaxLine
	}
	if c.Term == "" {
		c.Term = DefaultTerm
	}
	if c.Shell == "" {
		c.Shell = DefaultShell
	}
	if c.AgentAllow == nil {
		c.AgentAllow = DefaultAgentAllow
	}
	if c.AgentGateTimeout <= 0 {
		c.AgentGateTimeout = DefaultAgentGateTimeout
	}
	return c
}

var builtins = map[string]func(Config) Engine{
	"shell":  NewShell,
	"demo":   NewDemo,
	"claude": NewClaude,
	"codex":  NewCodex,
}

// Names lists the built-in engine names, sorted.
func Names() []string {
	names := make([]string, 0, len(builtins))
	for n := range builtins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the built-in engine called name configured with cfg, or
// *UnknownEngineError.
func Lookup(name string, cfg Config) (Engine, error) {
	mk, ok := builtins[name]
	if !ok {
		return nil, &UnknownEngineError{Name: name, Known: Names()}
	}
	return mk(cfg), nil
}

// interrupted is the error Run returns when ctx ended. It wraps both
// context.Cause(ctx) and ctx.Err(), so errors.Is works with the cause as well
// as with context.Canceled or context.DeadlineExceeded.
func interrupted(ctx context.Context, engine string) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || errors.Is(cause, err) {
		return fmt.Errorf("engine %s: turn interrupted: %w", engine, err)
	}
	return fmt.Errorf("engine %s: turn interrupted: %w (%w)", engine, cause, err)
}
