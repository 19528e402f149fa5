package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/event"
)

// turnRunner over scripted sessions and events: the output rule (no gap,
// no duplicate) whatever the source drops.

type fakeSession struct {
	done chan struct{}
	err  error // its fault
}

func (f *fakeSession) Submit(context.Context, string) (rig.TurnInfo, error) {
	return rig.TurnInfo{ID: "t1", Index: 4}, nil
}
func (f *fakeSession) Interrupt(context.Context) error                 { return nil }
func (f *fakeSession) RespondGate(context.Context, string, bool) error { return nil }
func (f *fakeSession) Done() <-chan struct{}                           { return f.done }
func (f *fakeSession) fault() error                                    { return f.err }

// The turn of a scripted run has no terminal: stdin is not one either.
func (f *fakeSession) SendInput(context.Context, string) (bool, error) {
	return false, &rig.NoTerminalError{}
}
func (f *fakeSession) SendEOF(context.Context) error { return &rig.NoTerminalError{} }
func (f *fakeSession) TerminalState(context.Context) (bool, bool, error) {
	return false, false, nil
}
func (f *fakeSession) Resize(context.Context, int, int) error { return nil }

// step is one thing the fake events do: deliver env (with the drop count
// as of it), end (ok false; resume says resumed), or fail with err.
type step struct {
	env     *event.Envelope
	drops   uint64
	end     bool
	resumed bool
	err     error
}

type fakeEvents struct {
	steps   []step
	i       int
	drops   uint64
	resumed bool
	closed  bool
}

func (f *fakeEvents) next(ctx context.Context, _ uint64) ([]event.Envelope, bool, error) {
	if f.i >= len(f.steps) {
		<-ctx.Done()
		return nil, true, ctx.Err()
	}
	s := f.steps[f.i]
	f.i++
	f.drops = s.drops
	switch {
	case s.err != nil:
		return nil, true, s.err
	case s.end:
		f.resumed = s.resumed
		return nil, false, nil
	}
	return []event.Envelope{*s.env}, true, nil
}

func (f *fakeEvents) dropped() uint64 { return f.drops }
func (f *fakeEvents) resume() bool    { r := f.resumed; f.resumed = false; return r }
func (f *fakeEvents) close()          { f.closed = true }

func ev(seq uint64, e event.Event) step {
	return step{env: &event.Envelope{Seq: seq, Event: e}}
}

func delta(text string, drops uint64) step {
	s := ev(0, event.OutputDelta{TurnID: "t1", Stream: event.StreamStdout, Text: text})
	s.drops = drops
	return s
}

func checkpoint(seq uint64, text string, drops uint64) step {
	s := ev(seq, event.TurnOutput{TurnID: "t1", Text: text})
	s.drops = drops
	return s
}

func runScript(t *testing.T, fault error, steps ...step) (int, string, string, *fakeEvents) {
	t.Helper()
	e, out, errb := testEnv(false)
	e.cmd = "run"
	c := &call{env: e, sig: &interrupts{ctx: context.Background(), force: make(chan struct{})}}
	evs := &fakeEvents{steps: steps}
	tr := &turnRunner{c: c, s: &fakeSession{done: make(chan struct{}), err: fault}, ev: evs}
	code := tr.run("input")
	return code, out.String(), errb.String(), evs
}

func TestTurnRunnerOutput(t *testing.T) {
	started := ev(1, event.TurnStarted{TurnID: "t1", Index: 4, Input: "input"})
	done := func(seq uint64) step {
		return ev(seq, event.TurnDone{TurnID: "t1", ExitCode: 3, Duration: time.Second})
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"live deltas", []step{started, delta("a", 0), delta("b", 0), checkpoint(2, "ab", 0), done(3)}},
		{"a delta dropped before its checkpoint", []step{started, delta("a", 0), checkpoint(2, "ab", 1), done(3)}},
		{"a delta dropped, then more deltas", []step{started, delta("a", 0), checkpoint(2, "ab", 1), delta("c", 1), checkpoint(3, "c", 1), done(4)}},
		{"dropped before the first delta", []step{started, delta("b", 1), checkpoint(2, "ab", 1), done(3)}},
		{"fell behind, then from the journal again", []step{started, delta("a", 0), checkpoint(2, "a", 0),
			{end: true, resumed: true}, checkpoint(2, "a", 0), checkpoint(3, "b", 0), done(4)}},
		{"fell behind before a checkpoint", []step{started, delta("a", 0), {end: true, resumed: true},
			checkpoint(2, "ab", 0), done(3)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errb, evs := runScript(t, nil, tt.steps...)
			want := "ab"
			if strings.Contains(tt.name, "more deltas") {
				want = "abc"
			}
			if code != 3 || out != want || !strings.Contains(errb, "turn 4 exited 3 in 1s") || !evs.closed {
				t.Fatalf("exit %d, stdout %q, stderr %q, closed %v; want 3, %q, the closing line, closed", code, out, errb, evs.closed, want)
			}
		})
	}
}

func TestTurnRunnerFault(t *testing.T) {
	fault := &LeaseLostError{Session: "0b9e3a4e-1111-4222-8333-444455556666", Epoch: 2}
	started := ev(1, event.TurnStarted{TurnID: "t1", Index: 4, Input: "input"})
	code, _, errb, _ := runScript(t, fault, started, delta("a", 0), step{err: errors.New("connection lost")})
	if code != exitRunFailed || !strings.HasPrefix(errb, "\nlooprig: LEASE LOST: session 0b9e3a4e lost its lease at epoch 2") {
		t.Fatalf("a fault under the turn: exit %d, stderr %q", code, errb)
	}
	code, _, errb, _ = runScript(t, nil, started, step{end: true})
	if code != exitRunFailed || !strings.Contains(errb, "the session stopped before turn 4 ended") {
		t.Fatalf("the events ended: exit %d, stderr %q", code, errb)
	}
	code, _, errb, _ = runScript(t, nil, started, step{err: errors.New("bad stream")})
	if code != exitRunFailed || !strings.Contains(errb, "follow turn 4: bad stream") {
		t.Fatalf("the events failed: exit %d, stderr %q", code, errb)
	}
}
