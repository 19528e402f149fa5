// Package storetest is the conformance suite of the rig/storage contracts,
// in the style of testing/fstest: every backend (memstore, fsstore, ...)
// runs it from its own tests with
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storage.Store { return newStoreFor(t) })
//	}
//
// Run checks leases (exclusivity, fencing epochs, release, loss causes,
// probes one by one and many at once, forced takeovers), ledgers
// (compare-and-swap appends, contiguous sequences, bounded cursors, payload
// limits, concurrent appenders), KV (revisions, conflicts, prefix listing,
// one level of children), the name grammar on every method, done contexts,
// LocalDir (stable; an existing absolute directory when not ""), change
// stamps and durable stamps (every KV and lease change moves them) and blobs (content
// addressed, streamed, verified on read, renewed when put again or
// touched, deleted in bulk by age, read by range).
//
// Every failure is classified with errors.As or errors.Is, never by the text
// of a message.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"looprig/rig/storage"
)

// LostTimeout bounds how long the suite waits for a lease's Lost channel to
// close after a forced takeover. Backends with a periodic watchdog must
// notice within it; give the store under test a short watchdog.
const LostTimeout = 5 * time.Second

// Run runs the conformance suite against the stores made by newStore, one
// named subtest per rule. newStore is called once per subtest and must
// return a fresh, empty store; it may use t.TempDir and t.Cleanup.
func Run(t *testing.T, newStore func(t *testing.T) storage.Store) {
	t.Helper()
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, c := range g.cases {
				t.Run(c.name, func(t *testing.T) {
					c.fn(t, newStore(t))
				})
			}
		})
	}
}

type testCase struct {
	name string
	fn   func(t *testing.T, s storage.Store)
}

var groups = []struct {
	name  string
	cases []testCase
}{
	{"Lease", leaseCases},
	{"Ledger", ledgerCases},
	{"KV", kvCases},
	{"Names", nameCases},
	{"Context", contextCases},
	{"LocalDir", localDirCases},
	{"ChangeStamp", changeCases},
	{"Blob", blobCases},
}

// --- shared helpers -------------------------------------------------------

// releaseAtCleanup makes sure l is released when the test ends, so backends
// with watchdogs stop them. Release is idempotent, so tests may release too.
func releaseAtCleanup(t *testing.T, l storage.Lease) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = l.Release(ctx)
	})
}

func acquire(t *testing.T, s storage.Leaser, name string) storage.Lease {
	t.Helper()
	l, err := s.Acquire(t.Context(), name)
	if err != nil {
		t.Fatalf("Acquire(%q) = %v, want a grant", name, err)
	}
	if l == nil {
		t.Fatalf("Acquire(%q) returned a nil lease and no error", name)
	}
	releaseAtCleanup(t, l)
	return l
}

func release(t *testing.T, l storage.Lease, what string) {
	t.Helper()
	if err := l.Release(t.Context()); err != nil {
		t.Fatalf("Release of %s (epoch %d) = %v, want nil", what, l.Epoch(), err)
	}
}

// wantHeld checks that Acquire(name) is refused with *LeaseHeldError naming
// holderEpoch.
func wantHeld(t *testing.T, s storage.Leaser, name string, holderEpoch uint64) {
	t.Helper()
	l, err := s.Acquire(t.Context(), name)
	if err == nil {
		releaseAtCleanup(t, l)
		t.Fatalf("Acquire(%q) granted epoch %d while epoch %d should hold it", name, l.Epoch(), holderEpoch)
	}
	var held *storage.LeaseHeldError
	if !errors.As(err, &held) {
		t.Fatalf("Acquire(%q) of a held name = %v (%T), want *storage.LeaseHeldError", name, err, err)
	}
	if held.Name != name || held.HolderEpoch != holderEpoch {
		t.Fatalf("Acquire(%q) refused with Name %q HolderEpoch %d, want Name %q HolderEpoch %d",
			name, held.Name, held.HolderEpoch, name, holderEpoch)
	}
}

func isLost(l storage.Lease) bool {
	select {
	case <-l.Lost():
		return true
	default:
		return false
	}
}

func waitLost(t *testing.T, l storage.Lease, what string) {
	t.Helper()
	timer := time.NewTimer(LostTimeout)
	defer timer.Stop()
	select {
	case <-l.Lost():
	case <-timer.C:
		t.Fatalf("Lost() of %s (epoch %d) did not close within %v", what, l.Epoch(), LostTimeout)
	}
}

func wantLostCause(t *testing.T, name string, l storage.Lease, what string) *storage.LeaseLostError {
	t.Helper()
	err := storage.LostCause(name, l)
	var lost *storage.LeaseLostError
	if !errors.As(err, &lost) {
		t.Fatalf("LostCause of %s = %v (%T), want *storage.LeaseLostError", what, err, err)
	}
	if lost.Name != name || lost.Epoch != l.Epoch() {
		t.Fatalf("LostCause of %s has Name %q Epoch %d, want Name %q Epoch %d",
			what, lost.Name, lost.Epoch, name, l.Epoch())
	}
	return lost
}

func appendOK(t *testing.T, s storage.Ledger, name string, expected uint64, payloads ...[]byte) {
	t.Helper()
	if err := s.Append(t.Context(), name, expected, payloads...); err != nil {
		t.Fatalf("Append(%q, expected %d, %d payloads) = %v, want nil", name, expected, len(payloads), err)
	}
}

func tip(t *testing.T, s storage.Ledger, name string) uint64 {
	t.Helper()
	n, err := s.Tip(t.Context(), name)
	if err != nil {
		t.Fatalf("Tip(%q) = %v", name, err)
	}
	return n
}

func wantTip(t *testing.T, s storage.Ledger, name string, want uint64) {
	t.Helper()
	if got := tip(t, s, name); got != want {
		t.Fatalf("Tip(%q) = %d, want %d", name, got, want)
	}
}

// readAll reads every record after after, copying payloads, and checks Err
// and Close.
func readAll(t *testing.T, s storage.Ledger, name string, after uint64) []storage.Record {
	t.Helper()
	c, err := s.Read(t.Context(), name, after)
	if err != nil {
		t.Fatalf("Read(%q, after %d) = %v", name, after, err)
	}
	return drain(t, c, fmt.Sprintf("Read(%q, after %d)", name, after))
}

func drain(t *testing.T, c storage.Cursor, what string) []storage.Record {
	t.Helper()
	var recs []storage.Record
	for c.Next() {
		r := c.Record()
		recs = append(recs, storage.Record{Seq: r.Seq, Payload: bytes.Clone(r.Payload)})
	}
	if err := c.Err(); err != nil {
		t.Fatalf("%s: cursor Err() = %v", what, err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("%s: cursor Close() = %v", what, err)
	}
	return recs
}

// wantRecords checks that recs hold exactly want, at seqs first, first+1, ...
func wantRecords(t *testing.T, what string, recs []storage.Record, first uint64, want [][]byte) {
	t.Helper()
	if len(recs) != len(want) {
		t.Fatalf("%s yielded %d records (seqs %s), want %d starting at seq %d",
			what, len(recs), seqs(recs), len(want), first)
	}
	for i, r := range recs {
		if r.Seq != first+uint64(i) {
			t.Fatalf("%s: record %d has Seq %d, want %d (seqs %s)", what, i, r.Seq, first+uint64(i), seqs(recs))
		}
		if !bytes.Equal(r.Payload, want[i]) {
			t.Fatalf("%s: record seq %d payload %s, want %s", what, r.Seq, show(r.Payload), show(want[i]))
		}
	}
}

func seqs(recs []storage.Record) string {
	if len(recs) == 0 {
		return "[]"
	}
	if len(recs) > 12 {
		return fmt.Sprintf("[%d %d ... %d]", recs[0].Seq, recs[1].Seq, recs[len(recs)-1].Seq)
	}
	out := make([]uint64, len(recs))
	for i, r := range recs {
		out[i] = r.Seq
	}
	return fmt.Sprint(out)
}

func show(p []byte) string {
	if len(p) > 40 {
		return fmt.Sprintf("%q... (%d bytes)", p[:40], len(p))
	}
	return fmt.Sprintf("%q", p)
}

func wantConflict(t *testing.T, what string, err error, name string, expected, actual uint64) {
	t.Helper()
	var ce *storage.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("%s = %v (%T), want *storage.ConflictError", what, err, err)
	}
	if ce.Name != name || ce.Expected != expected || ce.Actual != actual {
		t.Fatalf("%s: ConflictError{Name %q, Expected %d, Actual %d}, want {Name %q, Expected %d, Actual %d}",
			what, ce.Name, ce.Expected, ce.Actual, name, expected, actual)
	}
}

func wantTooLarge(t *testing.T, what string, err error, name string, size int) {
	t.Helper()
	var tl *storage.PayloadTooLargeError
	if !errors.As(err, &tl) {
		t.Fatalf("%s = %v (%T), want *storage.PayloadTooLargeError", what, err, err)
	}
	if tl.Name != name || tl.Size != size || tl.Max != storage.MaxPayload {
		t.Fatalf("%s: PayloadTooLargeError{Name %q, Size %d, Max %d}, want {Name %q, Size %d, Max %d}",
			what, tl.Name, tl.Size, tl.Max, name, size, storage.MaxPayload)
	}
}

// numbered returns n distinct payloads tagged with tag.
func numbered(tag string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "%s-%04d", tag, i+1)
	}
	return out
}

// bigPayload returns n position-dependent bytes, so shifted, truncated or
// reordered data is caught.
func bigPayload(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*31 + i>>8)
	}
	return p
}
