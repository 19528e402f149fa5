package faulttest

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

func readJournal(t testing.TB, st storage.Store, id uuid.UUID) []journal.Record {
	t.Helper()
	rp, err := journal.NewReplayer(context.Background(), st, storage.SessionName(id.String()), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rp.Close()
	var recs []journal.Record
	for rp.Next() {
		recs = append(recs, rp.Record())
	}
	if err := rp.Err(); err != nil {
		t.Fatalf("replay: %v", err)
	}
	return recs
}

func typeOf(r journal.Record) string {
	switch r.Kind {
	case journal.KindFence:
		return "fence"
	case journal.KindCommand:
		return r.Command.Name
	}
	return string(r.Event.Type())
}

func turnOf(ev event.Event) (string, bool) {
	switch v := ev.(type) {
	case event.TurnDone:
		return v.TurnID, true
	case event.TurnFailed:
		return v.TurnID, true
	case event.TurnInterrupted:
		return v.TurnID, true
	}
	return "", false
}

// checkJournal checks a restored journal: contiguous sequences, every
// acknowledged record present with its type, fence epochs strictly
// increasing (a failed restore's re-fence at its own epoch right before
// RestoreErrored excepted), and exactly one end per started turn.
func checkJournal(t testing.TB, recs []journal.Record, acked map[uint64]string) {
	t.Helper()
	for i, r := range recs {
		if r.Seq != uint64(i+1) {
			t.Fatalf("record %d has seq %d", i+1, r.Seq)
		}
	}
	for seq, typ := range acked {
		if seq > uint64(len(recs)) || typeOf(recs[seq-1]) != typ {
			got := "missing"
			if seq <= uint64(len(recs)) {
				got = typeOf(recs[seq-1])
			}
			t.Errorf("acknowledged record %d %s is %s after the crash", seq, typ, got)
		}
	}
	var last uint64
	for i, r := range recs {
		if r.Kind != journal.KindFence {
			continue
		}
		// A failed restore re-fences at its own epoch to record RestoreErrored.
		refence := r.Epoch == last && (i+1 == len(recs) || typeOf(recs[i+1]) == "RestoreErrored" || recs[i+1].Kind == journal.KindFence)
		if r.Epoch <= last && !refence {
			t.Errorf("fence at %d has epoch %d after %d", r.Seq, r.Epoch, last)
		}
		last = r.Epoch
	}
	open := map[string]bool{}
	ended := map[string]bool{}
	for _, r := range recs {
		if r.Kind != journal.KindEvent {
			continue
		}
		if ts, ok := r.Event.(event.TurnStarted); ok {
			open[ts.TurnID] = true
			continue
		}
		if id, ok := turnOf(r.Event); ok {
			if !open[id] || ended[id] {
				t.Errorf("%s at %d: turn %s started %v, ended before %v", typeOf(r), r.Seq, id, open[id], ended[id])
			}
			ended[id] = true
			delete(open, id)
		}
	}
	for id := range open {
		t.Errorf("turn %s has no end", id)
	}
}

// restoreAndCheck reopens the store, checks the listing (never broken),
// restores the session, checks its journal, runs one more turn and shuts
// down. It returns the restored epoch.
func restoreAndCheck(t *testing.T, dir string, id uuid.UUID, acked map[uint64]string) uint64 {
	t.Helper()
	st := openStore(t, dir)
	ctx := context.Background()
	infos, err := rig.ListSessions(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		if in.State == rig.StateBroken {
			t.Fatalf("session %s is broken after the crash: %s", in.ID, in.Reason)
		}
		if in.State == rig.StateHeld || in.State == rig.StateLive {
			t.Fatalf("session %s is %s after its holder died", in.ID, in.State)
		}
	}
	r := defineRig(t, st)
	s, err := r.RestoreSession(ctx, id)
	if err != nil {
		t.Fatalf("restore after the crash: %v", err)
	}
	sub := s.Subscribe(hub.Filter{AllLoops: true})
	if _, err := s.Submit(ctx, "echo after"); err != nil {
		t.Fatalf("submit after restore: %v", err)
	}
	waitTurnEnd(t, sub)
	sub.Close()
	epoch := s.Epoch()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown after restore: %v", err)
	}
	checkJournal(t, readJournal(t, st, id), acked)
	st.Close()
	return epoch
}
