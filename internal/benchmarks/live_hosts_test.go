package benchmarks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"looprig/internal/tmuxtest"
)

// liveHostCount is how many live sessions the live-store benchmarks keep:
// each in its own background host, as `looprig new --detach` leaves it.
const liveHostCount = 100

// liveStore is a store of sessions live in background hosts (the built
// command), with the environment that finds their sockets.
type liveStore struct {
	bin, store, runtime string
	env                 []string
	pids                []int
}

// startLiveStore starts n sessions in background hosts, 8 at a time, and
// stops them all at the end (SIGTERM, then SIGKILL), whatever happened.
func startLiveStore(b *testing.B, n int) *liveStore {
	b.Helper()
	rt := shortPrivateDir(b)
	ls := &liveStore{bin: looprigBinary(b), store: filepath.Join(rt, "store"), runtime: rt}
	ls.env = append(os.Environ(), "XDG_RUNTIME_DIR="+rt, "XDG_CONFIG_HOME="+filepath.Join(rt, "config"),
		"XDG_STATE_HOME="+filepath.Join(rt, "state"), "XDG_DATA_HOME="+filepath.Join(rt, "data"))
	b.Cleanup(ls.stop)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out, err := ls.run("new", "--scratch", "--detach", "--json")
			var created struct {
				PID int `json:"pid"`
			}
			if err == nil {
				err = json.Unmarshal(out, &created)
			}
			mu.Lock()
			defer mu.Unlock()
			if err == nil && created.PID > 0 {
				ls.pids = append(ls.pids, created.PID)
			} else if firstErr == nil {
				firstErr = fmt.Errorf("looprig new --detach --json: %v: %s", err, out)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	return ls
}

// run runs the built command on the store, within a minute.
func (ls *liveStore) run(args ...string) ([]byte, error) { return ls.runFor(time.Minute, args...) }

// runFor runs the built command on the store, within limit.
func (ls *liveStore) runFor(limit time.Duration, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(bg, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, ls.bin, append([]string{"--store", ls.store}, args...)...)
	cmd.Env = ls.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		err = fmt.Errorf("looprig %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, err
}

func (ls *liveStore) stop() {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		left := 0
		for _, pid := range ls.pids {
			if alive(pid) {
				syscall.Kill(pid, sig)
				left++
			}
		}
		if left == 0 {
			return
		}
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if !slices.ContainsFunc(ls.pids, alive) {
				return
			}
		}
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkLsLive: `looprig ls` (the built command: start, open the store,
// list, find which sessions a host on this machine serves, print) over a
// store of 100 sessions live in background hosts, against `tmux ls` with a
// server of 100 sessions: the same question asked of tmux. Both run in
// turns, 20 times each (10 with -short). Target (issue 24,
// docs/ARCHITECTURE.md "Performance figures"): within 3× tmux.
//
// Metrics: ours-ms, base-ms (medians), ratio (ours/base).
func BenchmarkLsLive(b *testing.B) {
	ls := startLiveStore(b, liveHostCount)
	tm := tmuxtest.New(b)
	for i := range liveHostCount {
		// Each pane runs cat, not the user's login shell, whose rc
		// files may do anything (100 at once of one seen here fought
		// over a lock file for minutes): what is measured is ls.
		tm.Run("new-session", "-d", "-s", "s"+strconv.Itoa(i), "cat")
	}
	// 100 hosts and 100 shells have just started: measure once they have
	// settled, as they are when a user lists them.
	waitQuiet(b, 60*time.Second)
	rounds := pick(10, 20)
	for range b.N {
		var ours, base []time.Duration
		for range rounds {
			t0 := time.Now()
			out, err := ls.run("ls")
			ours = append(ours, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
			if n := strings.Count(string(out), "● live"); n != liveHostCount {
				b.Fatalf("looprig ls shows %d live sessions, want %d:\n%s", n, liveHostCount, out)
			}
			t0 = time.Now()
			out2 := tm.Run("ls")
			base = append(base, time.Since(t0))
			if n := strings.Count(out2, "\n"); n != liveHostCount {
				b.Fatalf("tmux ls shows %d sessions, want %d", n, liveHostCount)
			}
		}
		o, bs := median(ours), median(base)
		b.ReportMetric(float64(o.Microseconds())/1e3, "ours-ms")
		b.ReportMetric(float64(bs.Microseconds())/1e3, "base-ms")
		b.ReportMetric(float64(o)/float64(bs), "ratio")
	}
}

// BenchmarkTUIIdleLive: the real TUI (the built command in a tmux pane,
// 200×60) over a store of 100 sessions live in background hosts, left
// alone for a window (as BenchmarkTUIIdle) after its first frame and 3 s
// to settle: the CPU its process used, and in the same window the floor
// (TestTUIIdleFloor: a Bubble Tea program drawing one line at the TUI's
// frame rate). Target (issue 24): ≤ 0.3 % of one CPU in all.
//
// Metrics: cpu-pct (every thread's schedstat), floor-cpu-pct.
func BenchmarkTUIIdleLive(b *testing.B) {
	ls := startLiveStore(b, liveHostCount)
	window := idleWindow()
	for range b.N {
		tm := tmuxtest.New(b)
		env := fmt.Sprintf("XDG_RUNTIME_DIR=%q XDG_CONFIG_HOME=%q XDG_STATE_HOME=%q TERM=xterm-256color",
			ls.runtime, filepath.Join(ls.runtime, "config"), filepath.Join(ls.runtime, "state"))
		tm.Run("new-session", "-d", "-s", "idle", "-x", "200", "-y", "60",
			"sh", "-c", fmt.Sprintf("exec env %s %q --store %q", env, ls.bin, ls.store))
		tm.Run("new-session", "-d", "-s", "floor", "-x", "200", "-y", "60",
			"sh", "-c", fmt.Sprintf("exec env %s=1 %q -test.run='^TestTUIIdleFloor$'", tuiIdleFloorEnv, os.Args[0]))
		pid, err := strconv.Atoi(tm.Display("idle", "#{pane_pid}"))
		if err != nil {
			b.Fatal(err)
		}
		floorPID, err := strconv.Atoi(tm.Display("floor", "#{pane_pid}"))
		if err != nil {
			b.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); strings.Count(tm.Screen("idle"), "● live") < 10; {
			if time.Now().After(deadline) {
				b.Fatalf("the TUI showed no live sessions within 30 s:\n%s", tm.Screen("idle"))
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(3 * time.Second)
		used := cpuOver(b, window, pid, floorPID)
		b.ReportMetric(used[0].pct(used[0].ns), "cpu-pct")
		b.ReportMetric(used[0].pct(used[1].ns), "floor-cpu-pct")
		tm.Kill()
	}
}
