package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"looprig/rig/storage"
)

var ledgerCases = []testCase{
	{"RoundTrip", testLedgerRoundTrip},
	{"MultiPayloadAppend", testLedgerMultiPayload},
	{"EmptyAppendChecksTip", testLedgerEmptyAppend},
	{"ConflictStale", conflictCase(3, 2, 1)},
	{"ConflictAhead", conflictCase(3, 5, 1)},
	{"ConflictZeroOnNonEmpty", conflictCase(3, 0, 1)},
	{"ConflictNonZeroOnAbsent", conflictCase(0, 1, 1)},
	{"ConflictNonZeroOnDeleted", testLedgerConflictDeleted},
	{"ConflictBatchStale", conflictCase(3, 1, 3)},
	{"ConflictBatchAhead", conflictCase(3, 4, 2)},
	{"ConflictBatchOnAbsent", conflictCase(0, 2, 3)},
	{"StaleWriterConflicts", testLedgerStaleWriter},
	{"AbsentIsEmpty", testLedgerAbsent},
	{"ReadFromMiddle", testLedgerReadMiddle},
	{"ReadPastTip", testLedgerReadPastTip},
	{"CursorBoundedAtTip", testLedgerCursorBounded},
	{"EmptyPayload", testLedgerEmptyPayload},
	{"MaxPayload", testLedgerMaxPayload},
	{"PayloadTooLarge", testLedgerTooLarge},
	{"CallerMayReuseBuffers", testLedgerReuseBuffers},
	{"DeleteThenAppend", testLedgerDelete},
	{"PrefixNames", testLedgerPrefixNames},
	{"ConcurrentAppenders", testLedgerConcurrent},
}

// fill appends n numbered payloads to name, one Append each, and returns them.
func fill(t *testing.T, s storage.Ledger, name string, n int) [][]byte {
	t.Helper()
	ps := numbered(name, n)
	for i, p := range ps {
		appendOK(t, s, name, uint64(i), p)
	}
	return ps
}

func testLedgerRoundTrip(t *testing.T, s storage.Store) {
	const name, n = "sessions/roundtrip", 25
	wantTip(t, s, name, 0)
	ps := fill(t, s, name, n)
	wantTip(t, s, name, n)
	wantRecords(t, "Read(after 0)", readAll(t, s, name, 0), 1, ps)
	// Reading does not consume: a second read sees the same.
	wantRecords(t, "second Read(after 0)", readAll(t, s, name, 0), 1, ps)
}

func testLedgerMultiPayload(t *testing.T, s storage.Store) {
	const name = "sessions/batch"
	a := numbered("first", 1)
	b := numbered("batch", 4)
	c := numbered("last", 2)
	appendOK(t, s, name, 0, a...)
	appendOK(t, s, name, 1, b...)
	wantTip(t, s, name, 5)
	appendOK(t, s, name, 5, c...)
	wantTip(t, s, name, 7)
	want := append(append(append([][]byte{}, a...), b...), c...)
	wantRecords(t, "Read(after 0)", readAll(t, s, name, 0), 1, want)
}

func testLedgerEmptyAppend(t *testing.T, s storage.Store) {
	const name = "sessions/empty-append"
	appendOK(t, s, name, 0) // absent ledger, tip 0: the check passes
	wantTip(t, s, name, 0)
	wantConflict(t, "Append(expected 1, no payloads) on an absent ledger",
		s.Append(t.Context(), name, 1), name, 1, 0)
	ps := fill(t, s, name, 2)
	appendOK(t, s, name, 2)
	wantConflict(t, "Append(expected 1, no payloads) at tip 2", s.Append(t.Context(), name, 1), name, 1, 2)
	wantTip(t, s, name, 2)
	wantRecords(t, "Read(after 0)", readAll(t, s, name, 0), 1, ps)
}

// conflictCase builds a test that fills a ledger with have records, appends
// batch payloads at the wrong expected tip and checks the *ConflictError and
// that nothing changed.
func conflictCase(have, expected uint64, batch int) func(t *testing.T, s storage.Store) {
	return func(t *testing.T, s storage.Store) {
		const name = "sessions/conflict"
		ps := fill(t, s, name, int(have))
		err := s.Append(t.Context(), name, expected, numbered("intruder", batch)...)
		wantConflict(t, fmt.Sprintf("Append(expected %d, %d payloads) at tip %d", expected, batch, have),
			err, name, expected, have)
		wantUnchanged(t, s, name, ps)
		// The ledger still works at the real tip.
		appendOK(t, s, name, have, []byte("after"))
		wantTip(t, s, name, have+1)
	}
}

// wantUnchanged checks that name holds exactly ps.
func wantUnchanged(t *testing.T, s storage.Ledger, name string, ps [][]byte) {
	t.Helper()
	wantTip(t, s, name, uint64(len(ps)))
	wantRecords(t, "Read(after 0) after a refused Append", readAll(t, s, name, 0), 1, ps)
}

func testLedgerConflictDeleted(t *testing.T, s storage.Store) {
	const name = "sessions/conflict-deleted"
	fill(t, s, name, 3)
	if err := s.Delete(t.Context(), name); err != nil {
		t.Fatalf("Delete(%q) = %v", name, err)
	}
	wantConflict(t, "Append(expected 3) on a deleted ledger", s.Append(t.Context(), name, 3, []byte("x")), name, 3, 0)
	wantConflict(t, "Append(expected 1, 2 payloads) on a deleted ledger",
		s.Append(t.Context(), name, 1, []byte("x"), []byte("y")), name, 1, 0)
	wantUnchanged(t, s, name, nil)
}

// testLedgerStaleWriter is the fencing scenario: two writers read the same
// tip, one wins, the other must conflict and not land.
func testLedgerStaleWriter(t *testing.T, s storage.Store) {
	const name = "sessions/fenced"
	ps := fill(t, s, name, 2)
	seen := tip(t, s, name) // both writers see 2
	appendOK(t, s, name, seen, []byte("winner"))
	err := s.Append(t.Context(), name, seen, []byte("stale"))
	wantConflict(t, "the stale writer's Append", err, name, seen, seen+1)
	wantUnchanged(t, s, name, append(ps, []byte("winner")))
}

func testLedgerAbsent(t *testing.T, s storage.Store) {
	const name = "sessions/never-written"
	wantTip(t, s, name, 0)
	for _, after := range []uint64{0, 1, 100} {
		if recs := readAll(t, s, name, after); len(recs) != 0 {
			t.Fatalf("Read(%q, after %d) of an absent ledger yielded %d records", name, after, len(recs))
		}
	}
	if err := s.Delete(t.Context(), name); err != nil {
		t.Fatalf("Delete(%q) of an absent ledger = %v, want nil", name, err)
	}
	if err := s.Delete(t.Context(), name); err != nil {
		t.Fatalf("second Delete(%q) of an absent ledger = %v, want nil", name, err)
	}
	wantTip(t, s, name, 0)
	if recs := readAll(t, s, name, 0); len(recs) != 0 {
		t.Fatalf("Read(%q) after Tip/Read/Delete of an absent ledger yielded %d records", name, len(recs))
	}
	// Still appendable at 0, i.e. still empty.
	appendOK(t, s, name, 0, []byte("first"))
	wantTip(t, s, name, 1)
}

func testLedgerReadMiddle(t *testing.T, s storage.Store) {
	const name, n = "sessions/middle", 10
	ps := fill(t, s, name, n)
	for _, k := range []uint64{1, 4, 9, 10} {
		wantRecords(t, fmt.Sprintf("Read(after %d)", k), readAll(t, s, name, k), k+1, ps[k:])
	}
}

func testLedgerReadPastTip(t *testing.T, s storage.Store) {
	const name = "sessions/past"
	fill(t, s, name, 3)
	for _, after := range []uint64{3, 4, 1000, ^uint64(0)} {
		if recs := readAll(t, s, name, after); len(recs) != 0 {
			t.Fatalf("Read(after %d) at tip 3 yielded %d records (seqs %s), want none", after, len(recs), seqs(recs))
		}
	}
}

func testLedgerCursorBounded(t *testing.T, s storage.Store) {
	const name = "sessions/bounded"
	ps := fill(t, s, name, 3)
	c, err := s.Read(t.Context(), name, 0)
	if err != nil {
		t.Fatalf("Read = %v", err)
	}
	// Append after Read, both before and after the cursor has moved.
	appendOK(t, s, name, 3, []byte("late-1"))
	if !c.Next() {
		c.Close()
		t.Fatalf("cursor opened at tip 3 yielded nothing (Err %v)", c.Err())
	}
	first := storage.Record{Seq: c.Record().Seq, Payload: bytes.Clone(c.Record().Payload)}
	appendOK(t, s, name, 4, []byte("late-2"), []byte("late-3"))
	recs := append([]storage.Record{first}, drain(t, c, "cursor opened at tip 3")...)
	wantRecords(t, "cursor opened at tip 3, with appends after Read", recs, 1, ps)
	wantTip(t, s, name, 6)
	// A new cursor sees them.
	wantRecords(t, "Read(after 3) after the appends", readAll(t, s, name, 3), 4,
		[][]byte{[]byte("late-1"), []byte("late-2"), []byte("late-3")})
}

func testLedgerEmptyPayload(t *testing.T, s storage.Store) {
	const name = "sessions/empty-payload"
	appendOK(t, s, name, 0, []byte{})
	appendOK(t, s, name, 1, nil)
	appendOK(t, s, name, 2, []byte("x"), []byte{})
	wantTip(t, s, name, 4)
	wantRecords(t, "Read(after 0)", readAll(t, s, name, 0), 1, [][]byte{{}, {}, []byte("x"), {}})
}

func testLedgerMaxPayload(t *testing.T, s storage.Store) {
	const name = "sessions/max"
	big := bigPayload(storage.MaxPayload)
	appendOK(t, s, name, 0, []byte("before"))
	appendOK(t, s, name, 1, big)
	appendOK(t, s, name, 2, []byte("after"))
	wantTip(t, s, name, 3)
	recs := readAll(t, s, name, 0)
	if len(recs) != 3 {
		t.Fatalf("Read yielded %d records (seqs %s), want 3", len(recs), seqs(recs))
	}
	if got := recs[1].Payload; !bytes.Equal(got, big) {
		t.Fatalf("MaxPayload record came back as %d bytes, first difference at %d (want %d bytes)",
			len(got), firstDiff(got, big), len(big))
	}
	wantRecords(t, "Read(after 0)", recs, 1, [][]byte{[]byte("before"), big, []byte("after")})
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func testLedgerTooLarge(t *testing.T, s storage.Store) {
	const name = "sessions/too-large"
	huge := bigPayload(storage.MaxPayload + 1)
	wantTooLarge(t, "Append of MaxPayload+1 bytes", s.Append(t.Context(), name, 0, huge), name, storage.MaxPayload+1)
	wantTip(t, s, name, 0)
	ps := fill(t, s, name, 1)
	wantTooLarge(t, "Append of a batch holding one MaxPayload+1 payload",
		s.Append(t.Context(), name, 1, []byte("ok"), huge, []byte("ok too")), name, storage.MaxPayload+1)
	wantUnchanged(t, s, name, ps)
}

func testLedgerReuseBuffers(t *testing.T, s storage.Store) {
	const name = "sessions/reuse"
	buf := []byte("first")
	appendOK(t, s, name, 0, buf)
	copy(buf, "XXXXX")
	appendOK(t, s, name, 1, buf)
	copy(buf, "YYYYY")
	wantRecords(t, "Read after the caller reused its buffer", readAll(t, s, name, 0), 1,
		[][]byte{[]byte("first"), []byte("XXXXX")})
}

func testLedgerDelete(t *testing.T, s storage.Store) {
	const name = "sessions/deleted"
	fill(t, s, name, 5)
	if err := s.Delete(t.Context(), name); err != nil {
		t.Fatalf("Delete(%q) = %v", name, err)
	}
	wantTip(t, s, name, 0)
	if recs := readAll(t, s, name, 0); len(recs) != 0 {
		t.Fatalf("Read after Delete yielded %d records (seqs %s)", len(recs), seqs(recs))
	}
	if err := s.Delete(t.Context(), name); err != nil {
		t.Fatalf("second Delete(%q) = %v, want nil", name, err)
	}
	ps := numbered("reborn", 2)
	appendOK(t, s, name, 0, ps[0])
	appendOK(t, s, name, 1, ps[1])
	wantTip(t, s, name, 2)
	wantRecords(t, "Read after Delete and two appends", readAll(t, s, name, 0), 1, ps)
}

// testLedgerPrefixNames uses ledger names that are path prefixes of each
// other or look like a backend's file suffixes; they are distinct ledgers.
func testLedgerPrefixNames(t *testing.T, s storage.Store) {
	names := []string{"a", "a/b", "a/b/c", "a.log", "a.log/b"}
	for i, n := range names {
		fill(t, s, n, i+1)
	}
	for i, n := range names {
		wantTip(t, s, n, uint64(i+1))
		wantRecords(t, "Read("+n+")", readAll(t, s, n, 0), 1, numbered(n, i+1))
	}
	if err := s.Delete(t.Context(), "a"); err != nil {
		t.Fatalf("Delete(%q) = %v", "a", err)
	}
	wantTip(t, s, "a", 0)
	for i, n := range names[1:] {
		wantTip(t, s, n, uint64(i+2))
	}
}

func testLedgerConcurrent(t *testing.T, s storage.Store) {
	const name, writers, each = "sessions/concurrent", 8, 50
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			<-start
			for _, p := range numbered(fmt.Sprintf("w%d", w), each) {
				for attempt := 0; ; attempt++ {
					if attempt > 10000 {
						t.Errorf("writer %d: gave up on %q after %d conflicts", w, p, attempt)
						return
					}
					at, err := s.Tip(t.Context(), name)
					if err != nil {
						t.Errorf("writer %d: Tip = %v", w, err)
						return
					}
					err = s.Append(t.Context(), name, at, p)
					if err == nil {
						break
					}
					var ce *storage.ConflictError
					if !errors.As(err, &ce) {
						t.Errorf("writer %d: Append(expected %d) = %v (%T), want nil or *storage.ConflictError", w, at, err, err)
						return
					}
					if ce.Actual <= at {
						t.Errorf("writer %d: Append(expected %d) conflicted with Actual %d; the tip only grows", w, at, ce.Actual)
						return
					}
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}

	const total = writers * each
	wantTip(t, s, name, total)
	recs := readAll(t, s, name, 0)
	if len(recs) != total {
		t.Fatalf("ledger holds %d records, want %d", len(recs), total)
	}
	seen := make(map[string]uint64, total)
	next := make(map[string]int, writers) // per-writer order must be kept
	for i, r := range recs {
		if r.Seq != uint64(i+1) {
			t.Fatalf("record %d has Seq %d, want %d: sequences must be gap-free", i, r.Seq, i+1)
		}
		p := string(r.Payload)
		if prev, dup := seen[p]; dup {
			t.Fatalf("payload %q landed twice, at seqs %d and %d", p, prev, r.Seq)
		}
		seen[p] = r.Seq
		var w, k int
		if _, err := fmt.Sscanf(p, "w%d-%d", &w, &k); err != nil {
			t.Fatalf("seq %d holds a payload no writer sent: %q", r.Seq, p)
		}
		writer := fmt.Sprintf("w%d", w)
		if next[writer]+1 != k {
			t.Fatalf("seq %d holds %q but writer %s's previous payload was number %d: one writer's appends must land in order",
				r.Seq, p, writer, next[writer])
		}
		next[writer] = k
	}
	for w := range writers {
		for _, p := range numbered(fmt.Sprintf("w%d", w), each) {
			if _, ok := seen[string(p)]; !ok {
				t.Fatalf("payload %q was acknowledged but is missing", p)
			}
		}
	}
}
