package cli_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// attach replays the last 50 records of a long journal and says so: a
// note on stderr gives the records and turns not shown and the command
// that shows them, and when the replay begins inside a turn, that turn's
// header (its index and the input it was started with) comes before its
// output. What was typed into the turn is not in the header, nor
// anywhere in what attach prints.
func TestAttachMidTurnSaysWhatItSkips(t *testing.T) {
	h := newHarness(t)
	id, _ := h.detached()
	h.must(0, "run", id, "--", "echo turn-zero")
	const reads = 40 // each line sent is two records (input, input_written)
	input := fmt.Sprintf(`for i in $(seq %d); do read x; done; stty -echo; read pw; stty echo; echo "pw-len ${#pw}"`, reads)
	h.must(0, "run", id, "--detach", "--", input)

	c := h.dialHost(id)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range reads {
		for {
			_, err := c.SendInput(ctx, fmt.Sprintf("filler-%d\n", i), "test")
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("send line %d: %v", i, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for {
		st, err := c.Status(ctx)
		if err == nil && st.Terminal && st.EchoOff {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the turn's terminal never turned its echo off: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	const secret = "hunter-secret-22"
	h.must(0, "send", id, "--", secret)
	h.must(0, "wait", id)

	// The turn's end is followed by its checkpoint and SessionIdle, which
	// the host may journal after wait returned: the tip attach counts
	// from is the one after them.
	recs := h.log(id)
	for deadline := time.Now().Add(30 * time.Second); recs[len(recs)-1].Type != "SessionIdle"; recs = h.log(id) {
		if time.Now().After(deadline) {
			t.Fatalf("the journal does not end with SessionIdle after the turn: %v", types(recs))
		}
		time.Sleep(50 * time.Millisecond)
	}
	tip := uint64(len(recs))
	if tip < 2*reads+10 {
		t.Fatalf("the journal has %d records: too few for attach to skip any", tip)
	}
	// attach, read its replay up to the turn's end, detach.
	p := h.start("attach", id)
	var b strings.Builder
	for !strings.Contains(b.String(), "── TurnDone") {
		b.WriteString(p.waitLine(t, ""))
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("attach exited %d; stderr: %s", code, p.stderr.String())
	}
	short := id[:8]
	note := fmt.Sprintf("looprig: records 1–%d are not shown here (turn 0 and the start of turn 1): 'looprig --store %s log %s' shows them\n",
		tip-50, h.store, short)
	if !strings.Contains(p.stderr.String(), note) {
		t.Errorf("attach's stderr lacks the note %q:\n%s", note, p.stderr.String())
	}
	out := b.String()
	header := "── turn 1: " + input + "\n"
	if !strings.HasPrefix(out, header) {
		t.Errorf("attach's stdout does not begin with the header %q:\n%s", header, out)
	}
	if i := strings.Index(out, "pw-len 16"); i < 0 || strings.Count(out, "── turn 1:") != 1 {
		t.Errorf("attach's stdout lacks the turn's output, or has its header twice:\n%s", out)
	}
	if strings.Contains(out, "turn-zero") {
		t.Errorf("attach showed a record before the last 50:\n%s", out)
	}
	if strings.Contains(out, secret) {
		t.Errorf("attach showed what was typed at a hidden prompt:\n%s", out)
	}
}
