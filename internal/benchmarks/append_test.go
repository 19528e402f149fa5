package benchmarks

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// rawFrame is a ledger frame as fsstore lays it out (magic, length,
// sequence, epoch, payload, CRC-32C), built here because the frame package
// is internal to fsstore.
func rawFrame(seq, epoch uint64, payload []byte) []byte {
	b := make([]byte, 0, 28+len(payload))
	b = append(b, "LRf1"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.LittleEndian.AppendUint64(b, seq)
	b = binary.LittleEndian.AppendUint64(b, epoch)
	b = append(b, payload...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// BenchmarkDurableAppend: fsstore Append of one payload (256 B, 4 KiB) at
// the tip, one after another, against a raw loop writing the same frame
// bytes to a file in the same directory and calling fdatasync.
// Target (docs/ARCHITECTURE.md, "Performance figures"): ≥ 0.85 × the raw
// loop; p99 ≤ 10 ms.
//
// Metrics: ours-us and base-us (mean per append), ratio (base/ours, the
// speed of ours relative to the raw loop), p50-us/p99-us (ours),
// base-p99-us.
func BenchmarkDurableAppend(b *testing.B) {
	for _, size := range []int{256, 4096} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			rounds, perRound := pick(6, 10), pick(150, 400)
			for range b.N {
				settle()
				dir := b.TempDir()
				st := openStore(b, filepath.Join(dir, "store"))
				defer st.Close()
				name := storage.SessionName(uuid.NewString())
				payload := []byte(strings.Repeat("x", size))
				var tip uint64
				raw, err := os.OpenFile(filepath.Join(dir, "store", "ledgers", "raw.log"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
				if err != nil {
					b.Fatal(err)
				}
				defer raw.Close()
				// Create the ledger first: the file's creation is not an append.
				if err := st.Append(bg, name, tip, payload); err != nil {
					b.Fatal(err)
				}
				tip++
				var rawSeq uint64
				var ours, base side
				// One append of each side in turn (the order swapped every
				// time), so a burst of someone else's I/O hits both alike.
				interleave(rounds*perRound, func() {
					t0 := time.Now()
					if err := st.Append(bg, name, tip, payload); err != nil {
						b.Fatal(err)
					}
					d := time.Since(t0)
					tip++
					ours.add(1, d)
					ours.lat = append(ours.lat, d)
				}, func() {
					rawSeq++
					t0 := time.Now()
					buf := rawFrame(rawSeq, 1, payload)
					if _, err := raw.Write(buf); err != nil {
						b.Fatal(err)
					}
					if err := dataSync(raw); err != nil {
						b.Fatal(err)
					}
					d := time.Since(t0)
					base.add(1, d)
					base.lat = append(base.lat, d)
				})
				b.ReportMetric(ours.perOp(), "ours-us")
				b.ReportMetric(base.perOp(), "base-us")
				b.ReportMetric(base.perOp()/ours.perOp(), "ratio")
				b.ReportMetric(ours.pct(0.50), "p50-us")
				b.ReportMetric(ours.pct(0.99), "p99-us")
				b.ReportMetric(base.pct(0.99), "base-p99-us")
			}
		})
	}
}

// turnOutput is a realistic enduring event: one output checkpoint.
func turnOutput(i int) event.TurnOutput {
	return event.TurnOutput{TurnID: "0f8fad5b-d9cb-469f-a165-70867728950e",
		Text: fmt.Sprintf("output line %d of the benchmark turn, long enough to look like real output\n", i)}
}

// BenchmarkGroupCommit: records appended through the real group-commit
// path — goroutines calling SessionJournal.AppendEvent on one journal over
// fsstore — by 1, 8 and 32 concurrent appenders, and bbolt on the same disk
// doing one put (of the same event bytes) per read-write transaction, by 1
// and 8 goroutines. Target (docs/ARCHITECTURE.md, "Performance figures"):
// 8 appenders ≥ 5 × the single appender, and ≥ 1.5 × bbolt.
//
// Metrics: rate-1, rate-8, rate-32, bolt-1, bolt-8 (records per second);
// x8 = rate-8/rate-1, x32 = rate-32/rate-1, vs-bolt = rate-8/bolt-8,
// vs-bolt-1 = rate-1/bolt-1; batch-8 = records per ledger append (one
// fdatasync each) with 8 appenders; flush-us-1 and flush-us-8 = the time
// of one ledger append (write + fdatasync) with 1 and 8 appenders, and
// gap-us-8 = the time between two appends with 8 (writers waking,
// re-queueing, the leader gathering them). So x8 ≈ batch-8 × flush-us-1 /
// (flush-us-8 + gap-us-8): the disk makes a batch's flush dearer than one
// record's, which bounds x8 however small the gap.
func BenchmarkGroupCommit(b *testing.B) {
	// Many rounds, so that every side sees the same mix of a shared
	// machine's load, each long enough (64 records per writer at 8
	// writers, 128 in full mode) to measure the sustained rate: each round
	// starts with a lone writer's flush and ends with a partial batch,
	// which at 16 records per writer cost 0.5 record per flush and about
	// 8% of the 8-writer rate.
	rounds := pick(12, 16)
	perRound := pick(512, 1024)
	for range b.N {
		settle()
		dir := b.TempDir()
		st := openStore(b, filepath.Join(dir, "store"))
		defer st.Close()
		name := storage.SessionName(uuid.NewString())
		l, err := st.Acquire(bg, name)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Release(bg)
		cl := &countingLedger{Ledger: st}
		j, err := journal.Open(bg, cl, name, l)
		if err != nil {
			b.Fatal(err)
		}
		db, err := bolt.Open(filepath.Join(dir, "bolt.db"), 0o600, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		bucket := []byte("journal")
		if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
			b.Fatal(err)
		}
		payload, err := event.Marshal(turnOutput(0))
		if err != nil {
			b.Fatal(err)
		}

		var seq atomic.Int64
		journalRun := func(s *side, writers int) func() {
			return func() {
				var next atomic.Int64
				var wg sync.WaitGroup
				t0 := time.Now()
				for range writers {
					wg.Go(func() {
						for next.Add(1) <= int64(perRound) {
							if _, err := j.AppendEvent(bg, "loop", turnOutput(int(seq.Add(1)))); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				s.add(perRound, time.Since(t0))
			}
		}
		var key atomic.Uint64
		boltRun := func(s *side, writers int) func() {
			return func() {
				var next atomic.Int64
				var wg sync.WaitGroup
				t0 := time.Now()
				for range writers {
					wg.Go(func() {
						for next.Add(1) <= int64(perRound) {
							k := binary.BigEndian.AppendUint64(nil, key.Add(1))
							err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put(k, payload) })
							if err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				s.add(perRound, time.Since(t0))
			}
		}
		var one, eight, thirtyTwo, bolt1, bolt8 side
		var appends8, records8, appends1 int64
		var busy1, busy8 time.Duration
		interleave(rounds,
			func() {
				a, t := cl.appends.Load(), cl.busy.Load()
				journalRun(&one, 1)()
				appends1 += cl.appends.Load() - a
				busy1 += time.Duration(cl.busy.Load() - t)
			},
			func() {
				a, r, t := cl.appends.Load(), cl.records.Load(), cl.busy.Load()
				journalRun(&eight, 8)()
				appends8 += cl.appends.Load() - a
				records8 += cl.records.Load() - r
				busy8 += time.Duration(cl.busy.Load() - t)
			},
			journalRun(&thirtyTwo, 32),
			boltRun(&bolt1, 1),
			boltRun(&bolt8, 8),
		)
		b.ReportMetric(one.rate(), "rate-1")
		b.ReportMetric(eight.rate(), "rate-8")
		b.ReportMetric(thirtyTwo.rate(), "rate-32")
		b.ReportMetric(bolt1.rate(), "bolt-1")
		b.ReportMetric(bolt8.rate(), "bolt-8")
		b.ReportMetric(eight.rate()/one.rate(), "x8")
		b.ReportMetric(thirtyTwo.rate()/one.rate(), "x32")
		b.ReportMetric(eight.rate()/bolt8.rate(), "vs-bolt")
		b.ReportMetric(one.rate()/bolt1.rate(), "vs-bolt-1")
		b.ReportMetric(float64(records8)/float64(max(1, appends8)), "batch-8")
		// Where a batch's time goes: in the ledger append (write +
		// fdatasync) and between appends (writers waking and re-queueing,
		// the leader gathering them).
		b.ReportMetric(float64(busy1.Microseconds())/float64(max(1, appends1)), "flush-us-1")
		b.ReportMetric(float64(busy8.Microseconds())/float64(max(1, appends8)), "flush-us-8")
		b.ReportMetric((float64(eight.busy.Microseconds())-float64(busy8.Microseconds()))/float64(max(1, appends8)), "gap-us-8")
	}
}

// countingLedger counts the ledger appends (one fdatasync each) and the
// records they carry.
type countingLedger struct {
	storage.Ledger
	appends, records atomic.Int64
	busy             atomic.Int64 // nanoseconds spent in Append
}

func (c *countingLedger) Append(ctx context.Context, name string, expected uint64, payloads ...[]byte) error {
	c.appends.Add(1)
	c.records.Add(int64(len(payloads)))
	t0 := time.Now()
	err := c.Ledger.Append(ctx, name, expected, payloads...)
	c.busy.Add(int64(time.Since(t0)))
	return err
}
