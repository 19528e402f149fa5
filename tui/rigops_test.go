package tui

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

// The TUI reaches the runtime through rig's operations (BreakLease,
// ProfileFor, ReadEvents, JournalTip, ProbeSession): these tests pin what
// that changed.

// raceStore is a memstore where a third party takes a session's lease
// the moment a break's grant is released, before the TUI's restore can.
type raceStore struct {
	*memstore.Store
	mu    sync.Mutex
	third storage.Lease
}

func (s *raceStore) Break(ctx context.Context, name string) (storage.Lease, error) {
	l, err := s.Store.Break(ctx, name)
	if err != nil {
		return nil, err
	}
	return &racedLease{Lease: l, s: s, name: name}, nil
}

type racedLease struct {
	storage.Lease
	s    *raceStore
	name string
}

func (l *racedLease) Release(ctx context.Context) error {
	err := l.Lease.Release(ctx)
	third, aerr := l.s.Store.Acquire(ctx, l.name)
	l.s.mu.Lock()
	l.s.third = third
	l.s.mu.Unlock()
	if aerr != nil {
		return errors.Join(err, aerr)
	}
	return err
}

// newSessionWith creates a session under profile p in st and returns it
// (the caller shuts it down, or lets the flow's cleanup end it).
func newSessionWith(t *testing.T, st storage.Store, opts Options, p rig.Profile, title string) *rig.Session {
	t.Helper()
	r := testRig(t, st, opts, rig.WithProfile(p))
	s, err := r.NewSession(context.Background(), rig.WithTitle(title))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFlowBreakThenRestoreLost: B breaks the lease and fences the journal
// before it releases it; a third process takes the lease in the window
// before the restore. The old holder is cut off all the same (the fence),
// and the TUI says the break happened and the restore failed, and why.
func TestFlowBreakThenRestoreLost(t *testing.T) {
	mem := memstore.New()
	st := &raceStore{Store: mem}
	opts := flowOptions(t, mem)
	opts.Store = st
	other := newSessionWith(t, mem, opts, rig.DefaultProfile(), "held elsewhere")
	defer other.Shutdown(context.Background())
	id := other.SessionID().String()
	short := rig.ShortID(id)

	f := startFlow(t, mem, opts)
	f.waitView("held elsewhere")
	f.typeText("B")
	f.waitView("Break lease", "type "+short)
	f.typeText(short)
	f.key("enter")
	f.waitView("restore of "+short+" (after B broke its lease at epoch 2) failed", "lease_failed", "at epoch 3")
	f.inspect(func(m Model) {
		v := m.sessions[id]
		if v.attached() || v.failed == nil || v.failed.broke == nil || !v.failed.broke.Fenced || v.failed.broke.Epoch != 2 {
			t.Errorf("after the lost restore: attached %v, failure %+v", v.attached(), v.failed)
		}
	})
	st.mu.Lock()
	third := st.third
	st.mu.Unlock()
	if third == nil || third.Epoch() != 3 {
		t.Fatalf("the third party's grant: %v", third)
	}
	defer third.Release(context.Background())
	// The journal ends with the break's fence: the restore wrote nothing,
	// and the old holder cannot append after it.
	recs := records(t, mem, id)
	if last := recs[len(recs)-1]; last.Kind != journal.KindFence || last.Epoch != 2 {
		t.Fatalf("journal after the break and the lost restore:%s\nwant it to end with the break's fence at epoch 2", describeRecords(recs))
	}
	select {
	case <-other.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("the old holder did not notice the break")
	}
	f.quit()
}

// TestFlowRestoreProfileGone: a session whose profile is no longer
// configured is not restored under the default profile: r shows the
// *rig.ProfileGoneError (the profile, the known ones, what to do) and
// writes nothing; B on such a session held elsewhere breaks nothing.
func TestFlowRestoreProfileGone(t *testing.T) {
	st := memstore.New()
	opts := flowOptions(t, st)
	gated := opts.Profiles["gated"]
	idle := newSessionWith(t, st, opts, gated, "gated idle")
	if err := idle.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	held := newSessionWith(t, st, opts, gated, "gated held")
	defer held.Shutdown(context.Background())
	idleID, heldID := idle.SessionID().String(), held.SessionID().String()
	idleTip := tipOf(t, st, idleID)
	heldTip := tipOf(t, st, heldID)
	delete(opts.Profiles, "gated")

	f := startFlow(t, st, opts)
	f.waitView("gated idle", "gated held")
	f.inspect(func(m Model) { m.list.selectID(idleID, m.listSpace()) })
	f.typeText("r")
	f.waitView("unknown_profile", `restore of `+rig.ShortID(idleID)+` failed: the profile it was created with, "gated", is not configured any more`,
		`define "gated" in config.toml again (known: default, demo)`)
	f.inspect(func(m Model) {
		if v := m.sessions[idleID]; v.attached() {
			t.Error("the session was restored under another profile")
		}
	})
	if n := tipOf(t, st, idleID); n != idleTip {
		t.Errorf("the refused restore wrote to the journal: tip %d → %d", idleTip, n)
	}

	f.inspect(func(m Model) { m.list.selectID(heldID, m.listSpace()) })
	f.typeText("B")
	f.waitView("Break lease", "type "+rig.ShortID(heldID))
	f.typeText(rig.ShortID(heldID))
	f.key("enter")
	f.waitView("break of "+rig.ShortID(heldID)+" failed", "unknown_profile")
	select {
	case <-held.Done():
		t.Fatalf("B broke the lease of a session it cannot restore: %v", held.Err())
	default:
	}
	if ls, err := rig.ProbeSession(context.Background(), st, held.SessionID()); err != nil || !ls.Held || ls.Epoch != held.Epoch() {
		t.Errorf("the lease after the refused break: %+v, %v; want held at epoch %d", ls, err, held.Epoch())
	}
	if n := tipOf(t, st, heldID); n != heldTip {
		t.Errorf("the refused break wrote to the journal: tip %d → %d", heldTip, n)
	}
	f.quit()
}

func tipOf(t *testing.T, st storage.Store, id string) uint64 {
	t.Helper()
	n, err := rig.JournalTip(context.Background(), st, uuid.MustParse(id))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// stallStore is a memstore whose journal cursors block, while stall is
// set, until the context they were opened with ends.
type stallStore struct {
	*memstore.Store
	mu    sync.Mutex
	stall bool
}

func (s *stallStore) setStall(b bool) {
	s.mu.Lock()
	s.stall = b
	s.mu.Unlock()
}

func (s *stallStore) Read(ctx context.Context, name string, after uint64) (storage.Cursor, error) {
	c, err := s.Store.Read(ctx, name, after)
	if err != nil {
		return nil, err
	}
	return &stallCursor{Cursor: c, s: s, ctx: ctx}, nil
}

type stallCursor struct {
	storage.Cursor
	s   *stallStore
	ctx context.Context
	err error
}

func (c *stallCursor) Next() bool {
	c.s.mu.Lock()
	stall := c.s.stall
	c.s.mu.Unlock()
	if stall {
		<-c.ctx.Done()
		c.err = c.ctx.Err()
		return false
	}
	return c.Cursor.Next()
}

func (c *stallCursor) Err() error {
	if c.err != nil {
		return c.err
	}
	return c.Cursor.Err()
}

// runCmd runs a command's function, failing when it does not return in
// time.
func runCmd(t *testing.T, fn func() any, within time.Duration) any {
	t.Helper()
	done := make(chan any, 1)
	go func() { done <- fn() }()
	select {
	case msg := <-done:
		return msg
	case <-time.After(within):
		t.Fatalf("the command did not return within %s", within)
		return nil
	}
}

// TestHistoryReadBounded: every chunk of a journal read is bounded by the
// read timeout (a store that hangs does not hang the read until quit),
// and the time between chunks, while Update folds one, does not count.
func TestHistoryReadBounded(t *testing.T) {
	mem := memstore.New()
	st := &stallStore{Store: mem}
	id := uuid.New()
	name := storage.SessionName(id.String())
	l, err := mem.Acquire(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())
	j, err := journal.Open(t.Context(), mem, name, l)
	if err != nil {
		t.Fatal(err)
	}
	const events = historyChunk + 100
	for range events {
		if _, err := j.AppendEvent(t.Context(), "", event.SessionIdle{}); err != nil {
			t.Fatal(err)
		}
	}
	m := newModel(Options{Store: st, Now: fixedClock}, asciiRenderer())
	defer m.h.cancel()
	m.h.readTimeout = 500 * time.Millisecond

	m.h.chunk = 500
	follower := func() *rig.Follower {
		f, err := rig.Follow(t.Context(), rig.JournalFeed(st, id, tailEvery), 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Limit(m.h.chunk)
		return f
	}
	read := func(f *rig.Follower) journalMsg {
		t.Helper()
		msg, _ := runCmd(t, func() any { return m.h.journalCmd(id.String(), 0, f, false)() }, 5*time.Second).(journalMsg)
		return msg
	}

	// The first chunk, then a pause longer than the timeout, then the
	// rest, each bounded by the chunk, up to the tip.
	f := follower()
	first := read(f)
	if first.err != nil || first.atTip || len(first.envs) == 0 || len(first.envs) > m.h.chunk {
		t.Fatalf("first chunk: %d events, at the tip %v, err %v", len(first.envs), first.atTip, first.err)
	}
	time.Sleep(2 * m.h.readTimeout)
	got := len(first.envs)
	for msg := first; !msg.atTip; {
		msg = read(f)
		if msg.err != nil {
			t.Fatalf("a later chunk after a pause: %v", msg.err)
		}
		if len(msg.envs) > m.h.chunk {
			t.Fatalf("a chunk of %d events, want at most %d", len(msg.envs), m.h.chunk)
		}
		got += len(msg.envs)
	}
	if got != events {
		t.Fatalf("read %d events, want %d", got, events)
	}

	// A store that hangs: the read ends after the timeout, with an error
	// that says so.
	st.setStall(true)
	start := time.Now()
	hung := read(follower())
	if !errors.Is(hung.err, context.DeadlineExceeded) || !strings.Contains(hung.err.Error(), "took longer than 500ms") {
		t.Fatalf("a hung read: err %v", hung.err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a hung read took %s to end", d)
	}
}

// TestDiagnose: the errors strip words rig/explain's classification; what
// the goldens do not show.
func TestDiagnose(t *testing.T) {
	sid := uuid.MustParse(fakeID(4))
	held := &storage.LeaseHeldError{Name: "workspace-roots/5f0c", HolderEpoch: 9, Holder: storage.Holder{PID: 4242, Host: "devbox"}}
	cases := []struct {
		name                   string
		err                    error
		kind, headline, remedy string
	}{
		{"create into a busy root", &rig.LifecycleError{Stage: rig.StagePlacement, Cause: &rig.WorkspaceRootBusyError{Root: "/srv/p", HolderEpoch: 9, Cause: held}},
			"create_failed", "workspace root /srv/p is held by another session (pid 4242@devbox) at epoch 9", "another session works in /srv/p: shut it down first"},
		{"create with a refused seed", &rig.LifecycleError{Stage: rig.StageSeed, Cause: &rig.SeedError{Path: "/tmp/seed", Reason: "a fifo"}},
			"create_failed", "new session failed at stage seed", "the seed directory is refused"},
		{"an unreadable epoch file", &rig.RestoreError{Kind: rig.RestoreLeaseFailed, Session: sid,
			Cause: &storage.CorruptError{Name: "sessions/x", Path: "/s/leases/sessions/x.epoch", Offset: -1, Reason: "bad json", EpochFile: true}},
			"lease_failed", "the lease epoch file /s/leases/sessions/x.epoch is unreadable", "looprig never resets a lease epoch on its own"},
		{"a session lease held (delete)", &storage.LeaseHeldError{Name: storage.SessionName(fakeID(4)), HolderEpoch: 7, Holder: storage.Holder{PID: 5150, Host: "devbox"}},
			"lease_held", "the lease is held by pid 5150@devbox at epoch 7", "B breaks the lease"},
		{"unclassified", errors.New("disk on fire"), "ERROR", "disk on fire", "the log file has the details"},
		{"a host of another protocol", &host.ProtocolMismatchError{Client: 1, Server: 2, PID: 4242, Hint: "stop the old host with 'looprig stop a0000004' (or kill 4242), then attach again"},
			"protocol_mismatch", "its host (pid 4242) speaks protocol 2, this looprig speaks 1", "looprig stop a0000004"},
		{"a host that died starting", &host.HostExitedError{PID: 4242, Status: "exit status 2"},
			"host_exited", "the host process (pid 4242) ended before it served the session: exit status 2", "its log"},
		{"a host's own classification", remoteErr(&rig.RestoreError{Kind: rig.RestoreLeaseFailed, Session: sid,
			Cause: &storage.LeaseHeldError{Name: storage.SessionName(fakeID(4)), HolderEpoch: 7, Holder: storage.Holder{PID: 5150, Host: "devbox"}}}),
			"lease_failed", "the lease is held by pid 5150@devbox at epoch 7", "B breaks the lease"},
	}
	for _, c := range cases {
		d := diagnose(c.err)
		if d.kind != c.kind || d.headline != c.headline || !strings.Contains(d.remedy, c.remedy) {
			t.Errorf("%s: kind %q, headline %q, remedy %q; want %q, %q, %q", c.name, d.kind, d.headline, d.remedy, c.kind, c.headline, c.remedy)
		}
	}
}
