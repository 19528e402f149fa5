package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/storage/memstore"
)

// restore --hold --json prints every durable event of the session it
// holds, once and in order, also when it fell behind: its stdout is a pipe
// nobody reads while the session journals far more events than a hub
// subscription holds, so the subscription is lost and the events it missed
// must be read again from the journal.
func TestHoldJSONAcrossALoss(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st := memstore.New()
	r, err := rig.Define(rig.WithStore(st), rig.WithWorkspaces(t.TempDir()), rig.WithProfile(rig.DefaultProfile()))
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())

	pr, pw := io.Pipe()
	defer pr.Close()
	e, _, _ := testEnv(true)
	e.stdout = pw
	holdCtx, stopHold := context.WithCancel(ctx)
	c := &call{env: e, sig: &interrupts{ctx: holdCtx, force: make(chan struct{})}}
	held := make(chan int, 1)
	go func() { held <- c.holdSession(s) }()
	sc := bufio.NewScanner(pr)
	sc.Buffer(nil, 4<<20)
	type line struct {
		Seq  uint64 `json:"seq"`
		Type string `json:"type"`
	}
	next := func() (line, bool) {
		var l line
		if !sc.Scan() {
			return l, false
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("a line that is not an event: %q", sc.Bytes())
		}
		return l, true
	}

	// A first turn, read as it goes: hold follows the session.
	if _, err := s.Submit(ctx, "echo first"); err != nil {
		t.Fatal(err)
	}
	var start uint64
	for l, ok := next(); ok; l, ok = next() {
		if l.Type == "TurnDone" {
			start = l.Seq
			break
		}
	}

	// 120 turns of a few durable events each, while hold cannot print.
	const turns = 120
	for i := range turns {
		if _, err := s.Submit(ctx, fmt.Sprintf("echo turn-%d", i)); err != nil {
			t.Fatal(err)
		}
		if err := s.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	end := s.Status().Tip

	// Now read what hold prints, up to the last event journaled (a hold
	// that lost events never prints it: the read gives up after a while).
	watchdog := time.AfterFunc(20*time.Second, func() { pr.Close() })
	defer watchdog.Stop()
	var got []uint64
	for l, ok := next(); ok; l, ok = next() {
		if l.Seq != 0 {
			got = append(got, l.Seq)
		}
		if l.Seq >= end {
			break
		}
	}
	stopHold()
	go io.Copy(io.Discard, pr) // what hold still writes as it stops
	if code := <-held; code != exitOK {
		t.Fatalf("hold exited %d", code)
	}

	var want []uint64
	rp, err := rig.ReadEvents(ctx, st, s.SessionID(), start)
	if err != nil {
		t.Fatal(err)
	}
	defer rp.Close()
	for rp.Next() && rp.Envelope().Seq <= end {
		want = append(want, rp.Envelope().Seq)
	}
	if len(want) < 4*turns {
		t.Fatalf("the session journaled %d events: too few to overflow a subscription; the test proves nothing", len(want))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("hold printed %d durable events, the journal has %d after seq %d:\n got %v\nwant %v", len(got), len(want), start, got, want)
	}
}
