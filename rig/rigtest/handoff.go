package rigtest

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/storage"
)

// fakeClock is a clock a test moves on by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 7, 15, 9, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// waitForGo is a turn that runs until the test creates the file "go" in
// its workspace, then prints finished-MARK.
func waitForGo(m string) string {
	return `echo started-` + m + ` && while [ ! -e go ]; do sleep 0.02; done && echo finished-` + m
}

// A take that gives up (its timeout passes while the holder's turn runs,
// no --interrupt) withdraws its request, and the holder calls the
// hand-over off within a poll: new turns are accepted again once the
// running one ends, and when that turn ends — five minutes later on the
// hand-over's clock — the session neither hands over nor shuts down: it
// is live and serving.
func testHandOffWithdrawn(t *testing.T, e *env) {
	clock := newFakeClock()
	r := e.define(rig.WithHandOffPoll(20*time.Millisecond), rig.WithHandOffClock(clock.Now))
	s := e.newSession(r)
	id := s.SessionID()
	m := newMarker()
	ti := submit(t, s, waitForGo(m))
	outputShows(t, e, s, ti.ID, "started-"+m)

	req := rig.HandOffRequest{To: "4242@taker", Epoch: s.Epoch(), At: time.Now().UTC()}
	awaited := make(chan error, 1)
	go func() {
		_, err := rig.AwaitHandOff(t.Context(), e.raw, id, storage.Holder{PID: 1, Host: "holder"}, req, 500*time.Millisecond,
			rig.WithHandOffRenew(50*time.Millisecond))
		awaited <- err
	}()
	var handing *rig.HandingOffError
	eventually(t, "new turns refused while the take waits", func() bool {
		_, err := s.Submit(t.Context(), "true")
		return errors.As(err, &handing)
	})
	var timeout *rig.HandOffTimeoutError
	if err := <-awaited; !errors.As(err, &timeout) {
		t.Fatalf("AwaitHandOff of a holder whose turn runs on: %v, want *rig.HandOffTimeoutError", err)
	}
	if _, err := e.raw.Get(t.Context(), "sessions/"+id.String()+"/handoff"); err == nil {
		t.Fatal("the request is still in the store after the take gave up")
	}
	var busy *rig.BusyError
	eventually(t, "the holder to call the hand-over off (a new turn is busy, not refused for a hand-over)", func() bool {
		_, err := s.Submit(t.Context(), "true")
		return errors.As(err, &busy)
	})

	clock.Add(5 * time.Minute)
	time.Sleep(100 * time.Millisecond) // polls at the new time
	if err := os.WriteFile(filepath.Join(s.Workspace(), "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, s)
	time.Sleep(100 * time.Millisecond) // a hand-over, had it been kept, would begin here
	if st := s.Status(); st.Closed || st.Fault != nil {
		t.Fatalf("five minutes after the take gave up, the session is %+v; want it live", st)
	}
	again := runTurn(t, s, "echo still-"+m)
	recs := readJournal(t, e.raw, id)
	if out := turnOutput(recs, again.ID); out != "still-"+m+"\n" {
		t.Errorf("a turn after the take gave up printed %q", out)
	}
	if hos, _ := find[event.HandedOff](recs); len(hos) != 0 {
		t.Errorf("the session journaled %+v after its taker gave up", hos)
	}
	if out := turnOutput(recs, ti.ID); out != "started-"+m+"\nfinished-"+m+"\n" {
		t.Errorf("the turn the take waited for printed %q", out)
	}
}

// A request its taker stopped renewing (the taker died without
// withdrawing it) is called off by the holder once ten renewals are
// missed on the hand-over's clock, removed, and never taken up again.
func testHandOffTakerGone(t *testing.T, e *env) {
	clock := newFakeClock()
	r := e.define(rig.WithHandOffPoll(20*time.Millisecond), rig.WithHandOffClock(clock.Now))
	s := e.newSession(r)
	id := s.SessionID()
	m := newMarker()
	ti := submit(t, s, waitForGo(m))
	outputShows(t, e, s, ti.ID, "started-"+m)
	if err := rig.RequestHandOff(t.Context(), e.raw, id, rig.HandOffRequest{To: "4243@gone", Epoch: s.Epoch(), ID: "dead-taker", RenewMS: 100}); err != nil {
		t.Fatal(err)
	}
	var handing *rig.HandingOffError
	eventually(t, "the holder to take the request up", func() bool {
		_, err := s.Submit(t.Context(), "true")
		return errors.As(err, &handing)
	})
	time.Sleep(100 * time.Millisecond)
	if _, err := s.Submit(t.Context(), "true"); !errors.As(err, &handing) {
		t.Fatalf("before the taker misses ten renewals: %v, want *rig.HandingOffError", err)
	}
	clock.Add(1500 * time.Millisecond) // 15 renewals missed
	var busy *rig.BusyError
	eventually(t, "the holder to call the hand-over off", func() bool {
		_, err := s.Submit(t.Context(), "true")
		return errors.As(err, &busy)
	})
	eventually(t, "the stale request to be removed", func() bool {
		_, err := e.raw.Get(t.Context(), "sessions/"+id.String()+"/handoff")
		var nf *storage.NotFoundError
		return errors.As(err, &nf)
	})
	if err := os.WriteFile(filepath.Join(s.Workspace(), "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, s)
	time.Sleep(100 * time.Millisecond)
	if st := s.Status(); st.Closed || st.Fault != nil {
		t.Fatalf("after its taker died, the session is %+v; want it live", st)
	}
}

// A take that waits for the holder's turn to end gets the session: the
// holder commits to the request (AwaitHandOff's outcome says so), with
// --interrupt its running turn ends as TurnInterrupted{handoff}, and the
// restore finds the holder handed it over to that take, and names
// itself as the new holder in RestoreDone.
func testHandOffCommitted(t *testing.T, e *env) {
	r := e.define(rig.WithHandOffPoll(20 * time.Millisecond))
	s := e.newSession(r)
	id := s.SessionID()
	m := newMarker()
	ti := submit(t, s, `echo long-`+m+` && sleep 30`)
	outputShows(t, e, s, ti.ID, "long-"+m)
	req := rig.HandOffRequest{To: "4244@taker", Interrupt: true, Epoch: s.Epoch(), At: time.Now().UTC()}
	out, err := rig.AwaitHandOff(t.Context(), e.raw, id, storage.Holder{PID: 1, Host: "holder"}, req, WaitTimeout,
		rig.WithHandOffRenew(50*time.Millisecond))
	if err != nil || !out.Committed {
		t.Fatalf("AwaitHandOff: %+v, %v; want the holder committed", out, err)
	}
	shutdown(t, s)
	recs := readJournal(t, e.raw, id)
	ints, _ := find[event.TurnInterrupted](recs)
	if len(ints) != 1 || ints[0].TurnID != ti.ID || ints[0].Reason != event.ReasonHandoff {
		t.Errorf("interruptions %+v, want turn %s's, reason %q", ints, ti.ID, event.ReasonHandoff)
	}
	s2, err := e.define().RestoreSession(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	shutdownAtCleanup(t, s2)
	info := s2.Restored()
	if info.Previous != rig.PreviousHandedOff || info.HandedOffTo != "4244@taker" || info.PreviousEpoch != s.Epoch() || info.Holder == "" {
		t.Errorf("RestoreInfo after a hand-over: %+v", info)
	}
	dones, _ := find[event.RestoreDone](readJournal(t, e.raw, id))
	if len(dones) != 1 || dones[0].Holder != info.Holder {
		t.Errorf("RestoreDone %+v, want one naming the new holder %q", dones, info.Holder)
	}
}

// A lease that comes free without a hand-over (the holder's lease lost:
// here it is broken before the holder is asked, so that the wait never
// sees the breaker's own brief hold at the next epoch, which it rightly
// reports as the session taken meanwhile) is not a committed hand-over,
// and the restore says the previous holder crashed.
func testHandOffLeaseFreedWithout(t *testing.T, e *env) {
	r := e.define(rig.WithHandOffPoll(time.Hour)) // the holder never looks
	s := e.newSession(r)
	id := s.SessionID()
	req := rig.HandOffRequest{To: "4245@taker", Epoch: s.Epoch(), At: time.Now().UTC()}
	if _, berr := rig.BreakLease(t.Context(), e.raw, id); berr != nil {
		t.Fatal(berr)
	}
	out, err := rig.AwaitHandOff(t.Context(), e.raw, id, storage.Holder{PID: 1, Host: "holder"}, req, WaitTimeout)
	if err != nil || out.Committed {
		t.Fatalf("AwaitHandOff when the lease came free without a hand-over: %+v, %v", out, err)
	}
	eventually(t, "the holder to see its lease lost", func() bool { return s.Status().Fault != nil })
	s2, rerr := e.define().RestoreSession(t.Context(), id)
	if rerr != nil {
		t.Fatal(rerr)
	}
	shutdownAtCleanup(t, s2)
	if info := s2.Restored(); info.Previous != rig.PreviousCrashed || info.HandedOffTo != "" {
		t.Errorf("RestoreInfo after a lease freed without a hand-over: %+v", info)
	}
}
