package rig

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"looprig/rig/engine"
	"looprig/rig/journal"
	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

// bulkEngine prints, for the input "N SIZE", N chunks of SIZE bytes, as
// fast as the sink takes them.
type bulkEngine struct{}

func (bulkEngine) Name() string { return "bulk" }

func (bulkEngine) Run(ctx context.Context, turn engine.Turn, sink engine.Sink) (engine.Result, error) {
	var n, size int
	if _, err := fmt.Sscanf(turn.Input, "%d %d", &n, &size); err != nil {
		return engine.Result{}, err
	}
	chunk := strings.Repeat(strings.Repeat("x", 99)+"\n", size/100+1)[:size]
	for range n {
		if err := ctx.Err(); err != nil {
			return engine.Result{}, err
		}
		sink.Output(engine.Stdout, chunk)
	}
	return engine.Result{ExitCode: 0}, nil
}

// bulkJournal is a stopped session's journal on memstore after one turn of
// bulkEngine with input, checkpointed every checkpoint bytes.
func bulkJournal(t *testing.T, input string, checkpoint int) (storage.Store, string) {
	t.Helper()
	st := memstore.New()
	r, err := Define(WithStore(st), WithWorkspaces(t.TempDir()),
		WithProfile(Profile{Name: "bulk", Engine: "bulk", Placement: PlacementSession}),
		WithEngine("bulk", func(Profile) (engine.Engine, error) { return bulkEngine{}, nil }),
		WithCheckpoints(time.Hour, checkpoint))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := r.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Submit(ctx, input); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	return st, s.name
}

// TestReplayChunksBoundedInBytes: a journal read in chunks (what a
// Session's feed replays before it goes live, and a JournalFeed polls)
// comes in chunks of at most replayChunk events that stop at the first
// event whose payload brings theirs to replayBytes: a journal of 64 KiB
// output checkpoints in chunks of about 16 events, one of small events in
// chunks of replayChunk. Together the chunks are the journal's events, in
// order, each once.
func TestReplayChunksBoundedInBytes(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		checkpoint  int
		bytesBound  bool // the chunks stop at replayBytes, not replayChunk
	}{
		{"64KiB checkpoints", "256 32768", 64 << 10, true}, // 8 MiB of output
		{"small events", "3000 100", 100, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, name := bulkJournal(t, tc.input, tc.checkpoint)
			ctx := context.Background()
			rp, err := journal.NewEventReplayer(ctx, st, name, 0)
			if err != nil {
				t.Fatal(err)
			}
			var seqs []uint64
			size := map[uint64]int{}
			for rp.Next() {
				seqs = append(seqs, rp.Envelope().Seq)
				size[rp.Envelope().Seq] = rp.Size()
			}
			rp.Close()
			if err := rp.Err(); err != nil {
				t.Fatal(err)
			}
			var got []uint64
			after, chunks, most := uint64(0), 0, 0
			for {
				batch, last, more, err := readEventChunk(ctx, st, name, after)
				if err != nil {
					t.Fatal(err)
				}
				if len(batch) > replayChunk {
					t.Fatalf("chunk %d: %d events, over %d", chunks, len(batch), replayChunk)
				}
				total := 0
				for i, env := range batch {
					if total >= replayBytes {
						t.Fatalf("chunk %d goes on past %d bytes: event %d of %d", chunks, replayBytes, i, len(batch))
					}
					total += size[env.Seq]
					got = append(got, env.Seq)
				}
				if more && len(batch) < replayChunk && total < replayBytes {
					t.Fatalf("chunk %d stopped at %d events, %d bytes, short of the tip", chunks, len(batch), total)
				}
				most = max(most, total)
				chunks++
				after = last
				if !more {
					break
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(seqs) {
				t.Fatalf("chunks yielded %d events, the journal holds %d (or not the same)", len(got), len(seqs))
			}
			t.Logf("%d events in %d chunks, the largest %d bytes", len(seqs), chunks, most)
			if tc.bytesBound && most > replayBytes+(128<<10) {
				t.Fatalf("a chunk held %d bytes of records, over %d and one record", most, replayBytes)
			}
			if !tc.bytesBound && chunks < len(seqs)/replayChunk {
				t.Fatalf("%d chunks for %d events", chunks, len(seqs))
			}
		})
	}
}
