package engine

import (
	"context"
	"fmt"
	"strings"
)

// normalizeSpace collapses runs of whitespace to one space and trims the
// ends.
func normalizeSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// matchPolicy returns the first policy pattern found in input (both
// whitespace-normalized; plain case-sensitive substring). Empty patterns
// never match.
func matchPolicy(policy []string, input string) (string, bool) {
	in := normalizeSpace(input)
	for _, p := range policy {
		np := normalizeSpace(p)
		if np != "" && strings.Contains(in, np) {
			return p, true
		}
	}
	return "", false
}

// gatePrompt is the question asked for a command matching pattern.
func gatePrompt(pattern, input string) string {
	return fmt.Sprintf("run command matching gate policy %q? %s", pattern, input)
}

// askGate asks sink.Gate and turns the answer into Run's error: nil when
// approved, *GateDeniedError when denied, the interruption when ctx ended.
func askGate(ctx context.Context, engine string, sink Sink, prompt string) error {
	approved, err := sink.Gate(ctx, prompt)
	if ctx.Err() != nil {
		return interrupted(ctx, engine)
	}
	if err != nil {
		return fmt.Errorf("engine %s: gate: %w", engine, err)
	}
	if !approved {
		return &GateDeniedError{Prompt: prompt}
	}
	return nil
}
