package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/event"
)

// withRunningTurn is the mixed list with the live session's turn 1 past
// its gate and running.
func withRunningTurn(t *testing.T, m Model) (Model, *sessView) {
	m = withMixedList(t, m)
	v := m.sessions[fakeID(1)]
	m.send(streamMsg{id: v.id, gen: v.live.gen, envs: []event.Envelope{
		{Seq: 11, At: fixedNow, LoopID: "l00p", Event: event.GateResolved{GateID: "g1", Action: event.ActionApprove, Reason: "user"}},
	}})
	return m, v
}

func echo(m Model, off bool) Model {
	return m.send(echoMsg{id: fakeID(1), gen: m.input.turn.gen, status: host.Status{
		Turn: &host.TurnStatus{ID: "t1", Index: 1}, Terminal: true, EchoOff: off}})
}

// TestTurnInputMask: the line masks until the echo state is known and
// while it is off; text typed while it was off stays masked when the echo
// comes back on, until it is sent.
func TestTurnInputMask(t *testing.T) {
	m, v := withRunningTurn(t, fakeModel(t, 120, 30, asciiRenderer()))
	m = m.keys("i", "a", "b")
	if view := m.View(); !strings.Contains(view, "to turn 1 › ••") || strings.Contains(view, "› ab") {
		t.Fatalf("before the echo state is known the line is not masked:\n%s", view)
	}
	m = echo(m, false)
	if view := m.View(); !strings.Contains(view, "to turn 1 › ab") {
		t.Fatalf("echo on: the line is masked:\n%s", view)
	}
	m = m.keys("esc", "i")
	m = echo(m, true).keys("p", "w")
	if view := m.View(); !strings.Contains(view, "password to turn 1") || !strings.Contains(view, "› ••") {
		t.Fatalf("echo off: not masked:\n%s", view)
	}
	m = echo(m, false)
	if view := m.View(); strings.Contains(view, "› pw") || !strings.Contains(view, "› ••") {
		t.Fatalf("the echo came back on: what was typed while it was off is drawn:\n%s", view)
	}
	m = m.keys("enter") // queued (the fake model drops the command)
	if !v.live.sending || m.input == nil || m.input.ti.Value() != "" {
		t.Fatalf("enter: sending %v, line %v", v.live.sending, m.input)
	}
	m = m.keys("o", "k")
	if view := m.View(); !strings.Contains(view, "to turn 1 › ok") {
		t.Fatalf("after the send, a new line with the echo on is masked:\n%s", view)
	}
	m.keys("enter")
	if len(v.live.queue) != 1 || v.live.queue[0].text != "ok\n" {
		t.Fatalf("a second line while the first is sent is not queued: %+v", v.live.queue)
	}
}

// TestTurnInputClosesWithTurn: the turn's end closes the line, and a
// queued line is not sent to the next turn.
func TestTurnInputClosesWithTurn(t *testing.T) {
	m, v := withRunningTurn(t, fakeModel(t, 120, 30, asciiRenderer()))
	m = echo(m.keys("i"), false).keys("x", "enter", "y", "enter")
	m.send(streamMsg{id: v.id, gen: v.live.gen, envs: []event.Envelope{
		{Seq: 12, At: fixedNow, LoopID: "l00p", Event: event.TurnDone{TurnID: "t1"}},
		{Seq: 13, At: fixedNow, LoopID: "l00p", Event: event.TurnStarted{TurnID: "t2", Index: 2, Input: "cat"}},
	}})
	if m.input != nil {
		t.Fatal("the line stayed open after its turn ended")
	}
	m.send(inputSentMsg{id: v.id, c: v.live.c, send: turnSend{turnID: "t1", index: 1, text: "x\n"}})
	if v.live.sending || len(v.live.queue) != 0 {
		t.Fatalf("the line queued for turn 1 went to turn 2: sending %v, queue %+v", v.live.sending, v.live.queue)
	}
}

// Input that did not reach the turn says why, whether the refusal is this
// process's or, as always in the TUI, its host's.
func TestInputErrText(t *testing.T) {
	v := &sessView{}
	for _, c := range []struct {
		err  error
		want string
	}{
		{&rig.NoTurnError{}, "no turn is running"},
		{&rig.NoTerminalError{TurnID: "t"}, "the turn has no terminal (profile tty = false)"},
		{&rig.InputTimeoutError{TurnID: "t", Written: 1, Len: 2}, "the turn is not reading its input"},
		{fmt.Errorf("input: %w", context.DeadlineExceeded), "the host did not answer within " + inputTimeout.String()},
	} {
		for _, err := range []error{c.err, remoteErr(c.err)} {
			if got := inputErrText(v, err); got != c.want {
				t.Errorf("%v (%T): %q, want %q", err, err, got, c.want)
			}
		}
	}
}
