package engine

import (
	"context"
	"fmt"
	"strings"
	"time"
)

type demo struct {
	steps    int
	interval time.Duration
}

// NewDemo returns the "demo" engine: timed steps, no external program. See
// the package documentation for its input language.
func NewDemo(cfg Config) Engine {
	cfg = cfg.withDefaults()
	return &demo{steps: cfg.DemoSteps, interval: cfg.DemoInterval}
}

func (d *demo) Name() string { return "demo" }

func (d *demo) Run(ctx context.Context, turn Turn, sink Sink) (Result, error) {
	none := Result{ExitCode: NoExitCode}
	if ctx.Err() != nil {
		return none, interrupted(ctx, "demo")
	}
	input := turn.Input
	if prompt, ok := strings.CutPrefix(input, "gate "); ok {
		if err := askGate(ctx, "demo", sink, prompt); err != nil {
			return none, err
		}
		input = prompt
	}
	fail := strings.TrimSpace(input) == "fail"
	var timer *time.Timer
	for i := 1; i <= d.steps; i++ {
		if i > 1 {
			if timer == nil {
				timer = time.NewTimer(d.interval)
				defer timer.Stop()
			} else {
				timer.Reset(d.interval)
			}
			select {
			case <-ctx.Done():
				return none, interrupted(ctx, "demo")
			case <-timer.C:
			}
		}
		if ctx.Err() != nil {
			return none, interrupted(ctx, "demo")
		}
		sink.Output(Stdout, fmt.Sprintf("step %d/%d: %s\n", i, d.steps, input))
		if fail {
			return Result{ExitCode: 1}, nil
		}
	}
	return Result{ExitCode: 0}, nil
}
