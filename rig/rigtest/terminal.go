package rigtest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

var terminalCases = []testCase{
	{"InputLine", testInputLine},
	{"HiddenInputIsNotKept", testHiddenInput},
	{"EndOfFile", testInputEOF},
	{"InterruptSendsCtrlCFirst", testInterruptCtrlC},
	{"ResizeReachesTheTurn", testResize},
	{"NoTerminal", testNoTerminal},
}

// inputCommands are the journal's input commands.
func inputCommands(recs []journal.Record) []journal.Command {
	var out []journal.Command
	for _, r := range recs {
		if r.Kind == journal.KindCommand && r.Command.Name == journal.CommandInput {
			out = append(out, *r.Command)
		}
	}
	return out
}

// waitTerminal waits until the running turn has a terminal whose echo is
// echoOff.
func waitTerminal(t *testing.T, s *rig.Session, echoOff bool) {
	t.Helper()
	eventually(t, "the turn's terminal", func() bool {
		term, off := s.TerminalState()
		return term && off == echoOff
	})
}

func sendInput(t *testing.T, s *rig.Session, in rig.Input) bool {
	t.Helper()
	hidden, err := s.SendInput(waitCtx(t), in)
	if err != nil {
		t.Fatalf("SendInput(%+v): %v", in, err)
	}
	return hidden
}

// A line typed into a running turn's terminal is read by it, and journaled
// as an input command naming its sender.
func testInputLine(t *testing.T, e *env) {
	s := e.newSession(e.define())
	m := newMarker()
	ti := submit(t, s, `read name; echo "got $name"`)
	waitTerminal(t, s, false)
	if hidden := sendInput(t, s, rig.Input{Text: "alice-" + m + "\n", From: "test"}); hidden {
		t.Error("SendInput reported hidden input with echo on")
	}
	waitIdle(t, s)
	recs := readJournal(t, e.raw, s.SessionID())
	if out := turnOutput(recs, ti.ID); !strings.Contains(out, "got alice-"+m) {
		t.Errorf("output %q lacks the line typed", out)
	}
	cmds := inputCommands(recs)
	if len(cmds) != 1 || cmds[0].Input != "alice-"+m+"\n" || cmds[0].Bytes != len("alice-"+m+"\n") ||
		cmds[0].From != "test" || cmds[0].TurnID != ti.ID || cmds[0].Hidden {
		t.Errorf("input commands %+v, want the line from test for turn %s", cmds, ti.ID)
	}
}

// Input typed while the terminal has echo off (a password prompt) is
// delivered, reported hidden, and journaled as its length only: its bytes
// are nowhere in the journal.
func testHiddenInput(t *testing.T, e *env) {
	s := e.newSession(e.define())
	secret := "pw-" + newMarker()
	ti := submit(t, s, `stty -echo; read pw; stty echo; echo "len ${#pw}"`)
	waitTerminal(t, s, true)
	if hidden := sendInput(t, s, rig.Input{Text: secret + "\n", From: "test"}); !hidden {
		t.Error("SendInput did not report the input hidden with echo off")
	}
	waitIdle(t, s)
	recs := readJournal(t, e.raw, s.SessionID())
	if out := turnOutput(recs, ti.ID); !strings.Contains(out, "len "+strconv.Itoa(len(secret))) {
		t.Errorf("output %q: the turn did not read the hidden line", out)
	}
	cmds := inputCommands(recs)
	if len(cmds) != 1 || !cmds[0].Hidden || cmds[0].Input != "" || cmds[0].Bytes != len(secret)+1 {
		t.Errorf("input commands %+v, want one hidden input of %d bytes", cmds, len(secret)+1)
	}
	rd, err := e.raw.Read(t.Context(), storage.SessionName(s.SessionID().String()), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for rd.Next() {
		if r := rd.Record(); strings.Contains(string(r.Payload), secret) {
			t.Fatalf("the hidden input is in journal record %d: %s", r.Seq, r.Payload)
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
}

// An end of file ends a turn reading its input.
func testInputEOF(t *testing.T, e *env) {
	s := e.newSession(e.define())
	ti := submit(t, s, `cat >/dev/null; echo "eof-seen"`)
	waitTerminal(t, s, false)
	if _, err := s.SendInput(waitCtx(t), rig.Input{EOF: true, From: "test"}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, s)
	recs := readJournal(t, e.raw, s.SessionID())
	if out := turnOutput(recs, ti.ID); !strings.Contains(out, "eof-seen") {
		t.Errorf("output %q: the turn did not see the end of file", out)
	}
	if cmds := inputCommands(recs); len(cmds) != 1 || !cmds[0].EOF {
		t.Errorf("input commands %+v, want one end of file", cmds)
	}
}

// Interrupt sends a terminal turn ^C first (its program can handle
// SIGINT), and the turn is recorded as interrupted by the user.
func testInterruptCtrlC(t *testing.T, e *env) {
	s := e.newSession(e.define())
	ti := submit(t, s, `trap 'echo got-sigint; exit 9' INT; echo ready; while :; do sleep 0.05; done`)
	c := collect(t, s.Subscribe(hub.Filter{AllLoops: true}), nil)
	c.wait(t, "ready", func(env event.Envelope) bool {
		d, ok := env.Event.(event.OutputDelta)
		return ok && strings.Contains(d.Text, "ready")
	})
	start := time.Now()
	if err := s.Interrupt(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d >= rig.SigintGrace {
		t.Errorf("Interrupt took %v: the turn should have ended on ^C, before the %v grace", d, rig.SigintGrace)
	}
	recs := readJournal(t, e.raw, s.SessionID())
	if out := turnOutput(recs, ti.ID); !strings.Contains(out, "got-sigint") {
		t.Errorf("output %q: the turn's SIGINT trap did not run", out)
	}
	ints, _ := find[event.TurnInterrupted](recs)
	if len(ints) != 1 || ints[0].Reason != event.ReasonUser {
		t.Errorf("TurnInterrupted records %+v, want one with reason user", ints)
	}
}

// Resize sets the terminal size of the running turn and of the next.
func testResize(t *testing.T, e *env) {
	s := e.newSession(e.define())
	if err := s.Resize(0, 10); err == nil {
		t.Error("Resize(0, 10) accepted")
	}
	if err := s.Resize(100, 30); err != nil {
		t.Fatal(err)
	}
	ti := runTurn(t, s, `stty size`)
	if out := turnOutput(readJournal(t, e.raw, s.SessionID()), ti.ID); !strings.Contains(out, "30 100") {
		t.Errorf("stty size printed %q, want 30 100", out)
	}
	ti = submit(t, s, `read x; stty size`)
	waitTerminal(t, s, false)
	if err := s.Resize(90, 20); err != nil {
		t.Fatal(err)
	}
	sendInput(t, s, rig.Input{Text: "\n"})
	waitIdle(t, s)
	if out := turnOutput(readJournal(t, e.raw, s.SessionID()), ti.ID); !strings.Contains(out, "20 90") {
		t.Errorf("stty size after a resize printed %q, want 20 90", out)
	}
}

// Input needs a running turn with a terminal.
func testNoTerminal(t *testing.T, e *env) {
	s := e.newSession(e.define(rig.WithProfile(pipesProfile())))
	var noTurn *rig.NoTurnError
	if _, err := s.SendInput(waitCtx(t), rig.Input{Text: "x\n"}); !errors.As(err, &noTurn) {
		t.Errorf("SendInput with no turn = %v, want *rig.NoTurnError", err)
	}
	submit(t, s, `sleep 5`)
	var noTerm *rig.NoTerminalError
	if _, err := s.SendInput(waitCtx(t), rig.Input{Text: "x\n"}); !errors.As(err, &noTerm) {
		t.Errorf("SendInput to a turn on pipes = %v, want *rig.NoTerminalError", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), WaitTimeout)
	defer cancel()
	if err := s.Interrupt(ctx); err != nil {
		t.Fatal(err)
	}
	if cmds := inputCommands(readJournal(t, e.raw, s.SessionID())); len(cmds) != 0 {
		t.Errorf("refused input was journaled: %+v", cmds)
	}
}
