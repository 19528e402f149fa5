package rigtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
	{"EchoOffDuringTheAppendIsHidden", testEchoOffDuringAppend},
	{"TimedOutInputIsNotOnRecordAsSent", testInputTimeout},
	{"TooLargeInputIsRefused", testInputTooLarge},
	{"EndOfFile", testInputEOF},
	{"InterruptSendsCtrlCFirst", testInterruptCtrlC},
	{"ResizeReachesTheTurn", testResize},
	{"NoTerminal", testNoTerminal},
	{"PromptEcho", testPromptEcho},
}

// inputCommands are the journal's input commands.
func inputCommands(recs []journal.Record) []journal.Command {
	var out []journal.Command
	for _, r := range inputRecords(recs, journal.CommandInput) {
		out = append(out, *r.Command)
	}
	return out
}

// inputRecords are the journal's command records named name (an input
// command or its input_written).
func inputRecords(recs []journal.Record, name string) []journal.Record {
	var out []journal.Record
	for _, r := range recs {
		if r.Kind == journal.KindCommand && r.Command.Name == name {
			out = append(out, r)
		}
	}
	return out
}

// noRecordHolds fails t if a record of session s's journal holds text.
func noRecordHolds(t *testing.T, e *env, s *rig.Session, text string) {
	t.Helper()
	rd, err := e.raw.Read(t.Context(), storage.SessionName(s.SessionID().String()), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for rd.Next() {
		if r := rd.Record(); strings.Contains(string(r.Payload), text) {
			t.Errorf("journal record %d holds %q: %s", r.Seq, text, r.Payload)
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
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

// A line typed into a running turn's terminal is read by it, journaled
// first as an input command naming its sender and length, then, once
// written with echo on, with its text in an input_written record.
func testInputLine(t *testing.T, e *env) {
	s := e.newSession(e.define())
	m := newMarker()
	line := "alice-" + m + "\n"
	ti := submit(t, s, `read name; echo "got $name"`)
	waitTerminal(t, s, false)
	if hidden := sendInput(t, s, rig.Input{Text: line, From: testClient}); hidden {
		t.Error("SendInput reported hidden input with echo on")
	}
	waitIdle(t, s)
	recs := readJournal(t, e.raw, s.SessionID())
	if out := turnOutput(recs, ti.ID); !strings.Contains(out, "got alice-"+m) {
		t.Errorf("output %q lacks the line typed", out)
	}
	cmds, written := inputRecords(recs, journal.CommandInput), inputRecords(recs, journal.CommandInputWritten)
	want := journal.Command{Name: journal.CommandInput, LoopID: s.LoopID(), TurnID: ti.ID, Bytes: len(line), From: testClient.Kind}
	if len(cmds) != 1 || *cmds[0].Command != want {
		t.Fatalf("input commands:%s\nwant one %+v", describe(cmds), want)
	}
	want = journal.Command{Name: journal.CommandInputWritten, LoopID: s.LoopID(), TurnID: ti.ID, Input: line, Bytes: len(line), InputSeq: cmds[0].Seq}
	if len(written) != 1 || *written[0].Command != want || written[0].Seq <= cmds[0].Seq {
		t.Errorf("input_written records:%s\nwant one %+v after the command", describe(written), want)
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
	if hidden := sendInput(t, s, rig.Input{Text: secret + "\n", From: testClient}); !hidden {
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
	if w := inputRecords(recs, journal.CommandInputWritten); len(w) != 0 {
		t.Errorf("a hidden input written whole has input_written records:%s", describe(w))
	}
	noRecordHolds(t, e, s, secret)
}

// The program turns echo off (as read -s does) while the input command is
// being journaled, before its bytes are written: the input is written and
// read, reported hidden, and its text is in no record, however slow the
// append was.
func testEchoOffDuringAppend(t *testing.T, e *env) {
	s := e.newSession(e.define())
	secret := "pw-" + newMarker()
	// The turn turns echo off once the file "go" is in its workspace, and
	// then says so with the file "off".
	ti := submit(t, s, `echo ready; until [ -e go ]; do sleep 0.01; done; stty -echo; : >off; read pw; stty echo; echo "len ${#pw}"`)
	waitTerminal(t, s, false)
	echoOff := make(chan error, 1)
	e.fs.onRecord(func(_ string, rec journal.Record) error {
		if rec.Kind != journal.KindCommand || rec.Command.Name != journal.CommandInput {
			return nil
		}
		// The append of the input command is slow: it lasts until the
		// turn has turned echo off. (This hook may run in a goroutine of
		// the session's, so it waits on files, not on the session.)
		err := os.WriteFile(filepath.Join(s.Workspace(), "go"), nil, 0o600)
		for deadline := time.Now().Add(WaitTimeout); err == nil; time.Sleep(5 * time.Millisecond) {
			if _, serr := os.Stat(filepath.Join(s.Workspace(), "off")); serr == nil {
				break
			}
			if time.Now().After(deadline) {
				err = errors.New("the turn never turned echo off")
			}
		}
		echoOff <- err
		return nil
	})
	hidden := sendInput(t, s, rig.Input{Text: secret + "\n", From: testClient})
	e.fs.setAppendFault(nil)
	select {
	case err := <-echoOff:
		if err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatal("the input command was not appended")
	}
	if !hidden {
		t.Error("SendInput did not report hidden input that the turn read with echo off")
	}
	waitIdle(t, s)
	recs := readJournal(t, e.raw, s.SessionID())
	if out := turnOutput(recs, ti.ID); !strings.Contains(out, "len "+strconv.Itoa(len(secret))) {
		t.Errorf("output %q: the turn did not read the input", out)
	}
	noRecordHolds(t, e, s, secret)
	cmds, written := inputRecords(recs, journal.CommandInput), inputRecords(recs, journal.CommandInputWritten)
	if len(cmds) != 1 || cmds[0].Command.Bytes != len(secret)+1 {
		t.Fatalf("input commands:%s\nwant one of %d bytes", describe(cmds), len(secret)+1)
	}
	if len(written) != 1 || !written[0].Command.Hidden || written[0].Command.Bytes != len(secret)+1 || written[0].Command.InputSeq != cmds[0].Seq {
		t.Errorf("input_written records:%s\nwant one hidden of %d bytes for record %d", describe(written), len(secret)+1, cmds[0].Seq)
	}
}

// Input the turn does not read before the sender gives up is
// *rig.InputTimeoutError, and the journal says how much of it went in:
// each input command is followed by an input_written with the bytes
// written and, for the one that filled the terminal and the one that found
// it full (none written), reason timeout. Nothing is on record as sent that
// was not.
func testInputTimeout(t *testing.T, e *env) {
	s := e.newSession(e.define())
	submit(t, s, `echo ready; sleep 60`) // never reads its input
	waitTerminal(t, s, false)
	send := func(text string) error {
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		_, err := s.SendInput(ctx, rig.Input{Text: text, From: testClient})
		return err
	}
	chunk := strings.Repeat("y\n", 32<<10) // 64 KiB of lines
	var texts []string
	var full, none *rig.InputTimeoutError
	for full == nil {
		if len(texts) == 100 {
			t.Fatalf("%d bytes went into the terminal of a turn that does not read", len(texts)*len(chunk))
		}
		texts = append(texts, chunk)
		if err := send(chunk); err != nil && !errors.As(err, &full) {
			t.Fatalf("SendInput: %v", err)
		}
	}
	texts = append(texts, "z\n")
	if err := send("z\n"); !errors.As(err, &none) || none.Written != 0 || none.Len != 2 {
		t.Fatalf("SendInput to a full terminal: %v, want *rig.InputTimeoutError with nothing written", err)
	}
	if full.Len != len(chunk) || full.Written >= len(chunk) {
		t.Errorf("the input that filled the terminal: %d of %d bytes written", full.Written, full.Len)
	}
	if err := s.Interrupt(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, s)
	recs := readJournal(t, e.raw, s.SessionID())
	cmds, written := inputRecords(recs, journal.CommandInput), inputRecords(recs, journal.CommandInputWritten)
	if len(cmds) != len(texts) || len(written) != len(texts) {
		t.Fatalf("%d input commands and %d input_written, want %d of each", len(cmds), len(written), len(texts))
	}
	for i, w := range written {
		want := journal.Command{Name: journal.CommandInputWritten, LoopID: s.LoopID(), TurnID: cmds[i].Command.TurnID,
			Input: texts[i], Bytes: len(texts[i]), InputSeq: cmds[i].Seq}
		switch i {
		case len(texts) - 2:
			want.Input, want.Bytes, want.Reason = texts[i][:full.Written], full.Written, journal.InputTimedOut
		case len(texts) - 1:
			want.Input, want.Bytes, want.Reason = "", 0, journal.InputTimedOut
		}
		if *w.Command != want {
			t.Errorf("input_written %d of %d: %.200v\nwant %.200v", i+1, len(texts), *w.Command, want)
		}
	}
}

// Text too large for a record is refused with echo on (its text is
// journaled once written) before anything is journaled or written.
func testInputTooLarge(t *testing.T, e *env) {
	s := e.newSession(e.define())
	ti := submit(t, s, `read x; echo "read ${#x}"`)
	waitTerminal(t, s, false)
	_, err := s.SendInput(waitCtx(t), rig.Input{Text: strings.Repeat("\x01", storage.MaxPayload/4) + "\n", From: testClient})
	if !errors.As(err, new(*storage.PayloadTooLargeError)) {
		t.Fatalf("SendInput of text no record holds: %v, want *storage.PayloadTooLargeError", err)
	}
	sendInput(t, s, rig.Input{Text: "ok\n", From: testClient})
	waitIdle(t, s)
	recs := readJournal(t, e.raw, s.SessionID())
	if out := turnOutput(recs, ti.ID); !strings.Contains(out, "read 2") {
		t.Errorf("output %q: the refused text reached the turn", out)
	}
	if cmds := inputCommands(recs); len(cmds) != 1 || cmds[0].Bytes != 3 {
		t.Errorf("input commands %+v, want the one of the input sent after", cmds)
	}
}

// An end of file ends a turn reading its input.
func testInputEOF(t *testing.T, e *env) {
	s := e.newSession(e.define())
	ti := submit(t, s, `cat >/dev/null; echo "eof-seen"`)
	waitTerminal(t, s, false)
	if _, err := s.SendInput(waitCtx(t), rig.Input{EOF: true, From: testClient}); err != nil {
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
