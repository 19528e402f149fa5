package host

import (
	"errors"
	"strings"
	"testing"

	"looprig/rig"
	"looprig/rig/event"
)

// A client types into the running turn's terminal, resizes it, and learns
// from the status whether the terminal has echo off.
func TestInputThroughHost(t *testing.T) {
	f := start(t)
	c := f.dial()
	ctx := wctx(t)
	if err := c.Resize(ctx, 101, 31); err != nil {
		t.Fatal(err)
	}
	st, err := c.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	ti, err := c.Submit(ctx, `stty size; stty -echo; read pw; stty echo; read name; echo "got $name ${#pw}"`)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "a terminal with echo off", func() bool {
		s, err := c.Status(ctx)
		return err == nil && s.Terminal && s.EchoOff
	})
	if hidden, err := c.SendInput(ctx, "secret\n", "test"); err != nil || !hidden {
		t.Fatalf("SendInput with echo off = %v, %v; want hidden", hidden, err)
	}
	eventually(t, "echo on again", func() bool {
		s, err := c.Status(ctx)
		return err == nil && s.Terminal && !s.EchoOff
	})
	if hidden, err := c.SendInput(ctx, "carol\n", "test"); err != nil || hidden {
		t.Fatalf("SendInput with echo on = %v, %v", hidden, err)
	}
	var text string
	for _, e := range readUntil(t, st, turnEnd(ti.ID)) {
		if o, ok := e.Event.(event.TurnOutput); ok {
			text += o.Text
		}
	}
	if !strings.Contains(text, "31 101") || !strings.Contains(text, "got carol 6") || strings.Contains(text, "secret") {
		t.Errorf("turn output %q, want the size 31 101, the name and the password's length only", text)
	}
	// No turn: the rig's error comes back typed.
	var noTurn *rig.NoTurnError
	if _, err := c.SendInput(ctx, "x\n", "test"); !errors.As(err, &noTurn) {
		t.Errorf("SendInput with no turn = %v, want *rig.NoTurnError", err)
	}
	if err := c.SendEOF(ctx, "test"); !errors.As(err, &noTurn) {
		t.Errorf("SendEOF with no turn = %v, want *rig.NoTurnError", err)
	}
}

// Malformed input and resize requests are refused by the protocol.
func TestInputRequestsChecked(t *testing.T) {
	for _, line := range []string{
		`{"type":"input","id":1}`,
		`{"type":"input","id":1,"input":"x","eof":true}`,
		`{"type":"resize","id":1,"cols":0,"rows":10}`,
		`{"type":"resize","id":1,"cols":80,"rows":70000}`,
	} {
		if _, err := decodeRequest([]byte(line)); err == nil {
			t.Errorf("decodeRequest(%s) accepted", line)
		}
	}
	for _, line := range []string{
		`{"type":"input","id":1,"input":"x\n"}`,
		`{"type":"input","id":1,"eof":true}`,
		`{"type":"resize","id":1,"cols":80,"rows":24}`,
	} {
		if _, err := decodeRequest([]byte(line)); err != nil {
			t.Errorf("decodeRequest(%s) = %v", line, err)
		}
	}
}

// The rig errors of input cross the protocol typed: describe's RemoteError
// turns back into them with errors.As, fields included.
func TestInputErrorsCrossTyped(t *testing.T) {
	var timeout *rig.InputTimeoutError
	err := error(Describe(&rig.InputTimeoutError{TurnID: "t1", Written: 4096, Len: 65536}))
	if !errors.As(err, &timeout) || timeout.TurnID != "t1" || timeout.Written != 4096 || timeout.Len != 65536 {
		t.Errorf("errors.As(input_timeout) = %+v", timeout)
	}
	var noTerm *rig.NoTerminalError
	err = Describe(&rig.NoTerminalError{TurnID: "t2"})
	if !errors.As(err, &noTerm) || noTerm.TurnID != "t2" {
		t.Errorf("errors.As(no_terminal) = %+v", noTerm)
	}
}
