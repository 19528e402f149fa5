package journal

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"looprig/rig/event"
	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

func TestOpenAppendsOneFenceAtTheTip(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()

	// First tenure: epoch 1, fence at seq 1, one event.
	l1 := acquire(t, st)
	j1 := open(t, st, l1)
	if j1.FenceSeq() != 1 || j1.Tip() != 1 || j1.Epoch() != 1 || j1.Name() != testName || j1.Err() != nil {
		t.Fatalf("j1: fence %d tip %d epoch %d name %q err %v", j1.FenceSeq(), j1.Tip(), j1.Epoch(), j1.Name(), j1.Err())
	}
	if _, err := j1.AppendEvent(ctx, "", event.SessionIdle{}); err != nil {
		t.Fatal(err)
	}
	if err := l1.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// Second tenure: epoch 2, fence exactly at the tip (seq 3).
	l2 := acquire(t, st)
	before := ledgerTip(t, st)
	j2 := open(t, st, l2, WithClock(stepClock()))
	if got := ledgerTip(t, st); got != before+1 {
		t.Fatalf("Open appended %d records, want 1", got-before)
	}
	if j2.FenceSeq() != 3 || j2.Tip() != 3 || j2.Epoch() != 2 {
		t.Fatalf("j2: fence %d tip %d epoch %d", j2.FenceSeq(), j2.Tip(), j2.Epoch())
	}
	recs := readAll(t, st, 0)
	want := []struct {
		kind  Kind
		epoch uint64
	}{{KindFence, 1}, {KindEvent, 0}, {KindFence, 2}}
	if len(recs) != len(want) {
		t.Fatalf("got %d records", len(recs))
	}
	for i, w := range want {
		if recs[i].Seq != uint64(i+1) || recs[i].Kind != w.kind || recs[i].Epoch != w.epoch {
			t.Errorf("record %d = %+v, want %v epoch %d", i+1, recs[i], w.kind, w.epoch)
		}
	}
	if !recs[2].At.Equal(base.Add(time.Millisecond)) {
		t.Errorf("fence at %v", recs[2].At)
	}
}

func TestAppendAndReplay(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	j := open(t, st, acquire(t, st), WithClock(stepClock()))

	type appended struct {
		seq    uint64
		loopID string
		ev     event.Event
		cmd    *Command
	}
	var log []appended
	addEv := func(loopID string, ev event.Event) {
		t.Helper()
		seq, err := j.AppendEvent(ctx, loopID, ev)
		if err != nil {
			t.Fatalf("AppendEvent(%T): %v", ev, err)
		}
		log = append(log, appended{seq: seq, loopID: loopID, ev: ev})
	}
	addCmd := func(cmd Command) {
		t.Helper()
		seq, err := j.AppendCommand(ctx, cmd)
		if err != nil {
			t.Fatalf("AppendCommand: %v", err)
		}
		c := cmd
		log = append(log, appended{seq: seq, cmd: &c})
	}
	addEv("", event.SessionStarted{Title: "t", Rig: "default", Fingerprint: "f", Manifest: map[string]string{"engine": "shell"}, Placement: "session", Root: "/w"})
	addEv("loop-1", event.LoopStarted{LoopID: "loop-1", Name: "shell", Engine: "shell"})
	addCmd(Command{Name: CommandSubmit, LoopID: "loop-1", Input: "echo <hi> && true"})
	addEv("loop-1", event.TurnStarted{TurnID: "t1", Index: 0, Input: "echo <hi> && true"})
	addEv("", event.SessionActive{})
	addEv("loop-1", event.TurnOutput{TurnID: "t1", Text: "<hi>\n", Elided: 3})
	addCmd(Command{Name: CommandRespondGate, LoopID: "loop-1", GateID: "g1", Action: event.ActionApprove})
	addEv("loop-1", event.TurnDone{TurnID: "t1", ExitCode: 0, Duration: 1500 * time.Millisecond})
	addEv("", event.SessionIdle{})
	addCmd(Command{Name: CommandShutdown})
	addEv("", event.SessionStopped{})

	for i, a := range log {
		if a.seq != uint64(i+2) {
			t.Fatalf("append %d got seq %d, want %d (contiguous after the fence)", i, a.seq, i+2)
		}
	}
	if j.Tip() != uint64(len(log)+1) || ledgerTip(t, st) != j.Tip() {
		t.Fatalf("tip %d, ledger %d", j.Tip(), ledgerTip(t, st))
	}

	recs := readAll(t, st, 0)
	if len(recs) != len(log)+1 || recs[0].Kind != KindFence || recs[0].Epoch != 1 {
		t.Fatalf("replay: %d records, first %+v", len(recs), recs[0])
	}
	for i, a := range log {
		r := recs[i+1]
		wantKind := KindEvent
		if a.cmd != nil {
			wantKind = KindCommand
		}
		if r.Seq != a.seq || r.Kind != wantKind || r.LoopID != a.loopID || r.Epoch != 0 ||
			!reflect.DeepEqual(r.Event, a.ev) || !reflect.DeepEqual(r.Command, a.cmd) {
			t.Errorf("record %d:\n got %+v\nwant %+v", r.Seq, r, a)
		}
		if !r.At.Equal(base.Add(time.Duration(i+2)*time.Millisecond)) || r.At.Location() != time.UTC {
			t.Errorf("record %d at %v", r.Seq, r.At)
		}
	}

	// The event replayer skips fences and commands.
	er, err := NewEventReplayer(ctx, st, testName, 0)
	if err != nil {
		t.Fatal(err)
	}
	var envs []event.Envelope
	for er.Next() {
		envs = append(envs, er.Envelope())
	}
	if er.Err() != nil || er.LastSeq() != j.Tip() {
		t.Fatalf("event replay: err %v last %d", er.Err(), er.LastSeq())
	}
	er.Close()
	er.Close() // idempotent
	var wantEnvs []event.Envelope
	for i, a := range log {
		if a.ev != nil {
			wantEnvs = append(wantEnvs, event.Envelope{Seq: a.seq, Session: "6f1c0c7e-1d2a-4b8e-9f00-123456789abc",
				LoopID: a.loopID, At: recs[i+1].At, Event: a.ev})
		}
	}
	if !reflect.DeepEqual(envs, wantEnvs) {
		t.Errorf("event replay:\n got %+v\nwant %+v", envs, wantEnvs)
	}

	// Replay from the middle.
	mid := recs[5].Seq
	rest := readAll(t, st, mid)
	if !reflect.DeepEqual(rest, recs[6:]) {
		t.Errorf("replay after %d:\n got %+v\nwant %+v", mid, rest, recs[6:])
	}
	r, _ := NewReplayer(ctx, st, testName, mid)
	if r.LastSeq() != mid {
		t.Errorf("LastSeq before Next = %d", r.LastSeq())
	}
	r.Next()
	r.Next()
	if r.LastSeq() != mid+2 {
		t.Errorf("LastSeq = %d, want %d", r.LastSeq(), mid+2)
	}
	r.Close()
	if r.Next() {
		t.Error("Next after Close")
	}
	// Past the tip: nothing, no error.
	if got := readAll(t, st, 1000); len(got) != 0 {
		t.Errorf("after the tip: %d records", len(got))
	}
	// An absent journal is empty.
	r, err = NewReplayer(ctx, st, "sessions/absent", 0)
	if err != nil || r.Next() || r.Err() != nil {
		t.Errorf("absent: %v %v", err, r.Err())
	}
}

func TestEphemeralRefused(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	j := open(t, st, acquire(t, st))
	for _, ev := range []event.Event{
		event.OutputDelta{TurnID: "t", Stream: event.StreamStdout, Text: "x"},
		event.SessionFaulted{Cause: "x"},
	} {
		loop := ""
		if ev.Scope() == event.LoopScope {
			loop = "l"
		}
		seq, err := j.AppendEvent(ctx, loop, ev)
		var eph *event.EphemeralError
		if !errors.As(err, &eph) || eph.Type != ev.Type() || seq != 0 {
			t.Errorf("AppendEvent(%s) = %d, %v; want *event.EphemeralError", ev.Type(), seq, err)
		}
	}
	if ledgerTip(t, st) != 1 || j.Tip() != 1 || j.Err() != nil {
		t.Fatalf("tip %d/%d err %v: something was appended or latched", ledgerTip(t, st), j.Tip(), j.Err())
	}
	if _, err := j.AppendEvent(ctx, "", event.SessionIdle{}); err != nil {
		t.Fatalf("journal unusable after refusal: %v", err)
	}
}

func TestInvalidRecordsRefusedWithoutLatching(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	j := open(t, st, acquire(t, st))
	var inv *InvalidRecordError
	if _, err := j.AppendEvent(ctx, "", event.TurnStarted{TurnID: "t"}); !errors.As(err, &inv) {
		t.Errorf("loop event without loop id: %v", err)
	}
	if _, err := j.AppendEvent(ctx, "l", event.SessionIdle{}); !errors.As(err, &inv) {
		t.Errorf("session event with loop id: %v", err)
	}
	if _, err := j.AppendEvent(ctx, "l", event.LoopStarted{LoopID: "m"}); !errors.As(err, &inv) {
		t.Errorf("LoopStarted for another loop: %v", err)
	}
	if _, err := j.AppendCommand(ctx, Command{Name: "reboot"}); !errors.As(err, &inv) {
		t.Errorf("bad command: %v", err)
	}
	var enc *event.EncodeError
	if _, err := j.AppendEvent(ctx, "l", event.TurnInterrupted{TurnID: "t", Reason: "bored"}); !errors.As(err, &enc) {
		t.Errorf("bad enum: %v", err)
	}
	if _, err := j.AppendEvent(ctx, "l", &event.TurnStarted{TurnID: "t"}); !errors.As(err, &enc) {
		t.Errorf("pointer event: %v", err)
	}
	if _, err := j.AppendEvent(ctx, "", nil); !errors.As(err, &enc) {
		t.Errorf("nil event: %v", err)
	}
	var big *storage.PayloadTooLargeError
	if _, err := j.AppendEvent(ctx, "l", event.TurnOutput{TurnID: "t", Text: strings.Repeat("x", storage.MaxPayload)}); !errors.As(err, &big) {
		t.Errorf("huge output: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := j.AppendEvent(cctx, "", event.SessionIdle{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if ledgerTip(t, st) != 1 || j.Err() != nil {
		t.Fatalf("tip %d err %v", ledgerTip(t, st), j.Err())
	}
	if _, err := j.AppendEvent(ctx, "", event.SessionIdle{}); err != nil {
		t.Fatal(err)
	}
}

func TestLeaseLost(t *testing.T) {
	for _, how := range []string{"release", "break"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			st := memstore.New()
			lease := acquire(t, st)
			j := open(t, st, lease)
			if _, err := j.AppendEvent(ctx, "", event.SessionActive{}); err != nil {
				t.Fatal(err)
			}
			wantReason := storage.LossReleased
			if how == "release" {
				if err := lease.Release(ctx); err != nil {
					t.Fatal(err)
				}
			} else {
				if _, err := st.Break(ctx, testName); err != nil {
					t.Fatal(err)
				}
				wantReason = storage.LossReplaced
			}
			tip := ledgerTip(t, st)
			for i := range 3 {
				_, err := j.AppendEvent(ctx, "", event.SessionIdle{})
				var lost *JournalLeaseLostError
				if !errors.As(err, &lost) || lost.Name != testName || lost.Epoch != 1 {
					t.Fatalf("append %d: %v, want *JournalLeaseLostError", i, err)
				}
				var cause *storage.LeaseLostError
				if !errors.As(err, &cause) || cause.Reason != wantReason {
					t.Errorf("cause = %v, want reason %s", lost.Cause, wantReason)
				}
				if _, err := j.AppendCommand(ctx, Command{Name: CommandShutdown}); !errors.As(err, &lost) {
					t.Errorf("command: %v", err)
				}
			}
			if !errors.As(j.Err(), new(*JournalLeaseLostError)) {
				t.Errorf("Err() = %v", j.Err())
			}
			if got := ledgerTip(t, st); got != tip {
				t.Errorf("ledger tip moved from %d to %d", tip, got)
			}
			// Open refuses a lost lease too, writing nothing.
			if _, err := Open(ctx, st, testName, lease); !errors.As(err, new(*JournalLeaseLostError)) {
				t.Errorf("Open with lost lease: %v", err)
			}
			if got := ledgerTip(t, st); got != tip {
				t.Errorf("Open wrote: tip %d -> %d", tip, got)
			}
		})
	}
}

func TestSuccessorFencesStaleWriter(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	stale := open(t, st, deaf(acquire(t, st)))
	if _, err := stale.AppendEvent(ctx, "", event.SessionActive{}); err != nil {
		t.Fatal(err)
	}

	succLease, err := st.Break(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	succ := open(t, st, succLease)
	if succ.Epoch() != 2 || succ.FenceSeq() != 3 {
		t.Fatalf("successor epoch %d fence %d", succ.Epoch(), succ.FenceSeq())
	}

	_, err = stale.AppendEvent(ctx, "l", event.TurnOutput{TurnID: "t", Text: "stale"})
	var fenced *FencedError
	if !errors.As(err, &fenced) {
		t.Fatalf("stale append: %v, want *FencedError", err)
	}
	if fenced.Name != testName || fenced.Epoch != 1 || fenced.Expected != 2 || fenced.Actual != 3 {
		t.Errorf("FencedError = %+v", fenced)
	}
	if !errors.As(err, new(*storage.ConflictError)) {
		t.Errorf("FencedError does not unwrap to the conflict")
	}
	// Latched: every later append returns it, even once the tip would fit.
	if _, err := succ.AppendEvent(ctx, "", event.SessionIdle{}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := stale.AppendCommand(ctx, Command{Name: CommandShutdown}); !errors.As(err, new(*FencedError)) {
			t.Fatalf("later append: %v", err)
		}
	}
	if !errors.As(stale.Err(), new(*FencedError)) {
		t.Errorf("Err() = %v", stale.Err())
	}
	recs := readAll(t, st, succ.FenceSeq())
	if len(recs) != 1 || recs[0].Event != (event.SessionIdle{}) {
		t.Errorf("after the successor's fence: %+v", recs)
	}
}

func TestNoStaleRecordAfterSuccessorFence(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	stale := open(t, st, deaf(acquire(t, st)))
	var wg sync.WaitGroup
	var staleOK atomic.Int64
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ { // until fenced
				_, err := stale.AppendEvent(ctx, "l", event.TurnOutput{TurnID: "stale", Text: fmt.Sprint(g, i)})
				if err != nil {
					if !errors.As(err, new(*FencedError)) {
						t.Errorf("stale append: %v", err)
					}
					return
				}
				staleOK.Add(1)
			}
		}()
	}
	for staleOK.Load() < 50 {
		time.Sleep(time.Millisecond)
	}
	succLease, err := st.Break(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	// The stale writer may append between the successor's Tip and its
	// fence; Open then refuses with *FencedError and writes nothing, so
	// trying again is safe.
	var succ *SessionJournal
	for succ == nil {
		succ, err = Open(ctx, st, testName, succLease)
		if err != nil && !errors.As(err, new(*FencedError)) {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		if _, err := succ.AppendEvent(ctx, "l", event.TurnOutput{TurnID: "succ", Text: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if !errors.As(stale.Err(), new(*FencedError)) {
		t.Fatalf("stale writer not fenced: %v", stale.Err())
	}
	for _, r := range readAll(t, st, succ.FenceSeq()) {
		if out, ok := r.Event.(event.TurnOutput); !ok || out.TurnID != "succ" {
			t.Fatalf("record %d after the successor's fence: %+v", r.Seq, r)
		}
	}
}

func TestOpenConflictIsFenced(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	open(t, st, deaf(acquire(t, st)))
	led := &countingLedger{Ledger: st}
	led.staleTip.Store(true) // a writer appends between Tip and the fence
	l2, err := st.Break(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, led, testName, l2)
	var fenced *FencedError
	if !errors.As(err, &fenced) || fenced.Expected != 0 || fenced.Actual != 1 || fenced.Epoch != 2 {
		t.Fatalf("Open = %v, want *FencedError 0/1", err)
	}
	if ledgerTip(t, st) != 1 {
		t.Errorf("fence landed anyway")
	}
}

func TestGroupCommit(t *testing.T) {
	const goroutines, per = 8, 200
	for _, delay := range []time.Duration{0, 100 * time.Microsecond} {
		t.Run(fmt.Sprint("delay=", delay), func(t *testing.T) {
			ctx := context.Background()
			st := memstore.New()
			led := &countingLedger{Ledger: st, delay: delay}
			j := open(t, led, acquire(t, st))
			led.calls.Store(0)
			led.payloads.Store(0)
			got := make([][]uint64, goroutines)
			parallel(goroutines, func(g int) {
				for i := range per {
					var seq uint64
					var err error
					if i%10 == 9 {
						seq, err = j.AppendCommand(ctx, Command{Name: CommandSubmit, LoopID: "l", Input: fmt.Sprintf("%d/%d", g, i)})
					} else {
						seq, err = j.AppendEvent(ctx, "l", event.TurnOutput{TurnID: fmt.Sprint(g), Text: fmt.Sprint(i)})
					}
					if err != nil {
						t.Errorf("g%d i%d: %v", g, i, err)
						return
					}
					got[g] = append(got[g], seq)
				}
			})
			const total = goroutines * per
			if j.Tip() != total+1 || ledgerTip(t, st) != total+1 {
				t.Fatalf("tip %d ledger %d, want %d", j.Tip(), ledgerTip(t, st), total+1)
			}
			// Each caller's seqs increase; together they cover 2..total+1 once.
			seen := make(map[uint64]bool)
			for g, seqs := range got {
				for i, s := range seqs {
					if i > 0 && s <= seqs[i-1] {
						t.Fatalf("g%d seqs not increasing: %d after %d", g, s, seqs[i-1])
					}
					if seen[s] {
						t.Fatalf("seq %d acked twice", s)
					}
					seen[s] = true
				}
			}
			// Every record is in the ledger exactly once, at the acked seq.
			recs := readAll(t, st, 1)
			if len(recs) != total {
				t.Fatalf("%d records", len(recs))
			}
			where := make(map[string]uint64)
			for _, r := range recs {
				var key string
				if r.Kind == KindCommand {
					key = "c" + r.Command.Input
				} else {
					out := r.Event.(event.TurnOutput)
					key = "e" + out.TurnID + "/" + out.Text
				}
				if _, dup := where[key]; dup {
					t.Fatalf("record %s twice", key)
				}
				where[key] = r.Seq
			}
			for g, seqs := range got {
				for i, s := range seqs {
					key := fmt.Sprintf("e%d/%d", g, i)
					if i%10 == 9 {
						key = fmt.Sprintf("c%d/%d", g, i)
					}
					if where[key] != s {
						t.Fatalf("%s acked at %d, stored at %d", key, s, where[key])
					}
				}
			}
			calls, payloads := led.calls.Load(), led.payloads.Load()
			t.Logf("%d records in %d ledger appends (%.1f per append)", payloads, calls, float64(payloads)/float64(calls))
			if payloads != total {
				t.Errorf("ledger saw %d payloads", payloads)
			}
			if delay > 0 && calls >= total/2 {
				t.Errorf("no batching: %d appends for %d records", calls, total)
			}
		})
	}
}

func TestLedgerFailureIsLatched(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	j := open(t, st, acquire(t, st))
	if _, err := j.AppendEvent(ctx, "", event.SessionActive{}); err != nil {
		t.Fatal(err)
	}
	diskFull := errors.New("disk full")
	st.SetAppendFault(func(string, uint64) error { return diskFull })
	_, err := j.AppendEvent(ctx, "", event.SessionIdle{})
	var ae *AppendError
	if !errors.As(err, &ae) || !errors.Is(err, diskFull) || ae.Expected != 2 || ae.Count != 1 {
		t.Fatalf("append: %v, want *AppendError wrapping disk full", err)
	}
	st.SetAppendFault(nil)
	for range 2 {
		if _, err := j.AppendEvent(ctx, "", event.SessionIdle{}); !errors.Is(err, diskFull) {
			t.Fatalf("after the fault cleared: %v, want the latched error", err)
		}
	}
	if !errors.Is(j.Err(), diskFull) || ledgerTip(t, st) != 2 || j.Tip() != 2 {
		t.Fatalf("Err %v tip %d/%d", j.Err(), ledgerTip(t, st), j.Tip())
	}
}

func TestFailingFlushFailsEveryRecordInIt(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	led := &countingLedger{Ledger: st, delay: 200 * time.Microsecond}
	j := open(t, led, acquire(t, st))
	var calls atomic.Int64
	boom := errors.New("io error")
	st.SetAppendFault(func(string, uint64) error {
		if calls.Add(1) == 5 {
			return boom
		}
		return nil
	})
	var okSeqs sync.Map
	var failed atomic.Int64
	parallel(8, func(g int) {
		for i := range 50 {
			seq, err := j.AppendEvent(ctx, "l", event.TurnOutput{TurnID: fmt.Sprint(g), Text: fmt.Sprint(i)})
			if err != nil {
				if !errors.Is(err, boom) {
					t.Errorf("error %v is not the latched one", err)
				}
				failed.Add(1)
				continue
			}
			okSeqs.Store(seq, true)
		}
	})
	n := 0
	okSeqs.Range(func(k, v any) bool { n++; return true })
	if uint64(n) != ledgerTip(t, st)-1 || failed.Load() != int64(400-n) {
		t.Fatalf("%d acked, %d failed, ledger holds %d", n, failed.Load(), ledgerTip(t, st)-1)
	}
	for _, r := range readAll(t, st, 1) {
		if _, ok := okSeqs.Load(r.Seq); !ok {
			t.Fatalf("record %d in the ledger was not acked", r.Seq)
		}
	}
}

func TestCancelledWhileQueued(t *testing.T) {
	st := memstore.New()
	j := open(t, st, acquire(t, st))
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	st.SetAppendFault(func(string, uint64) error {
		entered <- struct{}{}
		<-release
		return nil
	})

	bg := context.Background()
	leaderDone := make(chan error, 1)
	go func() {
		_, err := j.AppendEvent(bg, "", event.SessionActive{})
		leaderDone <- err
	}()
	<-entered // the leader is in the ledger
	cctx, cancel := context.WithCancel(bg)
	followerDone := make(chan error, 1)
	go func() {
		_, err := j.AppendEvent(cctx, "", event.SessionIdle{})
		followerDone <- err
	}()
	// Wait until the follower is queued.
	for {
		j.mu.Lock()
		n := len(j.queue)
		j.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(100 * time.Microsecond)
	}
	cancel()
	if err := <-followerDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("follower: %v", err)
	}
	st.SetAppendFault(nil)
	close(release)
	if err := <-leaderDone; err != nil {
		t.Fatal(err)
	}
	if j.Err() != nil || ledgerTip(t, st) != 2 {
		t.Fatalf("err %v tip %d", j.Err(), ledgerTip(t, st))
	}
	// Nothing of the cancelled record was written: the next one follows
	// the leader's.
	if seq, err := j.AppendEvent(bg, "", event.SessionIdle{}); err != nil || seq != 3 {
		t.Fatalf("append after the cancelled one: %d %v", seq, err)
	}
}

func TestLeaderCancellationDoesNotFailTheBatch(t *testing.T) {
	st := memstore.New()
	j := open(t, st, acquire(t, st))
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	st.SetAppendFault(func(string, uint64) error {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		return nil
	})
	cctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := j.AppendEvent(cctx, "", event.SessionActive{})
		done <- err
	}()
	<-entered
	cancel()
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("in-flight append failed on its cancelled context: %v", err)
	}
	if j.Err() != nil || ledgerTip(t, st) != 2 {
		t.Fatalf("err %v tip %d", j.Err(), ledgerTip(t, st))
	}
}

func BenchmarkAppendEvent(b *testing.B) {
	ev := event.TurnOutput{TurnID: "0f8fad5b-d9cb-469f-a165-70867728950e", Text: strings.Repeat("output line 0123456789\n", 8)}
	b.Run("serial", func(b *testing.B) {
		st := memstore.New()
		j := open(b, st, acquire(b, st))
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := j.AppendEvent(ctx, "loop", ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		st := memstore.New()
		j := open(b, st, acquire(b, st))
		ctx := context.Background()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := j.AppendEvent(ctx, "loop", ev); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

func BenchmarkReplay10k(b *testing.B) {
	st := memstore.New()
	j := open(b, st, acquire(b, st))
	ctx := context.Background()
	for i := range 10000 {
		var err error
		if i%50 == 0 {
			_, err = j.AppendEvent(ctx, "loop", event.TurnStarted{TurnID: fmt.Sprint(i), Index: i, Input: "echo hi"})
		} else {
			_, err = j.AppendEvent(ctx, "loop", event.TurnOutput{TurnID: fmt.Sprint(i / 50), Text: strings.Repeat("line\n", 20)})
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := NewReplayer(ctx, st, testName, 0)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for r.Next() {
			n++
		}
		if r.Err() != nil || n != 10001 {
			b.Fatal(n, r.Err())
		}
		r.Close()
	}
}
