package rigtest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// BenchmarkRestore measures RestoreSession followed by Shutdown of a
// session whose journal holds 10k and 100k records (one long turn's output
// checkpoints), on b's store.
func BenchmarkRestore(b *testing.B, backend Backend) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("records=%dk", n/1000), func(b *testing.B) {
			store, _ := backend.NewStore(b)
			ws := b.TempDir()
			r := defineOn(b, store, ws, rig.WithProfile(rig.DemoProfile()))
			id := benchSession(b, r, store, n)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				s, err := r.RestoreSession(ctx, id)
				if err != nil {
					b.Fatalf("RestoreSession: %v", err)
				}
				if err := s.Shutdown(ctx); err != nil {
					b.Fatalf("Shutdown: %v", err)
				}
			}
		})
	}
}

// benchSession makes a stopped session whose journal holds about n
// records: one turn with n TurnOutput checkpoints, appended concurrently so
// that the journal group-commits them.
func benchSession(b *testing.B, r *rig.Rig, store storage.Store, n int) uuid.UUID {
	b.Helper()
	ctx := context.Background()
	s, err := r.NewSession(ctx)
	if err != nil {
		b.Fatal(err)
	}
	id, loop := s.SessionID(), s.LoopID()
	if err := s.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	name := storage.SessionName(id.String())
	l, err := store.Acquire(ctx, name)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Release(ctx)
	j, err := journal.Open(ctx, store, name, l)
	if err != nil {
		b.Fatal(err)
	}
	turn := uuid.NewString()
	if _, err := j.AppendEvent(ctx, loop, event.TurnStarted{TurnID: turn, Input: "bench"}); err != nil {
		b.Fatal(err)
	}
	const writers = 512
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := w; i < n; i += writers {
				text := fmt.Sprintf("output line %d of the benchmark turn, long enough to look like real output\n", i)
				if _, err := j.AppendEvent(ctx, loop, event.TurnOutput{TurnID: turn, Text: text}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	if _, err := j.AppendEvent(ctx, loop, event.TurnDone{TurnID: turn}); err != nil {
		b.Fatal(err)
	}
	return id
}
