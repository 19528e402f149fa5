package logfile

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"looprig/fsstore/internal/frame"
	"looprig/fsstore/internal/fsutil"
	"looprig/rig/storage"
)

// Benchmarks come in pairs: a raw baseline on the same disk (a plain
// write+fdatasync loop, a plain read+CRC loop) next to the Log doing the
// same work, so the ratio can be read off one run. Nothing here asserts a
// figure.

// latencies collects per-operation latencies and reports p50 and p99.
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

func benchRawWriteFdatasync(b *testing.B, payloadSize int) {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "raw"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := frame.AppendFrame(nil, 1, 1, make([]byte, payloadSize))
	fd := int(f.Fd())
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := fsutil.DataSync(fd, f.Name()); err != nil { // fdatasync; F_FULLFSYNC on Darwin
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	ls := latencies{d: lat}
	ls.report(b)
}

func BenchmarkRawWriteFdatasync256(b *testing.B)  { benchRawWriteFdatasync(b, 256) }
func BenchmarkRawWriteFdatasync4096(b *testing.B) { benchRawWriteFdatasync(b, 4096) }

func benchAppend(b *testing.B, payloadSize int) {
	l, err := Open(filepath.Join(b.TempDir(), "ledger.log"), Options{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	p := make([]byte, payloadSize)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		if err := l.Append(ctx, uint64(i), 1, p); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	ls := latencies{d: lat}
	ls.report(b)
}

func BenchmarkAppend256(b *testing.B)  { benchAppend(b, 256) }
func BenchmarkAppend4096(b *testing.B) { benchAppend(b, 4096) }

// benchConcurrent runs b.N successful appends of 256 bytes spread over
// goroutines sharing one Log. With pipelined set, each goroutine claims the
// next slot and appends at expected = slot-1 without reading the tip (a
// journal writer that pipelines its records); otherwise it runs the
// CAS-retry loop Tip, Append, retry on conflict.
func benchConcurrent(b *testing.B, goroutines int, pipelined bool) {
	l, err := Open(filepath.Join(b.TempDir(), "ledger.log"), Options{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	p := make([]byte, 256)
	var next atomic.Int64
	var conflicts atomic.Int64
	var ls latencies
	var wg sync.WaitGroup
	syncs := l.Syncs()
	b.ResetTimer()
	for range goroutines {
		wg.Go(func() {
			lat := make([]time.Duration, 0, b.N/goroutines+1)
			defer func() { ls.add(lat) }()
			for {
				slot := next.Add(1)
				if slot > int64(b.N) {
					return
				}
				t0 := time.Now()
				for {
					expected := uint64(slot - 1)
					if !pipelined {
						if expected, err = l.Tip(ctx); err != nil {
							b.Error(err)
							return
						}
					}
					err := l.Append(ctx, expected, 1, p)
					if err == nil {
						break
					}
					var ce *storage.ConflictError
					if !errors.As(err, &ce) {
						b.Error(err)
						return
					}
					conflicts.Add(1)
				}
				lat = append(lat, time.Since(t0))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	ls.report(b)
	b.ReportMetric(float64(conflicts.Load())/float64(b.N), "conflicts/op")
	b.ReportMetric(float64(b.N)/float64(max(1, l.Syncs()-syncs)), "records/sync")
}

func BenchmarkAppendConcurrent1(b *testing.B)  { benchConcurrent(b, 1, false) }
func BenchmarkAppendConcurrent8(b *testing.B)  { benchConcurrent(b, 8, false) }
func BenchmarkAppendConcurrent32(b *testing.B) { benchConcurrent(b, 32, false) }
func BenchmarkAppendPipelined8(b *testing.B)   { benchConcurrent(b, 8, true) }
func BenchmarkAppendPipelined32(b *testing.B)  { benchConcurrent(b, 32, true) }

// BenchmarkAppendParallelLedgers8 runs 8 goroutines, each appending 256
// bytes to its own Log; b.N appends in total.
func BenchmarkAppendParallelLedgers8(b *testing.B) {
	const n = 8
	dir := b.TempDir()
	logs := make([]*Log, n)
	for i := range logs {
		l, err := Open(filepath.Join(dir, string(rune('a'+i))+".log"), Options{Name: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		logs[i] = l
	}
	ctx := context.Background()
	p := make([]byte, 256)
	var next atomic.Int64
	var ls latencies
	var wg sync.WaitGroup
	b.ResetTimer()
	for _, l := range logs {
		wg.Go(func() {
			lat := make([]time.Duration, 0, b.N/n+1)
			defer func() { ls.add(lat) }()
			var tip uint64
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if err := l.Append(ctx, tip, 1, p); err != nil {
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
}

const replayRecords = 100_000

// replayFile writes a ledger file of 100k records of 256 bytes.
func replayFile(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "replay.log")
	p := make([]byte, 256)
	buf := make([]byte, 0, replayRecords*frame.Size(len(p)))
	for i := range replayRecords {
		p[0], p[1] = byte(i), byte(i>>8)
		buf = frame.AppendFrame(buf, uint64(i+1), 1, p)
	}
	if err := os.WriteFile(path, buf, 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkRawRead100k is the replay baseline: open the file, read it
// sequentially with a plain read loop, and decode (CRC and sequence check)
// every frame.
func BenchmarkRawRead100k(b *testing.B) {
	path := replayFile(b)
	buf := make([]byte, readChunk+frame.MaxSize)
	b.ResetTimer()
	for range b.N {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		var seq uint64
		n := 0
		for {
			k, err := f.Read(buf[n:])
			n += k
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			off := 0
			for {
				fr, m, err := frame.Decode(buf[off:n])
				if errors.Is(err, frame.ErrIncomplete) {
					break
				}
				if err != nil || fr.Seq != seq+1 {
					b.Fatalf("frame %d: %v", seq+1, err)
				}
				seq++
				off += m
			}
			n = copy(buf, buf[off:n])
		}
		f.Close()
		if seq != replayRecords {
			b.Fatalf("read %d records", seq)
		}
	}
}

// BenchmarkOpenReplay100k opens the same file as a Log (full validation
// scan) and reads every record through a cursor.
func BenchmarkOpenReplay100k(b *testing.B) {
	path := replayFile(b)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		l, err := Open(path, Options{Name: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		c, err := l.Read(ctx, 0)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for c.Next() {
			n++
		}
		if c.Err() != nil || n != replayRecords {
			b.Fatalf("read %d records: %v", n, c.Err())
		}
		c.Close()
		l.Close()
	}
}

// BenchmarkOpen100k is the first half of BenchmarkOpenReplay100k: Open
// alone, which validates every frame.
func BenchmarkOpen100k(b *testing.B) {
	path := replayFile(b)
	b.ResetTimer()
	for range b.N {
		l, err := Open(path, Options{Name: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		l.Close()
	}
}

// BenchmarkReadAll100k is the second half: a cursor over every record of
// a Log already open.
func BenchmarkReadAll100k(b *testing.B) {
	l, err := Open(replayFile(b), Options{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		c, err := l.Read(ctx, 0)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for c.Next() {
			n++
		}
		if c.Err() != nil || n != replayRecords {
			b.Fatalf("read %d records: %v", n, c.Err())
		}
		c.Close()
	}
}
