package benchmarks

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"looprig/internal/testbin"
	"looprig/rig"
	"looprig/tui"
)

// rawList is the listing baseline: os.ReadDir of the catalog directory and
// one small-file read per session. It returns the number of entries read.
func rawList(tb testing.TB, storeDir string) int {
	dir := filepath.Join(storeDir, "kv", "sessions")
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "catalog.kv"))
		if err != nil {
			tb.Fatal(err)
		}
		n += min(1, len(b))
	}
	return n
}

var listSizes = []struct {
	name string
	n    int
}{{"1k", 1_000}, {"10k", 10_000}}

// bigRecords is the length of the long session in the 10k-session store:
// the scale check of docs/ARCHITECTURE.md, "Performance figures" (1M
// records; 100k in quick mode).
func bigRecords(n int) int {
	if n < 10_000 {
		return 0
	}
	return pick(100_000, 1_000_000)
}

// BenchmarkList: rig.ListSessions (catalog entries plus one batch lease
// probe) over 1k and 10k sessions on a freshly opened store, against
// rawList over the same store.
//
// Metrics: ours-ms, base-ms, ratio (base/ours), sessions.
func BenchmarkList(b *testing.B) {
	for _, sz := range listSizes {
		b.Run("sessions="+sz.name, func(b *testing.B) {
			fx := manySessions(b, sz.n, bigRecords(sz.n))
			rounds := pick(5, 10)
			for range b.N {
				var ours, base side
				var listed int
				interleave(rounds, func() {
					t0 := time.Now()
					st := openStore(b, fx.Dir)
					infos, err := rig.ListSessions(bg, st)
					if err != nil {
						b.Fatal(err)
					}
					st.Close()
					ours.add(1, time.Since(t0))
					listed = len(infos)
				}, func() {
					t0 := time.Now()
					rawList(b, fx.Dir)
					base.add(1, time.Since(t0))
				})
				if listed != len(fx.IDs) {
					b.Fatalf("listed %d sessions, the store has %d", listed, len(fx.IDs))
				}
				b.ReportMetric(ours.perOp()/1e3, "ours-ms")
				b.ReportMetric(base.perOp()/1e3, "base-ms")
				b.ReportMetric(base.perOp()/ours.perOp(), "ratio")
				b.ReportMetric(float64(listed), "sessions")
			}
		})
	}
}

// looprigBinary is the looprig command, built once per process.
func looprigBinary(tb testing.TB) string { return testbin.Looprig(tb) }

// BenchmarkLsJSON: the built command `looprig --store DIR ls --json` (a new
// process: start, open the store, list, print) over the 10k-session store,
// against rawList in this process. Target (docs/ARCHITECTURE.md,
// "Performance figures"): ≤ 0.5 s at 10k sessions.
//
// Metrics: ours-ms (per command), base-ms, ratio (base/ours), bytes (of
// JSON printed).
func BenchmarkLsJSON(b *testing.B) {
	bin := looprigBinary(b)
	fx := manySessions(b, 10_000, bigRecords(10_000))
	rounds := pick(5, 10)
	env := append(os.Environ(), "XDG_CONFIG_HOME="+b.TempDir())
	for range b.N {
		var ours, base side
		var out bytes.Buffer
		interleave(rounds, func() {
			out.Reset()
			cmd := exec.Command(bin, "--store", fx.Dir, "ls", "--json")
			cmd.Env = env
			cmd.Stdout = &out
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			t0 := time.Now()
			if err := cmd.Run(); err != nil {
				b.Fatalf("looprig ls --json: %v\n%s", err, stderr.String())
			}
			ours.add(1, time.Since(t0))
		}, func() {
			t0 := time.Now()
			rawList(b, fx.Dir)
			base.add(1, time.Since(t0))
		})
		if n := strings.Count(out.String(), `"short_id"`); n != len(fx.IDs) {
			b.Fatalf("ls --json printed %d sessions, the store has %d", n, len(fx.IDs))
		}
		b.ReportMetric(ours.perOp()/1e3, "ours-ms")
		b.ReportMetric(base.perOp()/1e3, "base-ms")
		b.ReportMetric(base.perOp()/ours.perOp(), "ratio")
		b.ReportMetric(float64(out.Len()), "bytes")
	}
}

// frameWatch wraps the TUI model and notes when a rendered frame first
// contains want.
type frameWatch struct {
	tea.Model
	want string
	seen chan struct{}
	once *sync.Once
}

func (w frameWatch) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := w.Model.Update(msg)
	w.Model = m
	return w, cmd
}

func (w frameWatch) View() string {
	v := w.Model.View()
	if strings.Contains(v, w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return v
}

// firstFrame starts the TUI (200×60) on the store in dir and returns how
// long it took until a frame showed the session titled want, with the
// program still running; stop ends it.
func firstFrame(tb testing.TB, dir, want string) (d time.Duration, stop func()) {
	tb.Helper()
	t0 := time.Now()
	st := openStore(tb, dir)
	opts := tui.Options{Store: st, StoreDir: dir, Workspaces: st.WorkspacesDir()}
	w := frameWatch{Model: tui.New(opts), want: want, seen: make(chan struct{}), once: new(sync.Once)}
	tm := teatest.NewTestModel(tb, w, teatest.WithInitialTermSize(200, 60))
	// Drain the fake terminal for as long as the program runs: its buffer
	// would otherwise keep every frame, which is not the TUI's memory.
	drained := make(chan struct{})
	go drain(tm.Output(), drained)
	select {
	case <-w.seen:
	case <-time.After(60 * time.Second):
		tb.Fatalf("no frame showed %q within a minute", want)
	}
	d = time.Since(t0)
	return d, func() {
		tm.Send(tea.QuitMsg{})
		tm.WaitFinished(tb, teatest.WithFinalTimeout(20*time.Second))
		close(drained)
		st.Close()
	}
}

// drain reads r (a buffer that reports EOF when empty) until stop.
func drain(r io.Reader, stop <-chan struct{}) {
	buf := make([]byte, 64<<10)
	for {
		if n, _ := r.Read(buf); n == 0 {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
}

// BenchmarkTUIFirstFrame: from opening the store to the TUI's first frame
// that shows the listing (the newest session's title), over the 10k-session
// store, against rawList. Target (docs/ARCHITECTURE.md, "Performance
// figures"): ≤ 1 s at 10k sessions.
//
// Metrics: ours-ms, base-ms, ratio (base/ours).
func BenchmarkTUIFirstFrame(b *testing.B) {
	fx := manySessions(b, 10_000, bigRecords(10_000))
	want := "benchmark session 9999"
	if fx.Big != "" {
		want = "the long one"
	}
	rounds := pick(3, 6)
	for range b.N {
		var ours, base side
		interleave(rounds, func() {
			d, stop := firstFrame(b, fx.Dir, want)
			ours.add(1, d)
			stop()
		}, func() {
			t0 := time.Now()
			rawList(b, fx.Dir)
			base.add(1, time.Since(t0))
		})
		b.ReportMetric(ours.perOp()/1e3, "ours-ms")
		b.ReportMetric(base.perOp()/1e3, "base-ms")
		b.ReportMetric(base.perOp()/ours.perOp(), "ratio")
	}
}

// tuiMemory starts the TUI on the store in dir, waits for the frame that
// shows want (the long session, which is the newest and so selected: the
// TUI reads its journal into the events pane), and for hold collects
// garbage every 250 ms and reads the live heap. It returns the first
// frame's delay and the live heap's peak above where it was before the TUI
// started: what the TUI keeps, not what it has yet to collect.
func tuiMemory(tb testing.TB, dir, want string, hold time.Duration) (d time.Duration, peakLive uint64) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	d, stop := firstFrame(tb, dir, want)
	for end := time.Now().Add(hold); time.Now().Before(end); {
		time.Sleep(250 * time.Millisecond)
		runtime.GC()
		runtime.ReadMemStats(&ms)
		peakLive = max(peakLive, ms.HeapAlloc-min(base, ms.HeapAlloc))
	}
	stop()
	return d, peakLive
}

// tuiMemoryEnv names the store a TestTUIMemoryChild process measures.
const tuiMemoryEnv = "LOOPRIG_TUIMEM_STORE"

// tuiMemoryChild runs tuiMemory in a fresh process (this test binary
// running TestTUIMemoryChild), so that nothing an earlier benchmark left
// on the heap, or frees meanwhile, moves the figure: it is the memory of a
// process that only runs the TUI. It returns the first frame's delay, the
// live heap's peak above the start, and the process's peak resident set
// (VmHWM).
func tuiMemoryChild(tb testing.TB, dir string, hold time.Duration) (d time.Duration, peakLive, peakRSS uint64) {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTUIMemoryChild$", "-test.v", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), tuiMemoryEnv+"="+dir, "LOOPRIG_TUIMEM_HOLD="+hold.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("TUI memory child: %v\n%s", err, out)
	}
	var firstUS int64
	for _, line := range strings.Split(string(out), "\n") {
		if i := strings.Index(line, "tuimem:"); i >= 0 {
			if _, err := fmt.Sscanf(line[i:], "tuimem: first-frame-us=%d peak-live=%d peak-rss=%d", &firstUS, &peakLive, &peakRSS); err != nil {
				tb.Fatalf("TUI memory child: %q: %v", line, err)
			}
			return time.Duration(firstUS) * time.Microsecond, peakLive, peakRSS
		}
	}
	tb.Fatalf("TUI memory child printed no figures:\n%s", out)
	return
}

// TestTUIMemoryChild is tuiMemoryChild's other half; it runs only in the
// child process.
func TestTUIMemoryChild(t *testing.T) {
	dir := os.Getenv(tuiMemoryEnv)
	if dir == "" {
		t.Skip("runs only as BenchmarkTUIMemory's child process")
	}
	hold, err := time.ParseDuration(os.Getenv("LOOPRIG_TUIMEM_HOLD"))
	if err != nil {
		t.Fatal(err)
	}
	d, live := tuiMemory(t, dir, "the long one", hold)
	t.Logf("tuimem: first-frame-us=%d peak-live=%d peak-rss=%d", d.Microseconds(), live, peakRSS(t))
}

// peakRSS is this process's peak resident set size (VmHWM), in bytes.
func peakRSS(tb testing.TB) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb uint64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err != nil {
				tb.Fatalf("VmHWM: %q: %v", line, err)
			}
			return kb << 10
		}
	}
	tb.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// BenchmarkTUIMemory: the TUI over the 10k-session store whose newest
// session holds a long turn (1M records; 100k in quick mode): the first
// frame, then the live heap's peak while the TUI reads that session's
// journal into its events pane (bounded by the pane's ring, whatever the
// journal's length), and the process's peak resident set. Measured in a
// child process that runs only the TUI (see tuiMemoryChild). Target
// (docs/ARCHITECTURE.md, "Performance figures"): memory bounded, a live
// heap ≤ 256 MB and a peak RSS ≤ 512 MB.
//
// Metrics: first-frame-ms, peak-live-MB, peak-rss-MB.
func BenchmarkTUIMemory(b *testing.B) {
	fx := manySessions(b, 10_000, bigRecords(10_000))
	for range b.N {
		d, peakLive, rss := tuiMemoryChild(b, fx.Dir, pick(3*time.Second, 10*time.Second))
		b.ReportMetric(float64(d.Microseconds())/1e3, "first-frame-ms")
		b.ReportMetric(float64(peakLive)/(1<<20), "peak-live-MB")
		b.ReportMetric(float64(rss)/(1<<20), "peak-rss-MB")
	}
}
