package natsstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"looprig/fsstore"
	"looprig/rig"
	"looprig/rig/rigtest"
	"looprig/rig/storage"
)

// Benchmarks run every shape against fsstore and natsstore (an embedded
// server in this process, sync_interval: always, on the same disk), at the
// storage.Ledger level, so the two can be read off one run. The shapes are
// those of fsstore/internal/logfile's benchmarks and rigtest's
// BenchmarkRestore. Nothing here asserts a figure.

type benchBackend struct {
	name string
	open func(b *testing.B) storage.Store
}

func benchBackends() []benchBackend {
	return []benchBackend{
		{"fsstore", func(b *testing.B) storage.Store {
			s, err := fsstore.Open(b.TempDir() + "/store")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
		{"natsstore", func(b *testing.B) storage.Store {
			return openStore(b, startServer(b).URL())
		}},
	}
}

type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d []time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d...)
	l.mu.Unlock()
}

func (l *latencies) report(b *testing.B) {
	if len(l.d) == 0 {
		return
	}
	slices.Sort(l.d)
	at := func(q float64) float64 {
		return float64(l.d[min(len(l.d)-1, int(q*float64(len(l.d))))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(at(0.50), "p50-us")
	b.ReportMetric(at(0.99), "p99-us")
}

// BenchmarkAppend: one appender, one record per Append, at the tip it
// knows (logfile's BenchmarkAppend256/4096).
func BenchmarkAppend(b *testing.B) {
	for _, be := range benchBackends() {
		for _, size := range []int{256, 4096} {
			b.Run(fmt.Sprintf("store=%s/size=%d", be.name, size), func(b *testing.B) {
				s := be.open(b)
				ctx := context.Background()
				p := make([]byte, size)
				lat := make([]time.Duration, 0, b.N)
				b.SetBytes(int64(size))
				b.ResetTimer()
				for i := range b.N {
					t0 := time.Now()
					if err := s.Append(ctx, "sessions/bench", uint64(i), p); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t0))
				}
				b.StopTimer()
				ls := latencies{d: lat}
				ls.report(b)
			})
		}
	}
}

// BenchmarkAppendConcurrent: b.N appends of 256 bytes to one ledger from g
// goroutines. Pipelined writers claim slots and append at slot-1 without
// reading the tip; the others run the Tip, Append, retry-on-conflict loop
// (logfile's benchConcurrent).
func BenchmarkAppendConcurrent(b *testing.B) {
	for _, be := range benchBackends() {
		for _, c := range []struct {
			g         int
			pipelined bool
		}{{1, false}, {8, false}, {32, false}, {8, true}, {32, true}} {
			mode := "cas"
			if c.pipelined {
				mode = "pipelined"
			}
			b.Run(fmt.Sprintf("store=%s/%s/g=%d", be.name, mode, c.g), func(b *testing.B) {
				s := be.open(b)
				ctx := context.Background()
				p := make([]byte, 256)
				var next, conflicts atomic.Int64
				var ls latencies
				var wg sync.WaitGroup
				b.ResetTimer()
				for range c.g {
					wg.Go(func() {
						lat := make([]time.Duration, 0, b.N/c.g+1)
						defer func() { ls.add(lat) }()
						for {
							slot := next.Add(1)
							if slot > int64(b.N) {
								return
							}
							t0 := time.Now()
							for {
								expected := uint64(slot - 1)
								var err error
								if !c.pipelined {
									if expected, err = s.Tip(ctx, "sessions/bench"); err != nil {
										b.Error(err)
										return
									}
								}
								err = s.Append(ctx, "sessions/bench", expected, p)
								if err == nil {
									break
								}
								var ce *storage.ConflictError
								if !errors.As(err, &ce) {
									b.Error(err)
									return
								}
								conflicts.Add(1)
								if c.pipelined {
									time.Sleep(10 * time.Microsecond)
								}
							}
							lat = append(lat, time.Since(t0))
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				ls.report(b)
				b.ReportMetric(float64(conflicts.Load())/float64(b.N), "conflicts/op")
			})
		}
	}
}

// BenchmarkAppendParallelLedgers8: 8 goroutines, each appending 256 bytes
// to its own ledger; b.N appends in all.
func BenchmarkAppendParallelLedgers8(b *testing.B) {
	for _, be := range benchBackends() {
		b.Run("store="+be.name, func(b *testing.B) {
			s := be.open(b)
			ctx := context.Background()
			p := make([]byte, 256)
			var next atomic.Int64
			var ls latencies
			var wg sync.WaitGroup
			b.ResetTimer()
			for w := range 8 {
				wg.Go(func() {
					name := fmt.Sprintf("sessions/bench-%d", w)
					lat := make([]time.Duration, 0, b.N/8+1)
					defer func() { ls.add(lat) }()
					var tip uint64
					for next.Add(1) <= int64(b.N) {
						t0 := time.Now()
						if err := s.Append(ctx, name, tip, p); err != nil {
							b.Error(err)
							return
						}
						tip++
						lat = append(lat, time.Since(t0))
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			ls.report(b)
		})
	}
}

// BenchmarkAppendBatch: one Append of 64 records of 256 bytes (what the
// journal's group commit hands the ledger under load); reported per record.
func BenchmarkAppendBatch64(b *testing.B) {
	for _, be := range benchBackends() {
		b.Run("store="+be.name, func(b *testing.B) {
			s := be.open(b)
			ctx := context.Background()
			batch := make([][]byte, 64)
			for i := range batch {
				batch[i] = make([]byte, 256)
			}
			b.SetBytes(64 * 256)
			b.ResetTimer()
			for i := range b.N {
				if err := s.Append(ctx, "sessions/bench", uint64(i*64), batch...); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/record")
		})
	}
}

// BenchmarkRead100k: Read of a ledger of 100k records of 256 bytes,
// written 100 per Append.
func BenchmarkRead100k(b *testing.B) {
	const records, per = 100_000, 100
	for _, be := range benchBackends() {
		b.Run("store="+be.name, func(b *testing.B) {
			s := be.open(b)
			ctx := context.Background()
			batch := make([][]byte, per)
			for i := range batch {
				batch[i] = make([]byte, 256)
			}
			for i := 0; i < records; i += per {
				if err := s.Append(ctx, "sessions/bench", uint64(i), batch...); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(records * 256)
			b.ResetTimer()
			for range b.N {
				c, err := s.Read(ctx, "sessions/bench", 0)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for c.Next() {
					n++
				}
				if c.Err() != nil || n != records {
					b.Fatalf("read %d records: %v", n, c.Err())
				}
				c.Close()
			}
		})
	}
}

// BenchmarkRestoreFS is rigtest.BenchmarkRestore on fsstore, beside
// BenchmarkRestore (natsstore) in runtime_test.go.
func BenchmarkRestoreFS(b *testing.B) {
	rigtest.BenchmarkRestore(b, rigtest.Backend{
		Name: "fsstore",
		NewStore: func(t testing.TB) (storage.Store, string) {
			dir := t.TempDir() + "/store"
			s, err := fsstore.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s, dir
		},
		Reopen: func(t testing.TB, dir string) storage.Store { t.Fatal("unused"); return nil },
	})
}

// BenchmarkAcquireRelease: one Acquire and Release of a free name.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, be := range benchBackends() {
		b.Run("store="+be.name, func(b *testing.B) {
			s := be.open(b)
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				l, err := s.Acquire(ctx, "sessions/bench")
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkListSessions1000: rig.ListSessions over 1000 sessions (catalog
// entries, every other one held), the cost of `looprig ls`.
func BenchmarkListSessions1000(b *testing.B) {
	for _, be := range benchBackends() {
		b.Run("store="+be.name, func(b *testing.B) {
			s := be.open(b)
			ctx := context.Background()
			for i := range 1000 {
				id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
				if _, err := s.Put(ctx, storage.CatalogKey(id), []byte(`{"v":1}`), storage.MustNotExist); err != nil {
					b.Fatal(err)
				}
				l, err := s.Acquire(ctx, storage.SessionName(id))
				if err != nil {
					b.Fatal(err)
				}
				if i%2 == 0 {
					b.Cleanup(func() { l.Release(ctx) })
				} else if err := l.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				list, err := rig.ListSessions(ctx, s)
				if err != nil || len(list) != 1000 {
					b.Fatalf("ListSessions = %d sessions, %v", len(list), err)
				}
			}
		})
	}
}

// BenchmarkDeleteBlobs5000: gc's deletion of 5,000 unreferenced blobs of
// 2 KiB, DeleteBlobs of all of them (bulk-ms) against DeleteBlob of each
// in turn (onebyone-ms), on both stores, each on 5,000 blobs put anew
// (not timed); ratio is onebyone-ms over bulk-ms. Also ListBlobs over
// them (list-ms), which gc does first.
func BenchmarkDeleteBlobs5000(b *testing.B) {
	const n = 5000
	for _, be := range benchBackends() {
		b.Run("store="+be.name, func(b *testing.B) {
			s := be.open(b)
			ctx := context.Background()
			var bulk, single, list time.Duration
			var round uint64
			for b.Loop() {
				round++
				ds := putBenchBlobs(b, s, n, round)
				start := time.Now()
				listed := 0
				if err := s.ListBlobs(ctx, func(storage.BlobInfo) error { listed++; return nil }); err != nil || listed != n {
					b.Fatalf("listed %d of %d, %v", listed, n, err)
				}
				list += time.Since(start)
				start = time.Now()
				removed, err := s.DeleteBlobs(ctx, ds, time.Time{})
				bulk += time.Since(start)
				if err != nil || len(removed) != n {
					b.Fatalf("DeleteBlobs removed %d of %d, %v", len(removed), n, err)
				}
				round++
				ds = putBenchBlobs(b, s, n, round)
				start = time.Now()
				for _, d := range ds {
					if err := s.DeleteBlob(ctx, d); err != nil {
						b.Fatal(err)
					}
				}
				single += time.Since(start)
			}
			ms := func(d time.Duration) float64 { return float64(d) / float64(b.N) / float64(time.Millisecond) }
			b.ReportMetric(ms(list), "list-ms")
			b.ReportMetric(ms(bulk), "bulk-ms")
			b.ReportMetric(ms(single), "onebyone-ms")
			b.ReportMetric(float64(single)/float64(bulk), "ratio")
		})
	}
}

// putBenchBlobs puts n distinct blobs of 2 KiB (their content depends on
// round), 16 at a time, and returns their digests.
func putBenchBlobs(b *testing.B, s storage.BlobStore, n int, round uint64) []storage.Digest {
	b.Helper()
	ds := make([]storage.Digest, n)
	errs := make([]error, 16)
	var wg sync.WaitGroup
	for w := range errs {
		wg.Go(func() {
			buf := make([]byte, 2048)
			for i := w; i < n; i += len(errs) {
				binary.LittleEndian.PutUint64(buf, round)
				binary.LittleEndian.PutUint64(buf[8:], uint64(i))
				info, err := s.PutBlob(context.Background(), bytes.NewReader(buf))
				if err != nil {
					errs[w] = err
					return
				}
				ds[i] = info.Digest
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	return ds
}
