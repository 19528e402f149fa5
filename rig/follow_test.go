package rig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

// chunkEngine prints, for the input "SEED N", N chunks of random sizes
// and text (multi-byte runes, escape sequences, newlines), pausing now and
// then, as a chatty program does.
type chunkEngine struct{ pause time.Duration }

func (chunkEngine) Name() string { return "chunks" }

func (e chunkEngine) Run(ctx context.Context, turn engine.Turn, sink engine.Sink) (engine.Result, error) {
	var seed uint64
	var n int
	if _, err := fmt.Sscanf(turn.Input, "%d %d", &seed, &n); err != nil {
		return engine.Result{}, err
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	pieces := []string{"line ", "ünïcødé ", "😀", "\x1b[31mred\x1b[0m", "\r\n", "\n", "x", "0123456789"}
	for i := range n {
		if err := ctx.Err(); err != nil {
			return engine.Result{}, err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d:", i)
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		sink.Output(engine.Stdout, b.String())
		if e.pause > 0 && rng.IntN(16) == 0 {
			time.Sleep(e.pause)
		}
	}
	return engine.Result{ExitCode: 0}, nil
}

// followRig is a rig on memstore running chunkEngine, checkpointing often.
func followRig(t *testing.T, pause time.Duration) (*Rig, storage.Store) {
	t.Helper()
	st := memstore.New()
	r, err := Define(WithStore(st), WithWorkspaces(t.TempDir()),
		WithProfile(Profile{Name: "chunks", Engine: "chunks", Placement: PlacementSession}),
		WithEngine("chunks", func(Profile) (engine.Engine, error) { return chunkEngine{pause: pause}, nil }),
		WithCheckpoints(5*time.Millisecond, 512))
	if err != nil {
		t.Fatal(err)
	}
	return r, st
}

// journalOutput returns each turn's output as its checkpoints journal it,
// and the durable events, from session id's journal.
func journalOutput(t *testing.T, st storage.Store, s *Session) (map[string][]byte, []event.Envelope) {
	t.Helper()
	rp, err := journal.NewEventReplayer(context.Background(), st, s.name, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rp.Close()
	out := map[string][]byte{}
	var evs []event.Envelope
	for rp.Next() {
		env := rp.Envelope()
		evs = append(evs, env)
		if o, ok := env.Event.(event.TurnOutput); ok {
			if int64(len(out[o.TurnID])) != o.Offset {
				t.Fatalf("checkpoint of %s at offset %d after %d bytes", o.TurnID, o.Offset, len(out[o.TurnID]))
			}
			out[o.TurnID] = append(out[o.TurnID], o.Text...)
		}
	}
	if err := rp.Err(); err != nil {
		t.Fatal(err)
	}
	return out, evs
}

// lossyFeed wraps a Feed: its readings fall behind at random (after a
// few reads) and drop live events at random, as a slow reader's would.
type lossyFeed struct {
	Feed
	rng   *rand.Rand
	mu    sync.Mutex
	opens int
}

func (f *lossyFeed) OpenFeed(ctx context.Context, after uint64) (FeedReader, error) {
	r, err := f.Feed.OpenFeed(ctx, after)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.opens++
	f.mu.Unlock()
	return &lossyReader{FeedReader: r, f: f, left: f.rng.IntN(8)}, nil
}

type lossyReader struct {
	FeedReader
	f    *lossyFeed
	left int
}

func (r *lossyReader) Next(ctx context.Context) ([]event.Envelope, error) {
	if r.left == 0 && r.f.rng.IntN(2) == 0 {
		return nil, &FellBehindError{Err: errors.New("injected loss")}
	}
	r.left--
	batch, err := r.FeedReader.Next(ctx)
	kept := batch[:0]
	for _, env := range batch {
		if env.Seq != 0 || r.f.rng.IntN(4) != 0 {
			kept = append(kept, env)
		}
	}
	if err == nil && len(kept) == 0 {
		return r.Next(ctx) // a reader returns events or an error
	}
	return kept, err
}

// follower reads one session until the turn ends, folding what it gets.
type follower struct {
	f       *Follower
	evs     []event.Envelope
	tr      Transcript
	out     map[string][]byte
	first   map[string]int64
	started map[string]bool
}

func (r *follower) run(t *testing.T, ctx context.Context, until string) {
	t.Helper()
	r.out, r.first, r.started = map[string][]byte{}, map[string]int64{}, map[string]bool{}
	for {
		batch, err := r.f.Next(ctx)
		if err != nil {
			t.Fatalf("follow: %v (after seq %d)", err, r.f.LastSeq())
		}
		if lim := r.f.limit; lim > 0 && len(batch) > lim {
			t.Fatalf("a batch of %d events, the limit is %d", len(batch), lim)
		}
		for _, env := range batch {
			if env.Seq != 0 && env.Seq > r.f.LastSeq() {
				t.Fatalf("LastSeq %d, but seq %d was returned", r.f.LastSeq(), env.Seq)
			}
			r.evs = append(r.evs, env)
			if ts, ok := env.Event.(event.TurnStarted); ok {
				r.started[ts.TurnID] = true
			}
			if c, ok := r.tr.Apply(env.Event); ok {
				if _, seen := r.out[c.TurnID]; !seen {
					r.first[c.TurnID] = c.Offset
				}
				r.out[c.TurnID] = append(r.out[c.TurnID], c.Text...)
			}
			if d, ok := env.Event.(event.TurnDone); ok && d.TurnID == until {
				return
			}
		}
	}
}

// check: every durable event after the start once, in order, as the
// journal has them; each turn's output as the journal has it, whole for
// the turns seen to start.
func (r *follower) check(t *testing.T, name string, after uint64, journaled []event.Envelope, outs map[string][]byte) {
	t.Helper()
	var want, got []uint64
	last := r.evs[len(r.evs)-1]
	for _, env := range journaled {
		if env.Seq > after && env.Seq <= last.Seq {
			want = append(want, env.Seq)
		}
	}
	for _, env := range r.evs {
		if env.Seq != 0 {
			got = append(got, env.Seq)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: durable sequences\n got %v\nwant %v", name, got, want)
	}
	for id, whole := range outs {
		o, seen := r.out[id]
		if !seen {
			if r.started[id] && len(whole) > 0 {
				t.Fatalf("%s: turn %s: no output, want %d bytes", name, id, len(whole))
			}
			continue
		}
		if r.started[id] && r.first[id] != 0 {
			t.Fatalf("%s: turn %s seen to start, output from %d", name, id, r.first[id])
		}
		if !bytes.Equal(o, whole[r.first[id]:]) {
			t.Fatalf("%s: turn %s from byte %d: %d bytes, want %d\n got %q\nwant %q", name, id, r.first[id], len(o), len(whole)-int(r.first[id]),
				o, whole[r.first[id]:])
		}
	}
}

// Followers attached at random points of a chatty session (every
// checkpoint boundary among them), whose readings fall behind and drop
// deltas at random, each see every durable event once and in order, and
// the journal's output exactly.
func TestFollowAttachAnywhereLoseAnything(t *testing.T) {
	r, st := followRig(t, 200*time.Microsecond)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := r.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	rng := rand.New(rand.NewPCG(7, 7))
	for turn := range 3 {
		// Attach points: what is journaled now (checkpoint boundaries,
		// turn ends, the start), picked at random, while the turn runs.
		ti, err := s.Submit(ctx, fmt.Sprintf("%d 3000", turn))
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		followers := make([]*follower, 12)
		afters := make([]uint64, len(followers))
		for i := range followers {
			_, evs := journalOutput(t, st, s)
			after := uint64(0)
			if k := rng.IntN(len(evs) + 1); k > 0 {
				after = evs[k-1].Seq
			}
			feed := &lossyFeed{Feed: s, rng: rand.New(rand.NewPCG(uint64(i), uint64(turn)))}
			f, err := Follow(ctx, feed, after)
			if err != nil {
				t.Fatal(err)
			}
			if i%3 == 0 {
				f.Limit(1 + i) // bounded batches: the rest comes next
			}
			followers[i], afters[i] = &follower{f: f}, after
			wg.Add(1)
			go func() {
				defer wg.Done()
				followers[i].run(t, ctx, ti.ID)
			}()
			time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		}
		wg.Wait()
		if err := s.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		outs, journaled := journalOutput(t, st, s)
		if len(outs[ti.ID]) < 3000 {
			t.Fatalf("turn %d journaled %d bytes", turn, len(outs[ti.ID]))
		}
		for i, fl := range followers {
			fl.check(t, fmt.Sprintf("turn %d follower %d (after %d, %d recoveries)", turn, i, afters[i], fl.f.Recoveries()), afters[i], journaled, outs)
			fl.f.Close()
		}
	}
}

// A reader too slow for the hub loses its subscription (a real loss, not
// an injected one); the Follower reads the journal again and the reader
// sees everything once.
func TestFollowRecoversFromARealLoss(t *testing.T) {
	r, st := followRig(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := r.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	f, err := Follow(ctx, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fl := &follower{f: f}
	first, err := f.Next(ctx) // the journal read: the live part comes next
	if err != nil {
		t.Fatal(err)
	}
	fl.evs = append(fl.evs, first...)
	ti, err := s.Submit(ctx, "1 20000")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WaitIdle(ctx); err != nil { // nobody read meanwhile
		t.Fatal(err)
	}
	fl.run(t, ctx, ti.ID)
	outs, journaled := journalOutput(t, st, s)
	fl.check(t, "slow reader", 0, journaled, outs)
	if f.Recoveries() == 0 {
		t.Fatal("the reader never fell behind; the test proves nothing")
	}
}

// Widen both windows of a session's feed: between its hub subscription
// and its journal read (what is journaled then comes from both) and
// between the journal read and the live part (what is journaled then
// comes from the hub only). Every durable event comes once, in order.
func TestFollowWindows(t *testing.T) {
	r, st := followRig(t, 100*time.Microsecond)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := r.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	ti, err := s.Submit(ctx, "3 5000")
	if err != nil {
		t.Fatal(err)
	}
	grow := func() {
		tip := s.Status().Tip
		for deadline := time.Now().Add(10 * time.Second); s.Status().Tip < tip+3; {
			if time.Now().After(deadline) {
				t.Error("the journal did not grow")
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	var stages sync.Map
	hook := func(stage string) { stages.Store(stage, true); grow() }
	followHook.Store(&hook)
	defer followHook.Store(nil)
	f, err := Follow(ctx, s, s.Status().Tip)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	after := f.LastSeq()
	fl := &follower{f: f}
	fl.run(t, ctx, ti.ID)
	followHook.Store(nil)
	for _, stage := range []string{"subscribed", "replayed"} {
		if _, ok := stages.Load(stage); !ok {
			t.Fatalf("the %s hook did not run", stage)
		}
	}
	outs, journaled := journalOutput(t, st, s)
	fl.check(t, "windows", after, journaled, outs)
}

// A session that stops ends its followers with ErrFollowEnded once
// everything it journaled, SessionStopped last, was yielded.
func TestFollowEndsWithTheSession(t *testing.T) {
	r, _ := followRig(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := r.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Follow(ctx, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	var last event.Event
	for {
		batch, err := f.Next(ctx)
		if errors.Is(err, ErrFollowEnded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		last = batch[len(batch)-1].Event
	}
	if _, ok := last.(event.SessionStopped); !ok {
		t.Fatalf("last event %T, want SessionStopped", last)
	}
	// A stopped session's journal is still followed to its end.
	f2, err := Follow(ctx, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	n := 0
	for {
		batch, err := f2.Next(ctx)
		if errors.Is(err, ErrFollowEnded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n += len(batch)
	}
	if n < 3 {
		t.Fatalf("a follower of the stopped session got %d events", n)
	}
}

// A journal feed yields what is journaled and then what is appended,
// looking every poll; a done context ends a wait and leaves it usable.
func TestJournalFeed(t *testing.T) {
	r, st := followRig(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := r.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	f, err := Follow(ctx, JournalFeed(st, s.SessionID(), 5*time.Millisecond), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	var got []event.Envelope
	for short.Err() == nil {
		batch, err := f.Next(short)
		if err != nil && short.Err() == nil {
			t.Fatal(err)
		}
		got = append(got, batch...)
	}
	cancelShort()
	if len(got) < 2 {
		t.Fatalf("journal feed yielded %d events, want SessionStarted and LoopStarted", len(got))
	}
	ti, err := s.Submit(ctx, "5 100")
	if err != nil {
		t.Fatal(err)
	}
	fl := &follower{f: f}
	fl.run(t, ctx, ti.ID)
	outs, journaled := journalOutput(t, st, s)
	fl.check(t, "journal feed", got[len(got)-1].Seq, journaled, outs)
}

// NextOrTip over a journal feed returns what is journaled, in bounded
// batches, then says it reached the tip instead of waiting; what is
// appended later comes on the next call, each event once, and the same
// Follower's Next then waits for more as ever. A feed that cannot tell (a
// Session's) waits as Next does.
func TestFollowNextOrTip(t *testing.T) {
	st := memstore.New()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := uuid.New()
	name := storage.SessionName(id.String())
	l, err := st.Acquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())
	j, err := journal.Open(ctx, st, name, l)
	if err != nil {
		t.Fatal(err)
	}
	appendIdle := func(n int) {
		for range n {
			if _, err := j.AppendEvent(ctx, "", event.SessionIdle{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	f, err := Follow(ctx, JournalFeed(st, id, time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Limit(7)
	// No journal yet: at the tip at once, though the poll is an hour.
	if evs, tip, err := f.NextOrTip(ctx); err != nil || !tip || len(evs) != 0 {
		t.Fatalf("no journal: %d events, tip %v, err %v", len(evs), tip, err)
	}
	readToTip := func() []uint64 {
		t.Helper()
		var seqs []uint64
		for {
			evs, tip, err := f.NextOrTip(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tip {
				if len(evs) != 0 {
					t.Fatalf("at the tip with %d events", len(evs))
				}
				return seqs
			}
			if len(evs) == 0 || len(evs) > 7 {
				t.Fatalf("a batch of %d events, want 1 to 7", len(evs))
			}
			for _, env := range evs {
				seqs = append(seqs, env.Seq)
			}
		}
	}
	appendIdle(30)
	first := readToTip()
	if len(first) != 30 {
		t.Fatalf("read %d events to the tip, want 30", len(first))
	}
	for i := 1; i < len(first); i++ {
		if first[i] <= first[i-1] {
			t.Fatalf("sequences out of order: %v", first)
		}
	}
	if f.LastSeq() != first[len(first)-1] {
		t.Fatalf("LastSeq %d, want %d", f.LastSeq(), first[len(first)-1])
	}
	if again := readToTip(); len(again) != 0 {
		t.Fatalf("read %v again at the tip", again)
	}
	appendIdle(10)
	more := readToTip()
	if len(more) != 10 || more[0] <= first[len(first)-1] {
		t.Fatalf("after appending 10: read %v (the first read ended at %d)", more, first[len(first)-1])
	}
	// Next waits at the tip (the poll is an hour: until ctx ends) and
	// leaves the Follower usable.
	short, cancelShort := context.WithTimeout(ctx, 30*time.Millisecond)
	evs, err := f.Next(short)
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) || len(evs) != 0 {
		t.Fatalf("Next at the tip: %d events, err %v", len(evs), err)
	}
	appendIdle(1)
	if evs, tip, err := f.NextOrTip(ctx); err != nil || tip || len(evs) != 1 {
		t.Fatalf("after a Next that timed out: %d events, tip %v, err %v", len(evs), tip, err)
	}

	// A Session's feed has no tip to report: NextOrTip waits.
	r, _ := followRig(t, 0)
	s, err := r.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	sf, err := Follow(ctx, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	short, cancelShort = context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancelShort()
	for {
		evs, tip, err := sf.NextOrTip(short)
		if tip {
			t.Fatal("a Session's feed reported a tip")
		}
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatal(err)
			}
			break
		}
		if len(evs) == 0 {
			t.Fatal("no events, no tip, no error")
		}
	}
}

// ReplayStart: the whole of a journal not much longer than the records
// shown, else its last n records.
func TestReplayStart(t *testing.T) {
	for _, c := range []struct{ tip, n, want uint64 }{
		{0, 50, 0}, {50, 50, 0}, {62, 50, 0}, {63, 50, 13}, {1000, 50, 950},
		{12_500, 10_000, 0}, {12_501, 10_000, 2_501}, {10, 0, 10},
	} {
		if got := ReplayStart(c.tip, c.n); got != c.want {
			t.Errorf("ReplayStart(%d, %d) = %d, want %d", c.tip, c.n, got, c.want)
		}
	}
}
