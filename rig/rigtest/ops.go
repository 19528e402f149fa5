package rigtest

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// opsCases check the operations presenters use instead of the runtime's
// internals: BreakLease, FollowRecords, ProfileFor, SessionExists.
var opsCases = []testCase{
	{"BreakLeaseHeld", testBreakLeaseHeld},
	{"BreakLeaseNotHeld", testBreakLeaseNotHeld},
	{"BreakLeaseNoJournal", testBreakLeaseNoJournal},
	{"FollowRecords", testFollowRecords},
	{"FollowRecordsStopsOnError", testFollowRecordsStops},
	{"ProfileFor", testProfileFor},
	{"PlacedAsRecorded", testPlacedAsRecorded},
	{"SessionExists", testSessionExists},
}

// writer is a bare journal writer of session id under a lease of its own,
// as a session holder has: it appends idle events.
type writer struct {
	lease storage.Lease
	j     *journal.SessionJournal
}

// openWriter takes session id's lease through the suite's store (deaf:
// its holder does not notice a break by itself) and opens its journal.
func openWriter(t *testing.T, e *env, id uuid.UUID, deaf bool) *writer {
	t.Helper()
	name := storage.SessionName(id.String())
	e.fs.setDeaf(deaf)
	l, err := e.fs.Acquire(t.Context(), name)
	e.fs.setDeaf(false)
	if err != nil {
		t.Fatalf("Acquire(%s): %v", name, err)
	}
	t.Cleanup(func() { _ = l.Release(context.Background()) })
	j, err := journal.Open(t.Context(), e.fs, name, l)
	if err != nil {
		t.Fatalf("journal.Open(%s): %v", name, err)
	}
	return &writer{lease: l, j: j}
}

func (w *writer) append(t *testing.T, n int) {
	t.Helper()
	for range n {
		if _, err := w.j.AppendEvent(t.Context(), "", event.SessionIdle{}); err != nil {
			t.Fatalf("append: %v", err)
		}
	}
}

// A held session's lease is broken, its journal fenced at the new epoch,
// and the lease released, in that order; the old holder (which has not
// noticed) finds its next append fenced off.
func testBreakLeaseHeld(t *testing.T, e *env) {
	id := uuid.New()
	name := storage.SessionName(id.String())
	old := openWriter(t, e, id, true)
	old.append(t, 2)
	before := tip(t, e.raw, id)

	res, err := rig.BreakLease(t.Context(), e.fs, id)
	if err != nil {
		t.Fatalf("BreakLease: %v", err)
	}
	if !res.Held || res.PreviousEpoch != old.lease.Epoch() || res.Epoch != old.lease.Epoch()+1 {
		t.Fatalf("BreakLease = %+v, want held at epoch %d, broken at %d", res, old.lease.Epoch(), old.lease.Epoch()+1)
	}
	if res.PreviousHolder.PID != os.Getpid() {
		t.Errorf("PreviousHolder = %+v, want this process", res.PreviousHolder)
	}
	if !res.Fenced || res.FenceErr != nil {
		t.Fatalf("BreakLease: Fenced %v, FenceErr %v; want fenced", res.Fenced, res.FenceErr)
	}
	recs := readJournal(t, e.raw, id)
	if len(recs) != int(before)+1 || recs[len(recs)-1].Kind != journal.KindFence || recs[len(recs)-1].Epoch != res.Epoch {
		t.Fatalf("journal after the break:%s\nwant the %d records before it and a fence at epoch %d", describe(recs), before, res.Epoch)
	}

	// Released: free at the break's epoch, and the grant the break took is
	// the one released (after the fence: Release is the last operation).
	st, err := rig.ProbeSession(t.Context(), e.raw, id)
	if err != nil || st.Held || st.Epoch != res.Epoch {
		t.Fatalf("ProbeSession after the break = %+v, %v; want free at epoch %d", st, err, res.Epoch)
	}
	if g := e.fs.latest(name); g == nil || g.Epoch() != res.Epoch || g.releaseCalls() != 1 {
		t.Fatalf("the break's grant was not released once")
	}

	// The old holder's next append conflicts with the fence.
	_, err = old.j.AppendEvent(t.Context(), "", event.SessionIdle{})
	var fenced *journal.FencedError
	if !errors.As(err, &fenced) {
		t.Fatalf("the old holder's append after the break = %v, want *journal.FencedError", err)
	}
	if n := tip(t, e.raw, id); n != before+1 {
		t.Fatalf("tip after the old holder's refused append = %d, want %d", n, before+1)
	}
}

// A lease nobody holds is not broken: nothing is granted or written.
func testBreakLeaseNotHeld(t *testing.T, e *env) {
	id := uuid.New()
	w := openWriter(t, e, id, false)
	w.append(t, 1)
	if err := w.lease.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	before := tip(t, e.raw, id)
	res, err := rig.BreakLease(t.Context(), e.fs, id)
	if err != nil {
		t.Fatalf("BreakLease: %v", err)
	}
	if res.Held || res.Epoch != 0 || res.Fenced || res.FenceErr != nil || res.PreviousEpoch != w.lease.Epoch() {
		t.Fatalf("BreakLease of a free lease = %+v, want not held, nothing done, previous epoch %d", res, w.lease.Epoch())
	}
	if n := tip(t, e.raw, id); n != before {
		t.Fatalf("tip after breaking a free lease = %d, want %d", n, before)
	}
	if st, err := rig.ProbeSession(t.Context(), e.raw, id); err != nil || st.Held || st.Epoch != w.lease.Epoch() {
		t.Fatalf("ProbeSession = %+v, %v; want free at epoch %d (no grant)", st, err, w.lease.Epoch())
	}
}

// A held session without a journal is broken and released, but gets no
// fence: BreakLease writes no journal where there was none.
func testBreakLeaseNoJournal(t *testing.T, e *env) {
	id := uuid.New()
	name := storage.SessionName(id.String())
	l, err := e.fs.Acquire(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Release(context.Background()) })
	res, err := rig.BreakLease(t.Context(), e.fs, id)
	if err != nil {
		t.Fatalf("BreakLease: %v", err)
	}
	if !res.Held || res.Epoch != l.Epoch()+1 || res.Fenced || res.FenceErr != nil {
		t.Fatalf("BreakLease without a journal = %+v, want broken at epoch %d, not fenced, no fence error", res, l.Epoch()+1)
	}
	if n, err := rig.JournalTip(t.Context(), e.raw, id); err != nil || n != 0 {
		t.Fatalf("JournalTip after the break = %d, %v; want no journal", n, err)
	}
	if st, err := rig.ProbeSession(t.Context(), e.raw, id); err != nil || st.Held || st.Epoch != res.Epoch {
		t.Fatalf("ProbeSession = %+v, %v; want free at epoch %d", st, err, res.Epoch)
	}
}

// follower runs FollowRecords in a goroutine the test owns: records
// arrive on recs, the result on result. The test's cleanup cancels it and
// waits for the goroutine to end.
type follower struct {
	recs   chan rig.Record
	result chan error // buffered: FollowRecords' one result
	exited chan struct{}
	cancel context.CancelFunc
}

// startFollow follows session id after after; fn sees every record before
// it is sent on recs, and its error ends the follow.
func startFollow(t *testing.T, e *env, id uuid.UUID, after uint64, fn func(rig.Record) error) *follower {
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{recs: make(chan rig.Record, 64), result: make(chan error, 1), exited: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(f.exited)
		f.result <- rig.FollowRecords(ctx, e.raw, id, after, 5*time.Millisecond, func(r rig.Record) error {
			if err := fn(r); err != nil {
				return err
			}
			select {
			case f.recs <- r:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-f.exited })
	return f
}

// next returns the next record followed.
func (f *follower) next(t *testing.T) rig.Record {
	t.Helper()
	select {
	case r := <-f.recs:
		return r
	case err := <-f.result:
		// A record delivered before FollowRecords returned comes first:
		// select picks at random among the ready cases.
		select {
		case r := <-f.recs:
			f.result <- err // for wait
			return r
		default:
		}
		t.Fatalf("FollowRecords returned %v while records were expected", err)
	case <-time.After(WaitTimeout):
		t.Fatalf("timed out waiting for a followed record")
	}
	return rig.Record{}
}

// wait returns FollowRecords' result.
func (f *follower) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-f.result:
		return err
	case <-time.After(WaitTimeout):
		t.Fatalf("FollowRecords did not return")
		return nil
	}
}

// FollowRecords delivers the records after "after" that are there, then
// each one appended later, in order and once; cancelling its context ends
// it with nil.
func testFollowRecords(t *testing.T, e *env) {
	id := uuid.New()
	w := openWriter(t, e, id, false)
	w.append(t, 2) // fence 1, events 2 and 3
	f := startFollow(t, e, id, 1, func(rig.Record) error { return nil })
	var seqs []uint64
	for len(seqs) < 2 {
		seqs = append(seqs, f.next(t).Seq)
	}
	w.append(t, 1)
	seqs = append(seqs, f.next(t).Seq)
	w.append(t, 3)
	for len(seqs) < 6 {
		seqs = append(seqs, f.next(t).Seq)
	}
	if want := []uint64{2, 3, 4, 5, 6, 7}; !slices.Equal(seqs, want) {
		t.Fatalf("followed records %v, want %v", seqs, want)
	}
	select {
	case r := <-f.recs:
		t.Fatalf("record %d followed after the last one appended", r.Seq)
	case <-time.After(50 * time.Millisecond): // a few polls
	}
	f.cancel()
	if err := f.wait(t); err != nil {
		t.Fatalf("FollowRecords after its context was cancelled = %v, want nil", err)
	}
}

// An error of fn ends FollowRecords with that error; nothing after the
// record it refused is delivered.
func testFollowRecordsStops(t *testing.T, e *env) {
	id := uuid.New()
	w := openWriter(t, e, id, false)
	w.append(t, 1)
	errStop := errors.New("rigtest: stop here")
	f := startFollow(t, e, id, 0, func(r rig.Record) error {
		if r.Seq == 4 {
			return errStop
		}
		return nil
	})
	if s1, s2 := f.next(t).Seq, f.next(t).Seq; s1 != 1 || s2 != 2 {
		t.Fatalf("followed %d, %d; want 1, 2", s1, s2)
	}
	w.append(t, 3)
	if s := f.next(t).Seq; s != 3 {
		t.Fatalf("followed %d, want 3", s)
	}
	if err := f.wait(t); !errors.Is(err, errStop) {
		t.Fatalf("FollowRecords after fn failed = %v, want fn's error", err)
	}
	if len(f.recs) != 0 {
		t.Fatalf("records were delivered after the one fn refused")
	}
}

// ProfileFor finds the profile a session recorded (in its catalog entry,
// else in its SessionStarted), says when it is gone, and gives the default
// profile when nothing was recorded.
func testProfileFor(t *testing.T, e *env) {
	s := e.newSession(e.define(rig.WithProfile(gateProfile())))
	id := s.SessionID()
	shutdown(t, s)
	recorded := gateProfile().Name
	marked := gateProfile()
	marked.GatePolicy = []string{"marker " + newMarker()}
	var asked []string
	lookup := func(name string) (rig.Profile, bool) {
		asked = append(asked, name)
		return marked, name == recorded
	}
	known := []string{"default", "other"}
	check := func(what string) {
		t.Helper()
		p, err := rig.ProfileFor(t.Context(), e.raw, id, lookup, known)
		if err != nil {
			t.Fatalf("%s: ProfileFor = %v", what, err)
		}
		if !slices.Equal(p.GatePolicy, marked.GatePolicy) {
			t.Fatalf("%s: ProfileFor = %+v, want what lookup gave for %q", what, p, recorded)
		}
	}
	check("from the catalog entry")
	if err := e.raw.DeleteKey(t.Context(), storage.CatalogKey(id.String()), storage.AnyRevision); err != nil {
		t.Fatal(err)
	}
	check("from SessionStarted")
	if !slices.Equal(asked, []string{recorded, recorded}) {
		t.Fatalf("lookup asked for %q, want the recorded %q twice", asked, recorded)
	}

	_, err := rig.ProfileFor(t.Context(), e.raw, id, func(string) (rig.Profile, bool) { return rig.Profile{}, false }, known)
	gone := as[*rig.ProfileGoneError](t, err, "ProfileFor with the profile gone")
	if gone.Session != id.String() || gone.Profile != recorded || !slices.Equal(gone.Known, known) {
		t.Fatalf("ProfileGoneError = %+v, want session %s, profile %q, known %q", gone, id, recorded, known)
	}

	asked = nil
	p, err := rig.ProfileFor(t.Context(), e.raw, uuid.New(), lookup, known)
	if err != nil || p.Name != rig.DefaultProfile().Name || p.Engine != rig.DefaultProfile().Engine || len(asked) != 0 {
		t.Fatalf("ProfileFor of a session that recorded nothing = %+v, %v (lookup asked %q); want the default profile, no lookup", p, err, asked)
	}
}

// A session created in a directory of its choosing under a profile that
// pins no placement (as `looprig new` in a project directory does) is
// restored there by ProfileFor, from its catalog entry or else from its
// SessionStarted, with no drift; a profile that pins another placement
// is drift, as before.
func testPlacedAsRecorded(t *testing.T, e *env) {
	root := canonical(t, t.TempDir())
	unpinned := rig.DefaultProfile()
	created := unpinned
	created.Placement, created.Root = rig.PlacementExclusive, root
	s := e.newSession(e.define(rig.WithProfile(created)))
	id := s.SessionID()
	runTurn(t, s, "echo here > here.txt")
	shutdown(t, s)

	lookup := func(string) (rig.Profile, bool) { return unpinned, true }
	placed := func(what string) rig.Profile {
		t.Helper()
		p, err := rig.ProfileFor(t.Context(), e.raw, id, lookup, nil)
		if err != nil || p.Placement != rig.PlacementExclusive || p.Root != root {
			t.Fatalf("%s: ProfileFor = %+v, %v; want exclusive in %s", what, p, err, root)
		}
		return p
	}
	p := placed("from the catalog entry")
	s = e.restore(e.define(rig.WithProfile(p)), id)
	if info := s.Restored(); len(info.Adopted) != 0 || s.Workspace() != root {
		t.Fatalf("restored with drift %v in %s; want none, in %s", info.Adopted, s.Workspace(), root)
	}
	shutdown(t, s)
	if err := e.raw.DeleteKey(t.Context(), storage.CatalogKey(id.String()), storage.AnyRevision); err != nil {
		t.Fatal(err)
	}
	placed("from SessionStarted")

	pinned := unpinned
	pinned.PlacementPinned = true
	if q := rig.AsRecorded(t.Context(), e.raw, id, pinned); q.Placement != rig.PlacementSession || q.Root != "" {
		t.Fatalf("a pinned profile was placed as recorded: %+v", q)
	}
	r := e.define(rig.WithProfile(pinned))
	if s, err := r.RestoreSession(t.Context(), id); err == nil {
		shutdownAtCleanup(t, s)
		t.Fatal("restore under a profile that pins session placement succeeded; want drift refused")
	} else {
		as[*rig.RestoreRejectedError](t, err, "restore under a profile that pins session placement")
	}
}

// SessionExists and JournalTip: a session exists by its journal or by its
// catalog entry alone; an unknown id does not.
func testSessionExists(t *testing.T, e *env) {
	ctx := t.Context()
	exists := func(id uuid.UUID) (bool, uint64) {
		t.Helper()
		ok, n, err := rig.SessionExists(ctx, e.raw, id)
		if err != nil {
			t.Fatalf("SessionExists(%s): %v", id, err)
		}
		return ok, n
	}
	if ok, n := exists(uuid.New()); ok || n != 0 {
		t.Fatalf("an unknown id exists (tip %d)", n)
	}
	s := e.newSession(e.define())
	id := s.SessionID()
	shutdown(t, s)
	want := tip(t, e.raw, id)
	if ok, n := exists(id); !ok || n != want || want == 0 {
		t.Fatalf("SessionExists = %v, tip %d; want true, tip %d", ok, n, want)
	}
	if n, err := rig.JournalTip(ctx, e.raw, id); err != nil || n != want {
		t.Fatalf("JournalTip = %d, %v; want %d", n, err, want)
	}
	if err := e.raw.Delete(ctx, storage.SessionName(id.String())); err != nil {
		t.Fatal(err)
	}
	if ok, n := exists(id); !ok || n != 0 {
		t.Fatalf("a session with only its catalog entry: SessionExists = %v, tip %d; want true, 0", ok, n)
	}
	if err := e.raw.DeleteKey(ctx, storage.CatalogKey(id.String()), storage.AnyRevision); err != nil {
		t.Fatal(err)
	}
	if ok, _ := exists(id); ok {
		t.Fatalf("a session with neither journal nor catalog entry exists")
	}
}
