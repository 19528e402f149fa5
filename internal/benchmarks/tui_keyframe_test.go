package benchmarks

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/creack/pty"

	"looprig/tui"
)

// tuiKeyFloorEnv asks TestTUIKeyFloor to run as BenchmarkTUIKeyFrame's
// baseline.
const tuiKeyFloorEnv = "LOOPRIG_BENCH_TUI_KEY_FLOOR"

// TestTUIKeyFloor is not a test: BenchmarkTUIKeyFrame runs this test
// binary in a pseudo-terminal with $LOOPRIG_BENCH_TUI_KEY_FLOOR set, and
// then it is a bare Bubble Tea program drawn by Bubble Tea's own renderer
// at the TUI's default frame rate, counting the keys it is sent, until
// killed.
func TestTUIKeyFloor(t *testing.T) {
	if os.Getenv(tuiKeyFloorEnv) == "" {
		t.Skip("a helper of BenchmarkTUIKeyFrame")
	}
	if _, err := tea.NewProgram(keyCountModel{}, tea.WithAltScreen(), tea.WithFPS(tui.FPS)).Run(); err != nil {
		t.Fatal(err)
	}
}

type keyCountModel struct{ keys int }

func (keyCountModel) Init() tea.Cmd { return nil }
func (m keyCountModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if _, ok := msg.(tea.KeyMsg); ok {
		m.keys++
	}
	return m, nil
}
func (m keyCountModel) View() string { return fmt.Sprintf("keys %d", m.keys) }

// BenchmarkTUIKeyFrame: a key to its frame, in a pseudo-terminal of its
// own (200×60, no tmux in between): the real TUI over a store of 1,000
// sessions, j and k moving its selection, against a bare Bubble Tea
// program counting keys, drawn by Bubble Tea's renderer at the same frame
// rate. Rounds interleave the two: 100 keys each (20 with -short), 60–106
// ms apart at random; a key's latency is from its write to the first
// byte the program writes after it (within 200 ms; a key with none
// fails the benchmark). Quantiles are by nearest rank (of 100 keys, p99
// is the second slowest). Target (issue 37): p99 ≤ 16 ms.
//
// Metrics: key-p50-ms, key-p99-ms, key-max-ms (the TUI),
// floor-key-p50-ms, floor-key-p99-ms, p99-ratio (the TUI's p99 over the
// floor's).
func BenchmarkTUIKeyFrame(b *testing.B) {
	bin := looprigBinary(b)
	fx := manySessions(b, 1_000, 0)
	rounds := 100
	if testing.Short() {
		rounds = 20
	}
	for range b.N {
		home := shortPrivateDir(b)
		ours := startInPty(b, exec.Command(bin, "--store", fx.Dir), "HOME="+home,
			"XDG_CONFIG_HOME="+filepath.Join(home, "config"), "XDG_STATE_HOME="+filepath.Join(home, "state"),
			"XDG_RUNTIME_DIR="+home)
		floor := startInPty(b, exec.Command(os.Args[0], "-test.run=^TestTUIKeyFloor$"), tuiKeyFloorEnv+"=1")
		ours.settle(b)
		floor.settle(b)
		var oursD, floorD []time.Duration
		for i := range rounds {
			key := []byte{"jk"[i%2]}
			oursD = append(oursD, ours.keyLatency(b, key))
			floorD = append(floorD, floor.keyLatency(b, key))
		}
		ours.stop()
		floor.stop()
		o50, o99, oMax := ms(nearestRank(oursD, 0.5)), ms(nearestRank(oursD, 0.99)), ms(slices.Max(oursD))
		f50, f99 := ms(nearestRank(floorD, 0.5)), ms(nearestRank(floorD, 0.99))
		b.Logf("key to frame: TUI p50 %.2f p99 %.2f max %.2f ms; bare Bubble Tea p50 %.2f p99 %.2f ms (%d keys each)",
			o50, o99, oMax, f50, f99, rounds)
		b.ReportMetric(o50, "key-p50-ms")
		b.ReportMetric(o99, "key-p99-ms")
		b.ReportMetric(oMax, "key-max-ms")
		b.ReportMetric(f50, "floor-key-p50-ms")
		b.ReportMetric(f99, "floor-key-p99-ms")
		b.ReportMetric(o99/f99, "p99-ratio")
	}
}

// nearestRank is the q-quantile of ds by nearest rank: the value at rank
// ⌈q·n⌉ in ascending order.
func nearestRank(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(max(int(math.Ceil(q*float64(len(s))))-1, 0), len(s)-1)]
}

// ptyProgram is a program running in a pseudo-terminal of its own; the
// times at which its output arrives are sent on reads.
type ptyProgram struct {
	cmd    *exec.Cmd
	master *os.File
	reads  chan time.Time
	done   chan struct{}
	gap    *rand.Rand

	stopped sync.Once
}

// startInPty starts cmd in a new 200×60 pseudo-terminal with env added to
// this process's, and reads its output until it ends; it answers the
// terminal queries a Bubble Tea program may make at start (background
// colour, cursor position), as a terminal would.
func startInPty(tb testing.TB, cmd *exec.Cmd, env ...string) *ptyProgram {
	tb.Helper()
	cmd.Env = append(append(os.Environ(), "TERM=xterm-256color"), env...)
	master, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 200, Rows: 60})
	if err != nil {
		tb.Fatal(err)
	}
	p := &ptyProgram{cmd: cmd, master: master, reads: make(chan time.Time, 4096),
		done: make(chan struct{}), gap: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 37))}
	go func() {
		defer close(p.done)
		buf := make([]byte, 64<<10)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				now := time.Now()
				if bytes.Contains(buf[:n], []byte("\x1b]11;?")) {
					_, _ = master.Write([]byte("\x1b]11;rgb:0000/0000/0000\x1b\\"))
				}
				if bytes.Contains(buf[:n], []byte("\x1b[6n")) {
					_, _ = master.Write([]byte("\x1b[1;1R"))
				}
				select {
				case p.reads <- now:
				default: // nobody is timing a key: dropped
				}
			}
			if err != nil {
				return
			}
		}
	}()
	tb.Cleanup(p.stop)
	return p
}

// settle waits for the program's first output and then for a second
// without any (20 s at most).
func (p *ptyProgram) settle(tb testing.TB) {
	tb.Helper()
	deadline := time.After(20 * time.Second)
	select {
	case <-p.reads:
	case <-deadline:
		tb.Fatalf("%s wrote nothing within 20 s", p.cmd.Path)
	}
	for {
		select {
		case <-p.reads:
		case <-time.After(time.Second):
			return
		case <-deadline:
			tb.Fatalf("%s did not stand still within 20 s", p.cmd.Path)
		}
	}
}

// keyLatency waits 60–106 ms, writes key and returns the time to the
// program's next output.
func (p *ptyProgram) keyLatency(tb testing.TB, key []byte) time.Duration {
	tb.Helper()
	time.Sleep(60*time.Millisecond + time.Duration(p.gap.IntN(47))*time.Millisecond)
	for drained := false; !drained; {
		select {
		case <-p.reads:
		default:
			drained = true
		}
	}
	sent := time.Now()
	if _, err := p.master.Write(key); err != nil {
		tb.Fatal(err)
	}
	timeout := time.After(200 * time.Millisecond)
	for {
		select {
		case at := <-p.reads:
			if at.Before(sent) {
				continue
			}
			return at.Sub(sent)
		case <-timeout:
			tb.Fatalf("%s drew nothing within 200 ms of key %q", p.cmd.Path, key)
		}
	}
}

// stop kills the program and waits for it and its reader (once).
func (p *ptyProgram) stop() {
	p.stopped.Do(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		_ = p.master.Close()
		<-p.done
	})
}
