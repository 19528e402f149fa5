package natsstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"looprig/natsstore/embedded"
	"looprig/rig/storage"
)

func readAll(t *testing.T, s storage.Ledger, name string, after uint64) []storage.Record {
	t.Helper()
	c, err := s.Read(t.Context(), name, after)
	if err != nil {
		t.Fatalf("Read(%q, %d) = %v", name, after, err)
	}
	defer c.Close()
	var out []storage.Record
	for c.Next() {
		r := c.Record()
		out = append(out, storage.Record{Seq: r.Seq, Payload: bytes.Clone(r.Payload)})
	}
	if err := c.Err(); err != nil {
		t.Fatalf("Read(%q, %d): %v", name, after, err)
	}
	return out
}

// Ledger sequences are per ledger while stream sequences are shared, and
// one message holds a whole Append: reads from every position, across
// messages of several records interleaved with another ledger's, yield
// exactly the records after it.
func TestReadFromEveryPosition(t *testing.T) {
	s := openStore(t, startServer(t).URL())
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[string][][]byte{}
	names := []string{"sessions/x", "sessions/y"}
	for round := range 40 {
		for _, name := range names {
			n := 1 + rng.IntN(4)
			var ps [][]byte
			for i := range n {
				ps = append(ps, fmt.Appendf(nil, "%s-%d-%d", name, round, i))
			}
			if err := s.Append(ctx, name, uint64(len(want[name])), ps...); err != nil {
				t.Fatal(err)
			}
			want[name] = append(want[name], ps...)
		}
	}
	for _, name := range names {
		all := want[name]
		for after := 0; after <= len(all)+1; after++ {
			got := readAll(t, s, name, uint64(after))
			exp := all[min(after, len(all)):]
			if len(got) != len(exp) {
				t.Fatalf("Read(%s, after %d) yielded %d records, want %d", name, after, len(got), len(exp))
			}
			for i, r := range got {
				if r.Seq != uint64(after+i+1) || !bytes.Equal(r.Payload, exp[i]) {
					t.Fatalf("Read(%s, after %d): record %d = {%d %q}, want {%d %q}", name, after, i, r.Seq, r.Payload, after+i+1, exp[i])
				}
			}
		}
	}
}

// An Append too large for one message is one atomic batch of several:
// it lands whole, conflicts whole, and a batch the server abandons leaves
// nothing behind.
func TestOversizeAppendIsAtomic(t *testing.T) {
	s := openStore(t, startServer(t, embedded.MaxPayload(MinMaxPayload)).URL())
	ctx := t.Context()
	const name = "sessions/big"
	big := func(tag byte) []byte {
		p := bytes.Repeat([]byte{tag}, 700<<10)
		copy(p, fmt.Sprintf("payload %c", tag))
		return p
	}
	if err := s.Append(ctx, name, 0, []byte("first")); err != nil {
		t.Fatal(err)
	}
	ps := [][]byte{big('a'), big('b'), big('c'), big('d'), big('e')}
	if n := len(s.frame(ps, 1)); n < 3 {
		t.Fatalf("test bug: %d messages, want several", n)
	}
	if err := s.Append(ctx, name, 1, ps...); err != nil {
		t.Fatalf("oversize Append = %v", err)
	}
	check := func(want [][]byte) {
		t.Helper()
		got := readAll(t, s, name, 0)
		if len(got) != len(want) {
			t.Fatalf("ledger holds %d records, want %d", len(got), len(want))
		}
		for i := range got {
			if got[i].Seq != uint64(i+1) || !bytes.Equal(got[i].Payload, want[i]) {
				t.Fatalf("record %d differs", i+1)
			}
		}
		if tip, err := s.Tip(ctx, name); err != nil || tip != uint64(len(want)) {
			t.Fatalf("Tip = %d, %v; want %d", tip, err, len(want))
		}
	}
	want := append([][]byte{[]byte("first")}, ps...)
	check(want)

	err := s.Append(ctx, name, 1, ps...)
	var ce *storage.ConflictError
	if !errors.As(err, &ce) || ce.Actual != 6 {
		t.Fatalf("stale oversize Append = %v, want a conflict at 6", err)
	}
	check(want)

	s.mu.Lock()
	s.hooks.dropBatchMsg = 2
	s.mu.Unlock()
	err = s.Append(ctx, name, 6, ps...)
	if err == nil || errors.As(err, &ce) {
		t.Fatalf("Append of a batch missing its second message = %v, want a refusal", err)
	}
	check(want)
	s.mu.Lock()
	s.hooks.dropBatchMsg = 0
	s.mu.Unlock()
	if err := s.Append(ctx, name, 6, ps[:2]...); err != nil {
		t.Fatal(err)
	}
	check(append(want, ps[:2]...))
}

// An Append whose acknowledgement is lost finds out whether it landed: it
// did when the message that took its compare-and-swap slot is its own,
// even when another writer appended on top before it looked.
func TestLostAcknowledgement(t *testing.T) {
	srv := startServer(t)
	s := openStore(t, srv.URL())
	other := openStore(t, srv.URL())
	ctx := t.Context()
	const name = "sessions/lost-ack"
	lose := func(fn func()) {
		s.mu.Lock()
		s.hooks.afterPublish = func() error {
			s.mu.Lock()
			s.hooks.afterPublish = nil
			s.mu.Unlock()
			if fn != nil {
				fn()
			}
			return nats.ErrTimeout
		}
		s.mu.Unlock()
	}
	lose(nil)
	if err := s.Append(ctx, name, 0, []byte("a1"), []byte("a2")); err != nil {
		t.Fatalf("Append whose ack was lost = %v, want nil (it landed)", err)
	}
	lose(func() {
		if err := other.Append(ctx, name, 3, []byte("b")); err != nil {
			t.Errorf("other writer: %v", err)
		}
	})
	if err := s.Append(ctx, name, 2, []byte("a3")); err != nil {
		t.Fatalf("Append whose ack was lost, with a later append on top = %v, want nil", err)
	}
	recs := readAll(t, s, name, 0)
	var got []string
	for _, r := range recs {
		got = append(got, string(r.Payload))
	}
	if fmt.Sprint(got) != "[a1 a2 a3 b]" {
		t.Fatalf("ledger holds %v, want [a1 a2 a3 b]", got)
	}
	// A refused append whose ack is "lost" is still a conflict.
	lose(nil)
	err := s.Append(ctx, name, 1, []byte("stale"))
	var ce *storage.ConflictError
	if !errors.As(err, &ce) || ce.Actual != 4 {
		t.Fatalf("stale Append = %v, want a conflict at 4", err)
	}
}

// A cursor opened before a Delete stops (rather than hangs or fails) when
// the records it still had to yield are gone.
func TestCursorAcrossDelete(t *testing.T) {
	s := openStore(t, startServer(t).URL(), WithTimeout(5*time.Second))
	ctx := t.Context()
	const name = "sessions/deleted-under-cursor"
	for i := range 2000 {
		if err := s.Append(ctx, name, uint64(i), fmt.Appendf(nil, "r%d", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	c, err := s.Read(ctx, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.Next() {
		t.Fatalf("no first record: %v", c.Err())
	}
	if err := s.Delete(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, name, 0, []byte("reborn")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	n := 1
	for c.Next() {
		r := c.Record()
		if r.Seq != uint64(n+1) || string(r.Payload) != fmt.Sprintf("r%d", n+1) {
			t.Fatalf("record %d after the delete: {%d %q}", n+1, r.Seq, r.Payload)
		}
		n++
	}
	if err := c.Err(); err != nil {
		t.Fatalf("cursor across a delete: %v", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("the cursor took %v to end", time.Since(start))
	}
	t.Logf("the cursor yielded %d of 2000 records", n)
}

// Messages on a ledger's subject that natsstore did not write are corrupt
// data, reported as such and never skipped.
func TestForeignMessageIsCorrupt(t *testing.T) {
	srv := startServer(t)
	s := openStore(t, srv.URL())
	ctx := t.Context()
	const name = "sessions/foreign"
	if err := s.Append(ctx, name, 0, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.js.Publish(ctx, s.subject(name), []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	var ce *storage.CorruptError
	if _, err := s.Tip(ctx, name); !errors.As(err, &ce) {
		t.Fatalf("Tip = %v, want *storage.CorruptError", err)
	}
	if err := s.Append(ctx, name, 1, []byte("more")); !errors.As(err, &ce) {
		t.Fatalf("Append = %v, want *storage.CorruptError", err)
	}
	// A message with our headers but a damaged body.
	m := nats.NewMsg(s.subject("sessions/damaged"))
	m.Header.Set(hdrFirst, "1")
	m.Header.Set(hdrCount, "1")
	m.Header.Set(hdrCRC, "0")
	m.Data = []byte{5, 'a'}
	if _, err := s.js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx, "sessions/damaged", 0); !errors.As(err, &ce) {
		t.Fatalf("Read of a damaged message = %v, want *storage.CorruptError", err)
	}
	// Garbage catalog values and lease records.
	if _, err := s.catalog.Put(ctx, encodeName("sessions/x/catalog"), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "sessions/x/catalog"); !errors.As(err, &ce) {
		t.Fatalf("Get of a garbage value = %v, want *storage.CorruptError", err)
	}
	if _, err := s.leaseKV.Put(ctx, encodeName("sessions/x"), []byte("not json")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, "sessions/x"); !errors.As(err, &ce) {
		t.Fatalf("Acquire over a garbage lease record = %v, want *storage.CorruptError", err)
	}
	if _, err := s.Probe(ctx, "sessions/x"); !errors.As(err, &ce) {
		t.Fatalf("Probe of a garbage lease record = %v, want *storage.CorruptError", err)
	}
}

// Stores with different prefixes share a server and nothing else.
func TestPrefixesAreSeparate(t *testing.T) {
	srv := startServer(t)
	ctx := t.Context()
	a := openStore(t, srv.URL()+"/team-a")
	b := openStore(t, srv.URL(), WithPrefix("team-b"))
	if a.Prefix() != "team-a" || b.Prefix() != "team-b" {
		t.Fatalf("prefixes %q %q", a.Prefix(), b.Prefix())
	}
	const name = "sessions/same"
	if err := a.Append(ctx, name, 0, []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := b.Append(ctx, name, 0, []byte("b")); err != nil {
		t.Fatal(err)
	}
	la, err := a.Acquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer la.Release(ctx)
	lb, err := b.Acquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Release(ctx)
	if _, err := a.Put(ctx, "sessions/same/catalog", []byte("a"), storage.MustNotExist); err != nil {
		t.Fatal(err)
	}
	if keys, err := b.Keys(ctx, ""); err != nil || len(keys) != 0 {
		t.Fatalf("b.Keys = %v, %v; want none", keys, err)
	}
}

// Acknowledged appends survive a server restart on the same directory,
// with writers running through it: every acknowledged record is there,
// each ledger is gap-free, and nothing landed twice.
func TestServerRestartKeepsAcknowledgedAppends(t *testing.T) {
	srv := startServer(t)
	s := openStore(t, srv.URL(), WithTimeout(2*time.Second))
	acked, stop := runWriters(t, s, 6)
	time.Sleep(300 * time.Millisecond)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(800 * time.Millisecond)
	checkWriters(t, s, stop(), acked)
}

// runWriters starts n writers, each appending numbered batches to its own
// ledger through errors (a failed Append is retried from the tip the
// ledger shows). acked[i] is the highest acknowledged sequence of writer
// i; stop ends them and returns the ledger names.
func runWriters(t *testing.T, s *Store, n int) (acked []uint64, stop func() []string) {
	acked = make([]uint64, n)
	names := make([]string, n)
	done := make(chan struct{})
	finished := make(chan struct{}, n)
	for w := range n {
		names[w] = fmt.Sprintf("sessions/writer-%d", w)
		go func() {
			defer func() { finished <- struct{}{} }()
			ctx := context.Background()
			var tip uint64
			errs := 0
			for k := 0; ; k++ {
				select {
				case <-done:
					return
				default:
				}
				var ps [][]byte
				for i := range 1 + k%3 {
					ps = append(ps, fmt.Appendf(nil, "%s-%d", names[w], tip+uint64(i)+1))
				}
				if err := s.Append(ctx, names[w], tip, ps...); err == nil {
					tip += uint64(len(ps))
					acked[w] = tip
					continue
				}
				errs++
				// Unknown outcome: find out where the ledger is.
				for {
					select {
					case <-done:
						return
					default:
					}
					got, err := s.Tip(ctx, names[w])
					if err == nil {
						tip = got
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	return acked, func() []string {
		close(done)
		for range n {
			<-finished
		}
		return names
	}
}

func checkWriters(t *testing.T, s *Store, names []string, acked []uint64) {
	t.Helper()
	total := 0
	for w, name := range names {
		recs := readAll(t, s, name, 0)
		if uint64(len(recs)) < acked[w] {
			t.Errorf("%s holds %d records, but %d were acknowledged", name, len(recs), acked[w])
		}
		for i, r := range recs {
			if want := fmt.Sprintf("%s-%d", name, i+1); r.Seq != uint64(i+1) || string(r.Payload) != want {
				t.Fatalf("%s record %d = {%d %q}, want {%d %q}", name, i, r.Seq, r.Payload, i+1, want)
			}
		}
		total += len(recs)
	}
	t.Logf("%d records in %d ledgers, acknowledged %v", total, len(names), acked)
	if total == 0 {
		t.Errorf("no writes happened")
	}
}
