package rigtest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// readJournal replays the whole journal of id, read-only.
func readJournal(t testing.TB, ledger storage.Ledger, id uuid.UUID) []journal.Record {
	t.Helper()
	recs, err := tryReadJournal(ledger, id)
	if err != nil {
		t.Fatalf("replay journal of %s: %v", id, err)
	}
	return recs
}

func tryReadJournal(ledger storage.Ledger, id uuid.UUID) ([]journal.Record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	rp, err := journal.NewReplayer(ctx, ledger, storage.SessionName(id.String()), 0)
	if err != nil {
		return nil, err
	}
	defer rp.Close()
	var out []journal.Record
	for rp.Next() {
		out = append(out, rp.Record())
	}
	return out, rp.Err()
}

func tip(t testing.TB, ledger storage.Ledger, id uuid.UUID) uint64 {
	t.Helper()
	n, err := ledger.Tip(context.Background(), storage.SessionName(id.String()))
	if err != nil {
		t.Fatalf("Tip: %v", err)
	}
	return n
}

// waitJournal polls the journal of id (read-only) until some record
// satisfies pred, and returns it.
func waitJournal(t testing.TB, ledger storage.Ledger, id uuid.UUID, what string, pred func(journal.Record) bool) journal.Record {
	t.Helper()
	var found journal.Record
	eventually(t, what+" in the journal", func() bool {
		recs, err := tryReadJournal(ledger, id)
		if err != nil {
			t.Fatalf("replay journal of %s: %v", id, err)
		}
		for _, r := range recs {
			if pred(r) {
				found = r
				return true
			}
		}
		return false
	})
	return found
}

// describe renders records for failure messages.
func describe(recs []journal.Record) string {
	var b strings.Builder
	for _, r := range recs {
		switch r.Kind {
		case journal.KindFence:
			fmt.Fprintf(&b, "\n  %d fence epoch=%d", r.Seq, r.Epoch)
		case journal.KindCommand:
			fmt.Fprintf(&b, "\n  %d command %s", r.Seq, r.Command.Name)
		default:
			fmt.Fprintf(&b, "\n  %d %s %+v", r.Seq, r.Event.Type(), r.Event)
		}
	}
	return b.String()
}

// lastFenceIndex is the index in recs of the last fence, -1 if none.
func lastFenceIndex(recs []journal.Record) int {
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Kind == journal.KindFence {
			return i
		}
	}
	return -1
}

func typesOf(recs []journal.Record) []string {
	var out []string
	for _, r := range recs {
		switch r.Kind {
		case journal.KindEvent:
			out = append(out, string(r.Event.Type()))
		case journal.KindFence:
			out = append(out, "fence")
		default:
			out = append(out, "command:"+r.Command.Name)
		}
	}
	return out
}

// find returns the events of type E in recs, with their records.
func find[E event.Event](recs []journal.Record) ([]E, []journal.Record) {
	var evs []E
	var rs []journal.Record
	for _, r := range recs {
		if r.Kind != journal.KindEvent {
			continue
		}
		if ev, ok := r.Event.(E); ok {
			evs = append(evs, ev)
			rs = append(rs, r)
		}
	}
	return evs, rs
}

// turnOutput concatenates the journaled output of turn (all turns when "").
func turnOutput(recs []journal.Record, turn string) string {
	var b strings.Builder
	outs, _ := find[event.TurnOutput](recs)
	for _, o := range outs {
		if turn == "" || o.TurnID == turn {
			b.WriteString(o.Text)
		}
	}
	return b.String()
}
