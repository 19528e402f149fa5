package faulttest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/fsstore"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// faultClass names the class of a session fault or refused write.
func faultClass(err error) string {
	var lost *journal.JournalLeaseLostError
	var fenced *journal.FencedError
	switch {
	case err == nil:
		return "none"
	case errors.As(err, &lost):
		return "lease_lost"
	case errors.As(err, &fenced):
		return "fenced"
	}
	return fmt.Sprintf("other(%T)", err)
}

// appenderHelper restores a session with the store's default watchdog
// (500 ms, so it keeps appending for a while after a break before it
// notices), runs a turn that prints without end, prints "ready" once
// output is journaled and "ack SEQ TYPE" for everything acknowledged. When
// the session faults it prints "fault CLASS", tries to submit again and
// prints "submit CLASS", shuts down and exits 0.
func appenderHelper(dir string, id uuid.UUID) int {
	st, err := fsstore.Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: open:", err)
		return 1
	}
	defer st.Close()
	ctx := context.Background()
	r, err := rig.Define(rigOptions(st)...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: define:", err)
		return 1
	}
	s, err := r.RestoreSession(ctx, id)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: restore:", err)
		return 1
	}
	sub := s.Subscribe(hub.Filter{AllLoops: true})
	acks := make(chan struct{})
	go func() { ackAll(sub); close(acks) }()
	watch := s.Subscribe(hub.Filter{AllLoops: true})
	if _, err := s.Submit(ctx, chatty); err != nil {
		fmt.Fprintln(os.Stderr, "helper: submit:", err)
		return 1
	}
	outputs := 0
	faulted := false
	for !faulted && outputs < 3 {
		env, ok := <-watch.C()
		if !ok {
			break
		}
		switch env.Event.(type) {
		case event.TurnOutput:
			outputs++
		case event.SessionFaulted:
			faulted = true
		}
	}
	watch.Close()
	say("ready %d", s.Epoch())
	select {
	case <-s.Done():
	case <-time.After(helperTimeout):
		fmt.Fprintln(os.Stderr, "helper: the session never faulted")
		return 5
	}
	say("fault %s", faultClass(s.Err()))
	fmt.Fprintln(os.Stderr, "helper: fault:", s.Err())
	_, err = s.Submit(ctx, "echo stale")
	say("submit %s", faultClass(err))
	s.Shutdown(ctx)
	<-acks
	return 0
}

// TestBreakDuringAppends: a helper process holds a session and appends
// continuously (a turn printing without end, checkpointed every few
// milliseconds) while this process breaks the lease and fences the
// journal, as `looprig lease break` does. Nothing the stale holder writes
// may land after the new fence — checked on the records and on the writer
// epoch stamped in every frame —, the stale holder must fault with a lease
// error and refuse further writes, everything it acknowledged must be
// before the fence, and the session restores afterwards with its turn
// closed exactly once.
func TestBreakDuringAppends(t *testing.T) {
	dir := t.TempDir()
	id := newStoppedSession(t, dir)
	name := storage.SessionName(id.String())
	h := startHelper(t, "appender", envDir+"="+dir, envSession+"="+id.String())
	acked := map[uint64]string{}
	var holderEpoch uint64
	fmt.Sscanf(h.waitLine(t, "ready ", acked), "ready %d", &holderEpoch)
	time.Sleep(time.Duration(rand.Int64N(int64(150 * time.Millisecond)))) // let it append a while

	ctx := context.Background()
	st := openStore(t, dir)
	l, err := st.Break(ctx, name)
	if err != nil {
		t.Fatalf("break: %v", err)
	}
	if l.Epoch() <= holderEpoch {
		t.Fatalf("breaker's epoch %d is not after the holder's %d", l.Epoch(), holderEpoch)
	}
	// Fence the journal at the new epoch; the holder may append between
	// our tip read and our fence, which is a conflict to retry (as the CLI
	// does).
	var bj *journal.SessionJournal
	for attempt := 0; ; attempt++ {
		bj, err = journal.Open(ctx, st, name, l)
		var fenced *journal.FencedError
		if err == nil || !errors.As(err, &fenced) || attempt == 50 {
			break
		}
	}
	if err != nil {
		t.Fatalf("breaker fences the journal: %v", err)
	}
	fence := bj.FenceSeq()
	mine, err := bj.AppendEvent(ctx, "", event.SessionIdle{})
	if err != nil {
		t.Fatalf("breaker appends after its fence: %v", err)
	}

	ws, lines := h.wait(t, acked)
	if ws.ExitStatus() != 0 {
		t.Fatalf("helper exited %v; stderr:\n%s", ws, h.stderr)
	}
	got := strings.Join(lines, "\n")
	var faultLine, submitLine string
	for _, l := range lines {
		if v, ok := strings.CutPrefix(l, "fault "); ok {
			faultLine = v
		}
		if v, ok := strings.CutPrefix(l, "submit "); ok {
			submitLine = v
		}
	}
	if faultLine != "lease_lost" && faultLine != "fenced" {
		t.Errorf("stale holder's fault is %q, want lease_lost or fenced (JournalLeaseLostError / FencedError); output:\n%s", faultLine, got)
	}
	if submitLine != "lease_lost" && submitLine != "fenced" {
		t.Errorf("stale holder's Submit after the fault: %q, want refused with lease_lost or fenced; output:\n%s", submitLine, got)
	}
	for seq, typ := range acked {
		if seq >= fence {
			t.Errorf("the stale holder acknowledged %d %s, at or after the new fence %d", seq, typ, fence)
		}
	}

	// The journal: after the fence, only the breaker's record, stamped with
	// the breaker's epoch.
	c, err := st.Read(ctx, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	epochOf, ok := c.(interface{ Epoch() uint64 })
	if !ok {
		t.Fatalf("fsstore cursor %T does not report writer epochs", c)
	}
	var after []uint64
	for c.Next() {
		r := c.Record()
		switch {
		case r.Seq == fence || r.Seq > fence:
			if e := epochOf.Epoch(); e != l.Epoch() {
				t.Errorf("record %d after the new fence was written at epoch %d, not the breaker's %d", r.Seq, e, l.Epoch())
			}
			if r.Seq > fence {
				after = append(after, r.Seq)
			}
		default:
			if e := epochOf.Epoch(); e > holderEpoch {
				t.Errorf("record %d before the fence carries epoch %d", r.Seq, e)
			}
		}
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if len(after) != 1 || after[0] != mine {
		t.Errorf("records after the fence %d: %v, want only the breaker's %d", fence, after, mine)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close()
	epoch := restoreAndCheck(t, dir, id, acked)
	t.Logf("helper stderr: %s", h.stderr)
	t.Logf("holder epoch %d, breaker epoch %d fenced at %d, %d records acknowledged by the stale holder, stale holder %s; restored at %d",
		holderEpoch, l.Epoch(), fence, len(acked), faultLine, epoch)
}
