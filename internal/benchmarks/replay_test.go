package benchmarks

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// replayFixture is a store with one stopped session whose journal holds a
// turn of n output records (n+~10 records in all).
type replayFixture struct {
	dir  string
	id   uuid.UUID
	path string // the ledger file
}

// newReplayFixture builds the fixture of n records once per process (the
// restore benchmark adds a few records to it each time: negligible).
func newReplayFixture(b *testing.B, n int) replayFixture { return newReplayFixtureT(b, n) }

func newReplayFixtureT(b testing.TB, n int) replayFixture {
	b.Helper()
	fixturesMu.Lock()
	defer fixturesMu.Unlock()
	key := fmt.Sprint("replay/", n)
	if fx, ok := replayFixtures[key]; ok {
		return fx
	}
	root, err := fixtureRoot()
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(root, fmt.Sprint("replay-", n))
	os.RemoveAll(dir)
	t0 := time.Now()
	defer func() { b.Logf("fixture: a %d-record journal in %v", n, time.Since(t0).Round(time.Millisecond)) }()
	st := openStore(b, dir)
	defer st.Close()
	r := defineRig(b, st)
	id, loop := realSession(b, r, "replay")
	appendLongTurn(b, st, id, loop, n, false)
	fx := replayFixture{dir: dir, id: id, path: filepath.Join(dir, "ledgers", "sessions", id.String()+".log")}
	replayFixtures[key] = fx
	return fx
}

var replayFixtures = map[string]replayFixture{}

// wireRecord is the journal record as a plain encoding/json program would
// decode it.
type wireRecord struct {
	V      int    `json:"v"`
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	Epoch  uint64 `json:"epoch"`
	LoopID string `json:"loop_id"`
	Event  *struct {
		V    int             `json:"v"`
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	} `json:"event"`
	Command json.RawMessage `json:"command"`
	At      time.Time       `json:"at"`
}

// rawReplay is the baseline: read the ledger file sequentially with a
// plain read loop, check every frame (magic, length, sequence, CRC-32C),
// and decode every record with encoding/json, the event's data into its
// Go type. It returns the number of records.
func rawReplay(tb testing.TB, path string) int {
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20+(1<<20+64))
	n, off := 0, 0
	var seq uint64
	for {
		k, err := f.Read(buf[n:])
		n += k
		if err != nil && err != io.EOF {
			tb.Fatal(err)
		}
		for n-off >= 28 {
			h := buf[off:]
			if string(h[:4]) != "LRf1" {
				tb.Fatalf("bad magic at record %d", seq+1)
			}
			size := 28 + int(binary.LittleEndian.Uint32(h[4:8]))
			if n-off < size {
				break
			}
			if binary.LittleEndian.Uint64(h[8:16]) != seq+1 {
				tb.Fatalf("sequence gap at %d", seq+1)
			}
			if crc32.Checksum(h[:size-4], castagnoli) != binary.LittleEndian.Uint32(h[size-4:size]) {
				tb.Fatalf("bad checksum at record %d", seq+1)
			}
			decodeWire(tb, h[24:size-4])
			seq++
			off += size
		}
		if err == io.EOF {
			break
		}
		n = copy(buf, buf[off:n])
		off = 0
	}
	return int(seq)
}

func decodeWire(tb testing.TB, payload []byte) {
	var w wireRecord
	if err := json.Unmarshal(payload, &w); err != nil {
		tb.Fatal(err)
	}
	if w.Event != nil {
		z, ok := event.Zero(event.Type(w.Event.Type))
		if !ok {
			tb.Fatalf("unknown event type %q", w.Event.Type)
		}
		v := reflect.New(reflect.TypeOf(z))
		if err := json.Unmarshal(w.Event.Data, v.Interface()); err != nil {
			tb.Fatal(err)
		}
	}
}

var replaySizes = []struct {
	name string
	n    int
}{{"10k", 10_000}, {"100k", 100_000}, {"1m", 1_000_000}}

// BenchmarkReplay: a full journal replay (journal.NewReplayer from record
// 1, every record decoded) on a freshly opened store, so the ledger file is
// opened and validated as a new process would, against rawReplay over the
// same file. Target (docs/ARCHITECTURE.md, "Performance figures"): ≥ 0.5 ×
// the raw loop.
//
// Metrics: ours-ms, base-ms (per full replay), ratio (base/ours),
// records.
func BenchmarkReplay(b *testing.B) {
	for _, sz := range replaySizes {
		b.Run("records="+sz.name, func(b *testing.B) {
			rounds := pick(3, 5)
			if sz.n >= 1_000_000 {
				rounds = pick(1, 3)
				onceInQuick(b)
			}
			for range b.N {
				fx := newReplayFixture(b, sz.n)
				name := storage.SessionName(fx.id.String())
				var ours, base side
				var records int
				interleave(rounds, func() {
					t0 := time.Now()
					st := openStore(b, fx.dir)
					rp, err := journal.NewReplayer(bg, st, name, 0)
					if err != nil {
						b.Fatal(err)
					}
					n := 0
					for rp.Next() {
						n++
					}
					if err := rp.Err(); err != nil {
						b.Fatal(err)
					}
					rp.Close()
					st.Close()
					ours.add(1, time.Since(t0))
					records = n
				}, func() {
					t0 := time.Now()
					n := rawReplay(b, fx.path)
					base.add(1, time.Since(t0))
					if records != 0 && n != records {
						b.Fatalf("raw replay read %d records, the journal %d", n, records)
					}
				})
				b.ReportMetric(ours.perOp()/1e3, "ours-ms")
				b.ReportMetric(base.perOp()/1e3, "base-ms")
				b.ReportMetric(base.perOp()/ours.perOp(), "ratio")
				b.ReportMetric(float64(records), "records")
			}
		})
	}
}

// BenchmarkRestore: rig.RestoreSession of a stopped session whose journal
// holds a long turn (10k, 100k, 1M records), then Shutdown, each on a
// freshly opened store, against rawReplay over the same file. Target
// (docs/ARCHITECTURE.md, "Performance figures"): a 100k-record session
// restores in ≤ 1 s.
//
// Metrics: ours-ms, base-ms, ratio (base/ours), alloc-MB (bytes allocated
// by one restore); and from one more restore, in a child process that only
// opens the store and restores, with GOGC=20: peak-live-MB (the peak of
// the live heap, measured at each collection) and peak-heap-MB (the peak of
// the heap's objects, live and not yet collected).
func BenchmarkRestore(b *testing.B) {
	for _, sz := range replaySizes {
		b.Run("records="+sz.name, func(b *testing.B) {
			rounds := pick(3, 5)
			if sz.n >= 1_000_000 {
				rounds = pick(1, 3)
				onceInQuick(b)
			}
			for range b.N {
				fx := newReplayFixture(b, sz.n)
				var ours, base side
				restore := func() {
					st := openStore(b, fx.dir)
					r := defineRig(b, st)
					s, err := r.RestoreSession(bg, fx.id)
					if err != nil {
						b.Fatal(err)
					}
					if err := s.Shutdown(bg); err != nil {
						b.Fatal(err)
					}
					st.Close()
				}
				var alloc uint64
				interleave(rounds, func() {
					a0 := allocBytes()
					t0 := time.Now()
					restore()
					ours.add(1, time.Since(t0))
					alloc += allocBytes() - a0
				}, func() {
					t0 := time.Now()
					rawReplay(b, fx.path)
					base.add(1, time.Since(t0))
				})
				// Memory, on one more (untimed) restore in a fresh process
				// that does nothing else (see restoreMemoryChild).
				peak, peakLive := restoreMemoryChild(b, fx)
				b.ReportMetric(ours.perOp()/1e3, "ours-ms")
				b.ReportMetric(base.perOp()/1e3, "base-ms")
				b.ReportMetric(base.perOp()/ours.perOp(), "ratio")
				b.ReportMetric(float64(alloc)/float64(ours.ops)/(1<<20), "alloc-MB")
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
				b.ReportMetric(float64(peakLive)/(1<<20), "peak-live-MB")
			}
		})
	}
}

// restoreMemoryEnv names the store and session a TestRestoreMemoryChild
// process restores.
const restoreMemoryEnv = "LOOPRIG_RESTOREMEM"

// restoreMemoryChild restores fx's session once in a child process (this
// test binary running TestRestoreMemoryChild) with the collector running
// often (GOGC=20), so the live heap measured at each collection tracks the
// restore's working set, and nothing an earlier benchmark left on the heap,
// or frees meanwhile, moves the figures. It returns the peaks of the heap's
// objects and of the live heap, in bytes: of the whole child process, whose
// own start is well under a megabyte.
func restoreMemoryChild(tb testing.TB, fx replayFixture) (peak, peakLive uint64) {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRestoreMemoryChild$", "-test.v", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), restoreMemoryEnv+"="+fx.dir+"|"+fx.id.String(), "GOGC=20")
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("restore memory child: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if i := strings.Index(line, "restoremem:"); i >= 0 {
			if _, err := fmt.Sscanf(line[i:], "restoremem: peak-heap=%d peak-live=%d", &peak, &peakLive); err != nil {
				tb.Fatalf("restore memory child: %q: %v", line, err)
			}
			return peak, peakLive
		}
	}
	tb.Fatalf("restore memory child printed no figures:\n%s", out)
	return
}

// TestRestoreMemoryChild is restoreMemoryChild's other half; it runs only
// in the child process.
func TestRestoreMemoryChild(t *testing.T) {
	spec := os.Getenv(restoreMemoryEnv)
	if spec == "" {
		t.Skip("runs only as BenchmarkRestore's child process")
	}
	dir, idText, _ := strings.Cut(spec, "|")
	id, err := uuid.Parse(idText)
	if err != nil {
		t.Fatal(err)
	}
	h := startHeap()
	st := openStore(t, dir)
	r := defineRig(t, st)
	s, err := r.RestoreSession(bg, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(bg); err != nil {
		t.Fatal(err)
	}
	h.sample()
	h.Stop()
	st.Close()
	// Whole-process peaks: the baseline is this process's start, not the
	// moment before the restore (the store's open is part of a restore).
	t.Logf("restoremem: peak-heap=%d peak-live=%d", h.peak.Load(), h.peakLive.Load())
}

var ranOnce sync.Map

// onceInQuick skips b in quick mode after its first run in this process
// (-count > 1): the 1M-record figures take most of a quick run's time.
func onceInQuick(b *testing.B) {
	if _, loaded := ranOnce.LoadOrStore(b.Name(), true); loaded && quick() {
		b.Skip("quick mode: the 1M-record figures run once")
	}
}
