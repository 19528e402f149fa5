package engine

import (
	"context"
	"time"
)

type shell struct {
	policy  []string
	grace   time.Duration
	maxLine int
	noTTY   bool
	term    string
	path    string // the shell: "path -c INPUT"
	// interactive: "path -i -c INPUT" (Config.ShellInteractive).
	interactive bool
}

// NewShell returns the "shell" engine: Config.Shell -c INPUT in the turn's
// directory, in its own session and process group, on a pseudo-terminal
// (or pipes with Config.NoTTY), watched against parent death. See the
// package documentation.
func NewShell(cfg Config) Engine {
	cfg = cfg.withDefaults()
	return &shell{policy: cfg.GatePolicy, grace: cfg.ShellGrace, maxLine: cfg.MaxLine, noTTY: cfg.NoTTY, term: cfg.Term, path: cfg.Shell, interactive: cfg.ShellInteractive}
}

func (s *shell) Name() string { return "shell" }

func (s *shell) Run(ctx context.Context, turn Turn, sink Sink) (Result, error) {
	none := Result{ExitCode: NoExitCode}
	if ctx.Err() != nil {
		return none, interrupted(ctx, "shell")
	}
	if pattern, ok := matchPolicy(s.policy, turn.Input); ok {
		if err := askGate(ctx, "shell", sink, gatePrompt(pattern, turn.Input)); err != nil {
			return none, err
		}
	}
	return s.run(ctx, turn, sink)
}
