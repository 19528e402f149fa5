package journal

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"looprig/rig/event"
	"looprig/rig/storage/memstore"
)

// A long journal comes back in order, and a damaged record far in stops
// the replay at its own sequence after every record before it.
func TestReplayLongJournalStopsAtDamage(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	j := open(t, st, acquire(t, st))
	const n = 3077
	for i := range n {
		if _, err := j.AppendEvent(ctx, "loop-1", event.TurnOutput{TurnID: "t1", Text: fmt.Sprintf("line %d\n", i)}); err != nil {
			t.Fatal(err)
		}
	}
	tip := j.Tip()
	check := func(wantLast uint64, wantErr bool) {
		t.Helper()
		rp, err := NewReplayer(ctx, st, testName, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer rp.Close()
		var i int
		for rp.Next() {
			rec := rp.Record()
			if rec.Seq != uint64(i+1) || rp.LastSeq() != rec.Seq {
				t.Fatalf("record %d has seq %d (LastSeq %d)", i, rec.Seq, rp.LastSeq())
			}
			if o, ok := rec.Event.(event.TurnOutput); ok && o.Text != fmt.Sprintf("line %d\n", int(rec.Seq)-2) {
				t.Fatalf("record %d: %q", rec.Seq, o.Text)
			}
			i++
		}
		var de *RecordDecodeError
		switch {
		case rp.LastSeq() != wantLast:
			t.Fatalf("replay stopped after seq %d, want %d (err %v)", rp.LastSeq(), wantLast, rp.Err())
		case wantErr && (!errors.As(rp.Err(), &de) || de.Seq != wantLast+1):
			t.Fatalf("replay error %v, want *RecordDecodeError at seq %d", rp.Err(), wantLast+1)
		case !wantErr && rp.Err() != nil:
			t.Fatalf("replay error %v", rp.Err())
		}
		if rp.Next() {
			t.Fatal("Next after the end")
		}
	}
	check(tip, false)
	// A damaged record at the end of a long journal.
	if err := st.Append(ctx, testName, tip, []byte(`{"v":1,"kind":"event","event":{"v":1,"type":"Nope","data":{}},"at":"2026-01-01T00:00:00Z"}`)); err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ctx, testName, tip+1, []byte(`{"v":1,"kind":"fence","epoch":9,"at":"2026-01-01T00:00:00Z"}`)); err != nil {
		t.Fatal(err)
	}
	check(tip, true)
}
