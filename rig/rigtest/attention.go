package rigtest

import (
	"strings"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/journal"
)

var attentionCases = []testCase{
	{"BellBurstIsOneEpisode", testAttentionBurst},
	{"SeenAndNextEpisode", testAttentionSeen},
}

// foldJournal folds session s's whole journal, as a restore or a reader
// of it does.
func foldJournal(t *testing.T, e *env, s *rig.Session) rig.State {
	t.Helper()
	var st rig.State
	for _, r := range readJournal(t, e.raw, s.SessionID()) {
		if r.Kind == journal.KindEvent {
			st.Apply(event.Envelope{Seq: r.Seq, At: r.At, LoopID: r.LoopID, Event: r.Event})
		}
	}
	return st
}

// sameAttention compares the live session's attention with a fold's. The
// times may differ by the moment between the journal's append and the
// hub's delivery (the hub stamps what it delivers itself).
func sameAttention(a, b *rig.Attention) bool {
	if a == nil || b == nil {
		return a == b
	}
	near := func(x, y time.Time) bool { return x.Sub(y).Abs() < time.Second }
	return a.TurnID == b.TurnID && a.Reason == b.Reason && a.Text == b.Text && a.Seq == b.Seq &&
		near(a.Since, b.Since) && near(a.At, b.At)
}

// outputShows waits until turn's journaled output holds want.
func outputShows(t *testing.T, e *env, s *rig.Session, turn, want string) {
	t.Helper()
	eventually(t, "the turn's output "+want, func() bool {
		return strings.Contains(turnOutput(readJournal(t, e.raw, s.SessionID()), turn), want)
	})
}

// pendingAttention waits until session s has attention pending that ok
// accepts, and returns it. The output that carries a signal is journaled
// before its Attention record, so the output being there is not enough.
func pendingAttention(t *testing.T, s *rig.Session, what string, ok func(*rig.Attention) bool) *rig.Attention {
	t.Helper()
	var a *rig.Attention
	eventually(t, what, func() bool {
		a = s.Status().Attention
		return a != nil && ok(a)
	})
	return a
}

// Ten bells within a second are one episode: one Attention record, after
// the output before it; the output keeps the bells. The live session, its
// catalog entry and a fold of its journal say the same.
func testAttentionBurst(t *testing.T, e *env) {
	s := e.newSession(e.define())
	m := newMarker()
	ti := submit(t, s, `printf 'before-`+m+`\n'; for i in 1 2 3 4 5 6 7 8 9 10; do printf '\a'; sleep 0.05; done; echo "after-`+m+`"; sleep 60`)
	outputShows(t, e, s, ti.ID, "after-"+m)
	recs := readJournal(t, e.raw, s.SessionID())
	attns, arecs := find[event.Attention](recs)
	if len(attns) != 1 {
		t.Fatalf("%d Attention records for a burst of ten bells, want 1:\n%s", len(attns), describe(recs))
	}
	if a := attns[0]; a.TurnID != ti.ID || a.Reason != event.AttentionBell || a.Text != "" {
		t.Errorf("the record %+v, want a bell of turn %s", a, ti.ID)
	}
	var before string
	for _, r := range recs {
		if r.Seq >= arecs[0].Seq {
			break
		}
		if o, ok := r.Event.(event.TurnOutput); ok {
			before += o.Text
		}
	}
	if !strings.Contains(before, "before-"+m) {
		t.Errorf("the output before the bell (%q) was not journaled before the record", before)
	}
	if out := turnOutput(recs, ti.ID); strings.Count(out, "\a") != 10 {
		t.Errorf("the journaled output keeps %d bells of 10: %q", strings.Count(out, "\a"), out)
	}
	live := s.Status().Attention
	if live == nil || live.Seq != arecs[0].Seq || live.Reason != event.AttentionBell || live.TurnID != ti.ID {
		t.Fatalf("the session's attention %+v, want the record at %d", live, arecs[0].Seq)
	}
	if st := foldJournal(t, e, s); !sameAttention(st.Attention, live) {
		t.Errorf("replayed %+v, live %+v", st.Attention, live)
	}
	info := listedWhen(t, e.raw, s.SessionID(), "the attention", func(i rig.SessionInfo) bool { return i.Attention != nil })
	if !sameAttention(info.Attention, live) {
		t.Errorf("listed %+v, live %+v", info.Attention, live)
	}
	if err := s.Interrupt(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	if a := s.Status().Attention; a != nil {
		t.Errorf("the turn ended, its attention is still pending: %+v", a)
	}
	listedWhen(t, e.raw, s.SessionID(), "no attention after the turn's end", func(i rig.SessionInfo) bool { return i.Attention == nil })
}

// Looking at the session (SeeAttention) records AttentionSeen, once, and
// clears it everywhere; looking at an older sequence than the pending one
// records nothing; a signal after a quiet is a new episode, with the
// notification's text.
func testAttentionSeen(t *testing.T, e *env) {
	s := e.newSession(e.define(rig.WithAttentionQuiet(300 * time.Millisecond)))
	m := newMarker()
	ti := submit(t, s, `printf '\a'; echo "rang-`+m+`"; read x; printf '\033]9;build %s\007' "$x"; echo "said-`+m+`"; sleep 60`)
	outputShows(t, e, s, ti.ID, "rang-"+m)
	first := pendingAttention(t, s, "attention after a bell", func(a *rig.Attention) bool { return a.Reason == event.AttentionBell })
	if err := s.SeeAttention(waitCtx(t), first.Seq-1, "test"); err != nil {
		t.Fatal(err)
	}
	if a := s.Status().Attention; a == nil {
		t.Fatal("looking at an older sequence cleared the attention")
	}
	for range 2 { // the second look finds nothing pending: nothing recorded
		if err := s.SeeAttention(waitCtx(t), 0, "test"); err != nil {
			t.Fatal(err)
		}
	}
	if a := s.Status().Attention; a != nil {
		t.Fatalf("looked at, still pending: %+v", a)
	}
	seen, _ := find[event.AttentionSeen](readJournal(t, e.raw, s.SessionID()))
	if len(seen) != 1 || seen[0].Through != first.Seq || seen[0].From != "test" {
		t.Fatalf("AttentionSeen records %+v, want one through %d", seen, first.Seq)
	}
	listedWhen(t, e.raw, s.SessionID(), "no attention once seen", func(i rig.SessionInfo) bool { return i.Attention == nil })
	if st := foldJournal(t, e, s); st.Attention != nil {
		t.Errorf("replayed, it is pending: %+v", st.Attention)
	}

	time.Sleep(400 * time.Millisecond) // a quiet: the next signal is news
	if _, err := s.SendInput(waitCtx(t), rig.Input{Text: "done\n", From: testClient}); err != nil {
		t.Fatal(err)
	}
	outputShows(t, e, s, ti.ID, "said-"+m)
	second := pendingAttention(t, s, "attention after the notification", func(a *rig.Attention) bool {
		return a.Reason == event.AttentionOSC9 && a.Text == "build done" && a.Seq > first.Seq
	})
	if st := foldJournal(t, e, s); !sameAttention(st.Attention, second) {
		t.Errorf("replayed %+v, live %+v", st.Attention, second)
	}
	info := listedWhen(t, e.raw, s.SessionID(), "the notification", func(i rig.SessionInfo) bool { return i.Attention != nil })
	if info.Attention.Text != "build done" {
		t.Errorf("listed %+v", info.Attention)
	}
}
