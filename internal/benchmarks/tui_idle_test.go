package benchmarks

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/internal/tmuxtest"
	"looprig/rig"
	"looprig/tui"
)

// tuiIdleBaselineEnv asks TestTUIIdleBaseline to run as BenchmarkTUIIdle's
// baseline over the store it names.
const tuiIdleBaselineEnv = "LOOPRIG_BENCH_TUI_IDLE_STORE"

// TestTUIIdleBaseline is not a test: BenchmarkTUIIdle runs this test
// binary with $LOOPRIG_BENCH_TUI_IDLE_STORE set, and then it does what the
// TUI did every second before it watched the store's change stamp: list
// every session (rig.ListSessions), once a second, until killed.
func TestTUIIdleBaseline(t *testing.T) {
	dir := os.Getenv(tuiIdleBaselineEnv)
	if dir == "" {
		t.Skip("a helper of BenchmarkTUIIdle")
	}
	st := openStore(t, dir)
	defer st.Close()
	for {
		if _, err := rig.ListSessions(bg, st); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
}

// tuiIdleFloorEnv asks TestTUIIdleFloor to run as BenchmarkTUIIdle's
// floor.
const tuiIdleFloorEnv = "LOOPRIG_BENCH_TUI_IDLE_FLOOR"

// TestTUIIdleFloor is not a test: BenchmarkTUIIdle runs this test binary in
// a tmux pane with $LOOPRIG_BENCH_TUI_IDLE_FLOOR set, and then it is the
// least a Bubble Tea program costs: one line of text, no timers, drawn at
// the TUI's frame rate (tui.FPS), until killed.
func TestTUIIdleFloor(t *testing.T) {
	if os.Getenv(tuiIdleFloorEnv) == "" {
		t.Skip("a helper of BenchmarkTUIIdle")
	}
	if _, err := tea.NewProgram(floorModel{}, tea.WithAltScreen(), tea.WithFPS(tui.FPS)).Run(); err != nil {
		t.Fatal(err)
	}
}

type floorModel struct{}

func (floorModel) Init() tea.Cmd                         { return nil }
func (f floorModel) Update(tea.Msg) (tea.Model, tea.Cmd) { return f, nil }
func (floorModel) View() string                          { return "floor" }

// BenchmarkTUIIdle: the real TUI (the built command in a tmux pane, 200×60)
// over a store of 1,000 idle sessions, left alone for a window (5 s with
// -short, 60 s otherwise, or $LOOPRIG_IDLE_SECONDS) after its first frame
// and 3 s to settle: the CPU the TUI's process used in the window. Target
// (docs/ARCHITECTURE.md, "Performance figures"): ≤ 0.5 % of one CPU.
//
// Two processes are watched in the same window: the floor,
// TestTUIIdleFloor in another pane (a Bubble Tea program that draws one
// line, drawn by Bubble Tea's renderer at the TUI's frame rate: what a
// Bubble Tea program costs idle; the TUI draws its own frames, tui/draw,
// and wakes for none while idle), and the baseline, TestTUIIdleBaseline
// (listing the store once a second, as the TUI did before it listed again
// only on a change).
//
// Metrics: cpu-pct (every thread's schedstat, ns), floor-cpu-pct,
// floor-ratio (cpu-pct over floor-cpu-pct; issue 37's target ≤ 1.1),
// own-cpu-pct (cpu-pct minus the floor, at least 1 µs: what looprig adds
// above a Bubble Tea program), base-cpu-pct (the old listing alone),
// ratio (base/own).
func BenchmarkTUIIdle(b *testing.B) {
	if _, err := exec.LookPath("tmux"); err != nil {
		b.Skip("tmux is not installed")
	}
	bin := looprigBinary(b)
	fx := manySessions(b, 1_000, 0)
	window := idleWindow()
	for range b.N {
		home := shortPrivateDir(b)
		tm := tmuxtest.New(b)
		env := fmt.Sprintf("HOME=%q XDG_CONFIG_HOME=%q XDG_STATE_HOME=%q XDG_RUNTIME_DIR=%q TERM=xterm-256color",
			home, filepath.Join(home, "config"), filepath.Join(home, "state"), home)
		tm.Run("new-session", "-d", "-s", "idle", "-x", "200", "-y", "60",
			"sh", "-c", fmt.Sprintf("exec env %s %q --store %q", env, bin, fx.Dir))
		tm.Run("new-session", "-d", "-s", "floor", "-x", "200", "-y", "60",
			"sh", "-c", fmt.Sprintf("exec env %s=1 %q -test.run='^TestTUIIdleFloor$'", tuiIdleFloorEnv, os.Args[0]))
		func() {
			defer tm.Kill()
			pid, err := strconv.Atoi(tm.Display("idle", "#{pane_pid}"))
			if err != nil {
				b.Fatal(err)
			}
			floorPID, err := strconv.Atoi(tm.Display("floor", "#{pane_pid}"))
			if err != nil {
				b.Fatal(err)
			}
			for deadline := time.Now().Add(30 * time.Second); !strings.Contains(tm.Screen("idle"), "benchmark session"); {
				if time.Now().After(deadline) {
					b.Fatalf("the TUI showed no session within 30 s:\n%s", tm.Screen("idle"))
				}
				time.Sleep(50 * time.Millisecond)
			}
			base := exec.Command(os.Args[0], "-test.run=^TestTUIIdleBaseline$")
			base.Env = append(os.Environ(), tuiIdleBaselineEnv+"="+fx.Dir)
			if err := base.Start(); err != nil {
				b.Fatal(err)
			}
			defer func() {
				base.Process.Kill()
				base.Wait()
			}()
			time.Sleep(3 * time.Second)
			used := cpuOver(b, window, pid, base.Process.Pid, floorPID)
			tui, baseline, floor := used[0], used[1], used[2]
			own := max(tui.ns-floor.ns, time.Microsecond)
			b.ReportMetric(tui.pct(tui.ns), "cpu-pct")
			b.ReportMetric(tui.pct(floor.ns), "floor-cpu-pct")
			b.ReportMetric(float64(tui.ns)/float64(max(floor.ns, 1)), "floor-ratio")
			b.ReportMetric(tui.pct(own), "own-cpu-pct")
			b.ReportMetric(tui.pct(baseline.ns), "base-cpu-pct")
			b.ReportMetric(float64(baseline.ns)/float64(own), "ratio")
		}()
	}
}
