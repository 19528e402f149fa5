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
// no duplicate) whatever the source drops, through rig.Follow and
// rig.Transcript.

type fakeSession struct {
	done   chan struct{}
	err    error // its fault
	script *scriptFeed
}

func (f *fakeSession) follow(ctx context.Context) (*rig.Follower, error) {
	return rig.Follow(ctx, f.script, 0)
}
func (f *fakeSession) Submit(context.Context, string) (rig.TurnInfo, error) {
	return rig.TurnInfo{ID: "t1", Index: 4}, nil
}
func (f *fakeSession) Interrupt(context.Context) error                 { return nil }
func (f *fakeSession) RespondGate(context.Context, string, bool) error { return nil }
func (f *fakeSession) Done() <-chan struct{}                           { return f.done }
func (f *fakeSession) settle(context.Context)                          {}
func (f *fakeSession) tty(context.Context) (bool, error)               { return true, nil }
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

// step is one thing the scripted feed does: deliver env, or end the
// reading with err (a *rig.FellBehindError is read again).
type step struct {
	env *event.Envelope
	err error
}

// scriptFeed plays its steps across its readings.
type scriptFeed struct {
	steps  []step
	i      int
	opens  int
	closes int
}

func (f *scriptFeed) OpenFeed(context.Context, uint64) (rig.FeedReader, error) {
	f.opens++
	return scriptReader{f}, nil
}

type scriptReader struct{ f *scriptFeed }

func (r scriptReader) Next(ctx context.Context) ([]event.Envelope, error) {
	f := r.f
	if f.i >= len(f.steps) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	s := f.steps[f.i]
	f.i++
	if s.err != nil {
		return nil, s.err
	}
	return []event.Envelope{*s.env}, nil
}

func (r scriptReader) Close() error { r.f.closes++; return nil }

func ev(seq uint64, e event.Event) step {
	return step{env: &event.Envelope{Seq: seq, Event: e}}
}

func delta(off int64, text string) step {
	return ev(0, event.OutputDelta{TurnID: "t1", Stream: event.StreamStdout, Offset: off, Text: text})
}

func outputCheckpoint(seq uint64, off int64, text string) step {
	return ev(seq, event.TurnOutput{TurnID: "t1", Offset: off, Text: text})
}

var fellBehind = step{err: &rig.FellBehindError{Err: errors.New("queue full")}}

func runScript(t *testing.T, fault error, steps ...step) (int, string, string, *scriptFeed) {
	t.Helper()
	e, out, errb := testEnv(false)
	e.cmd = "run"
	c := &call{env: e, sig: &interrupts{ctx: context.Background(), force: make(chan struct{})}}
	feed := &scriptFeed{steps: steps}
	tr := &turnRunner{c: c, s: &fakeSession{done: make(chan struct{}), err: fault, script: feed}}
	code := tr.run("input")
	return code, out.String(), errb.String(), feed
}

func TestTurnRunnerOutput(t *testing.T) {
	started := ev(1, event.TurnStarted{TurnID: "t1", Index: 4, Input: "input"})
	done := func(seq uint64) step {
		return ev(seq, event.TurnDone{TurnID: "t1", ExitCode: 3, Duration: time.Second})
	}
	tests := []struct {
		name  string
		steps []step
		want  string
	}{
		{"live deltas", []step{started, delta(0, "a"), delta(1, "b"), outputCheckpoint(2, 0, "ab"), done(3)}, "ab"},
		{"a delta dropped before its checkpoint", []step{started, delta(0, "a"), outputCheckpoint(2, 0, "ab"), done(3)}, "ab"},
		{"a delta dropped, then more deltas", []step{started, delta(0, "a"), delta(2, "c"), outputCheckpoint(2, 0, "abc"), delta(3, "d"),
			outputCheckpoint(3, 3, "d"), done(4)}, "abcd"},
		{"dropped before the first delta", []step{started, delta(1, "b"), outputCheckpoint(2, 0, "ab"), done(3)}, "ab"},
		{"late deltas after a checkpoint", []step{started, outputCheckpoint(2, 0, "ab"), delta(0, "a"), delta(1, "b"), delta(2, "c"),
			outputCheckpoint(3, 2, "c"), done(4)}, "abc"},
		{"fell behind, then from the journal again", []step{started, delta(0, "a"), outputCheckpoint(2, 0, "a"),
			fellBehind, outputCheckpoint(2, 0, "a"), outputCheckpoint(3, 1, "b"), done(4)}, "ab"},
		{"fell behind before a checkpoint", []step{started, delta(0, "a"), fellBehind, outputCheckpoint(2, 0, "ab"), done(3)}, "ab"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errb, feed := runScript(t, nil, tt.steps...)
			if code != 3 || out != tt.want || !strings.Contains(errb, "turn 4 exited 3 in 1s") || feed.closes != feed.opens {
				t.Fatalf("exit %d, stdout %q, stderr %q, %d readings of which %d closed; want 3, %q, the closing line, all closed",
					code, out, errb, feed.opens, feed.closes, tt.want)
			}
		})
	}
}

func TestTurnRunnerFault(t *testing.T) {
	fault := &LeaseLostError{Session: "0b9e3a4e-1111-4222-8333-444455556666", Epoch: 2}
	started := ev(1, event.TurnStarted{TurnID: "t1", Index: 4, Input: "input"})
	code, _, errb, _ := runScript(t, fault, started, delta(0, "a"), step{err: errors.New("connection lost")})
	if code != exitRunFailed || !strings.HasPrefix(errb, "\nlooprig: LEASE LOST: session 0b9e3a4e lost its lease at epoch 2") {
		t.Fatalf("a fault under the turn: exit %d, stderr %q", code, errb)
	}
	code, _, errb, _ = runScript(t, nil, started, step{err: rig.ErrFollowEnded})
	if code != exitRunFailed || !strings.Contains(errb, "the session stopped before turn 4 ended") {
		t.Fatalf("the events ended: exit %d, stderr %q", code, errb)
	}
	code, _, errb, _ = runScript(t, nil, started, step{err: errors.New("bad stream")})
	if code != exitRunFailed || !strings.Contains(errb, "follow turn 4: bad stream") {
		t.Fatalf("the events failed: exit %d, stderr %q", code, errb)
	}
}
