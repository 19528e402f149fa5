package benchmarks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"looprig/internal/tmuxtest"
)

// scaleHostsEnv sets how many live sessions BenchmarkScaleLive keeps
// (scripts/bench --scale sets 1000); unset, it is skipped, so that the
// default runs do not start a thousand hosts.
const scaleHostsEnv = "LOOPRIG_BENCH_HOSTS"

// scaleHosts is $LOOPRIG_BENCH_HOSTS, 0 when unset or not a count.
func scaleHosts() int {
	n, err := strconv.Atoi(os.Getenv(scaleHostsEnv))
	if err != nil || n < 2 {
		return 0
	}
	return n
}

// BenchmarkScaleLive: issue 37's figures at $LOOPRIG_BENCH_HOSTS live
// sessions (1,000 with scripts/bench --scale), each in its own background
// host: half idle shells, half running a turn that prints a line a second
// (vmstat 1: one process, no fork a second). tmux holds as many panes in
// the same run (cat, and vmstat 1 in a few, attach's baseline). Measured,
// once the machine settled:
//
//   - pss-kB: the median PSS of an idle host (smaps_rollup);
//   - idle-hosts-cpu-pct: the CPU all idle hosts used together over the
//     window ($LOOPRIG_IDLE_SECONDS, 30 s here by default), % of a core;
//   - ls-ms / tmux-ls-ms / ls-ratio: medians of 10 interleaved rounds;
//   - tui-cpu-pct / floor-cpu-pct / tui-ratio: the TUI (200×60 tmux pane)
//     idle over the window against a bare Bubble Tea program at the same
//     frame rate (TestTUIIdleFloor) in the same window;
//   - tui-first-frame-ms: from starting the TUI to a frame showing live
//     rows (the pane read every 5 ms, included), once a TUI ran on the
//     store before and an ls kept its listing; tui-first-ever-frame-ms,
//     the store's first TUI (a full listing);
//   - tui-key-p99-ms / capture-pane-ms: a key that moves the TUI's
//     selection to the pane showing it, the second slowest of 40, and one
//     capture-pane (read in a loop: included in each);
//   - tui-pty-key-p50-ms / -p99-ms / -max-ms: the same key to the TUI's
//     next output in a pseudo-terminal of its own (no tmux in between),
//     100 keys: the median, the p99 by nearest rank, the slowest;
//   - attach-p99-ms / tmux-attach-p99-ms / attach-ratio: from starting
//     `looprig attach` on a printing session (or `tmux attach` to a pane
//     printing the same) in a tmux pane to its first line of output, the
//     slowest of 10;
//   - restore-all-s / restored: every host SIGKILLed, then `looprig
//     restore --all-crashed` of them all, each restored exactly once.
//
// Every process it starts is stopped at the end (SIGTERM, then SIGKILL).
func BenchmarkScaleLive(b *testing.B) {
	n := scaleHosts()
	if n == 0 {
		b.Skip("set " + scaleHostsEnv + "=1000 (scripts/bench --scale) to run it")
	}
	window := 30 * time.Second
	if os.Getenv("LOOPRIG_IDLE_SECONDS") != "" {
		window = idleWindow()
	}
	t0 := time.Now()
	ls := startLiveStore(b, n)
	b.Logf("%d hosts started in %s", n, time.Since(t0).Round(time.Millisecond))
	ids := ls.ids(b)
	printing := ids[:n/2]
	for _, id := range printing {
		if _, err := ls.run("run", id, "--detach", "--", "vmstat", "1"); err != nil {
			b.Fatal(err)
		}
	}
	idle := ls.idlePIDs(b, printing)
	tm := tmuxtest.New(b)
	const tmuxPrinting = 10
	for i := range n {
		cmd := "cat"
		if i < tmuxPrinting {
			cmd = "vmstat 1"
		}
		tm.Run("new-session", "-d", "-s", "s"+strconv.Itoa(i), "sh", "-c", cmd)
	}
	waitQuiet(b, 60*time.Second) // half the sessions print: never quite quiet
	report := func(v float64, unit string) {
		b.Logf("%s %.4g", unit, v) // logged as measured: a later failure keeps it
		b.ReportMetric(v, unit)
	}
	for range b.N {
		report(float64(medianInt(pssOf(b, idle))), "pss-kB")
		use := cpuOver(b, window, idle...)
		var ns time.Duration
		for _, u := range use {
			ns += u.ns
		}
		report(use[0].pct(ns), "idle-hosts-cpu-pct")
		o, base := scaleLs(b, ls, tm, n)
		report(ms(o), "ls-ms")
		report(ms(base), "tmux-ls-ms")
		report(float64(o)/float64(base), "ls-ratio")
		first, tuiPct, floorPct := scaleTUI(b, ls, window)
		report(ms(first), "tui-first-frame-ms")
		report(tuiPct, "tui-cpu-pct")
		report(floorPct, "floor-cpu-pct")
		report(tuiPct/floorPct, "tui-ratio")
		p50, p99, slowest := scalePtyKeys(b, ls)
		report(ms(p50), "tui-pty-key-p50-ms")
		report(ms(p99), "tui-pty-key-p99-ms")
		report(ms(slowest), "tui-pty-key-max-ms")
		ours, theirs := scaleAttach(b, ls, tm, printing, tmuxPrinting)
		report(ms(ours), "attach-p99-ms")
		report(ms(theirs), "tmux-attach-p99-ms")
		report(float64(ours)/float64(theirs), "attach-ratio")
		took, restored := scaleRestoreAll(b, ls, n)
		report(took.Seconds(), "restore-all-s")
		report(float64(restored), "restored")
	}
}

// ids lists the store's sessions.
func (ls *liveStore) ids(b *testing.B) []string {
	b.Helper()
	out, err := ls.run("ls", "--json")
	if err != nil {
		b.Fatal(err)
	}
	var rows []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		b.Fatal(err)
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	slices.Sort(ids)
	return ids
}

// idlePIDs are the pids of the hosts of the sessions not in busy.
func (ls *liveStore) idlePIDs(b *testing.B, busy []string) []int {
	b.Helper()
	out, err := ls.run("ls", "--json")
	if err != nil {
		b.Fatal(err)
	}
	var rows []struct {
		ID     string `json:"id"`
		Holder *struct {
			PID int `json:"pid"`
		} `json:"holder"`
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		b.Fatal(err)
	}
	var pids []int
	for _, r := range rows {
		if r.Holder != nil && !slices.Contains(busy, r.ID) {
			pids = append(pids, r.Holder.PID)
		}
	}
	if len(pids) == 0 {
		b.Fatal("no idle hosts listed")
	}
	return pids
}

// pssOf is each process's PSS in kB (/proc/PID/smaps_rollup).
func pssOf(b *testing.B, pids []int) []int {
	b.Helper()
	var out []int
	for _, pid := range pids {
		f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "Pss:"); ok {
				kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
				out = append(out, kb)
				break
			}
		}
		f.Close()
	}
	return out
}

func medianInt(xs []int) int {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// scaleLs is the median of 10 interleaved rounds of `looprig ls` and
// `tmux ls`, each checked to list all n.
func scaleLs(b *testing.B, ls *liveStore, tm *tmuxtest.Server, n int) (ours, base time.Duration) {
	b.Helper()
	var o, t []time.Duration
	for range 10 {
		t0 := time.Now()
		out, err := ls.run("ls")
		o = append(o, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		if got := strings.Count(string(out), "● live"); got != n {
			b.Fatalf("looprig ls shows %d live sessions, want %d", got, n)
		}
		t0 = time.Now()
		out2 := tm.Run("ls")
		t = append(t, time.Since(t0))
		if got := strings.Count(out2, "\n"); got != n {
			b.Fatalf("tmux ls shows %d sessions, want %d", got, n)
		}
	}
	return median(o), median(t)
}

// scaleTUI starts the TUI and the floor in tmux panes: the time to the
// TUI's first frame with live rows, then both processes' CPU over window
// after 3 s to settle.
func scaleTUI(b *testing.B, ls *liveStore, window time.Duration) (first time.Duration, tuiPct, floorPct float64) {
	b.Helper()
	tm := tmuxtest.New(b)
	defer tm.Kill()
	env := fmt.Sprintf("XDG_RUNTIME_DIR=%q XDG_CONFIG_HOME=%q XDG_STATE_HOME=%q TERM=xterm-256color",
		ls.runtime, filepath.Join(ls.runtime, "config"), filepath.Join(ls.runtime, "state"))
	tm.Run("new-session", "-d", "-s", "floor", "-x", "200", "-y", "60",
		"sh", "-c", fmt.Sprintf("exec env %s=1 %q -test.run='^TestTUIIdleFloor$'", tuiIdleFloorEnv, os.Args[0]))
	start := func(pane string) time.Duration {
		t0 := time.Now()
		tm.Run("new-session", "-d", "-s", pane, "-x", "200", "-y", "60",
			"sh", "-c", fmt.Sprintf("exec env %s %q --store %q", env, ls.bin, ls.store))
		for !strings.Contains(tm.Screen(pane), "● live") {
			if time.Since(t0) > 30*time.Second {
				b.Fatalf("the TUI showed no live session within 30 s:\n%s", tm.Screen(pane))
			}
			time.Sleep(5 * time.Millisecond)
		}
		return time.Since(t0)
	}
	// The store's first TUI makes its files in the store's directory
	// (tui.log, tui/), which moves the store's stamp: it lists in
	// full. Measured is a TUI started as usual, after one ran and an ls
	// kept its listing (rig.Lister.Keep).
	firstEver := start("tui-first")
	b.Logf("tui-first-ever-frame-ms %.4g (the store's first TUI: a full listing)", ms(firstEver))
	b.ReportMetric(ms(firstEver), "tui-first-ever-frame-ms")
	time.Sleep(1500 * time.Millisecond) // its next refresh lists in full
	tm.Send("tui-first", "q")
	confirmed := false
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := tm.Try("has-session", "-t", "tui-first"); err != nil {
			break // it quit, and its session with it
		}
		// With a running turn's session selected (it is attached to
		// show its output), q asks first: the turns go on.
		if !confirmed && strings.Contains(tm.Screen("tui-first"), "Quitting detaches") {
			tm.Send("tui-first", "l")
			tm.Send("tui-first", "Enter")
			confirmed = true
		}
		if time.Now().After(deadline) {
			b.Fatalf("the first TUI did not quit:\n%s", tm.Screen("tui-first"))
		}
	}
	time.Sleep(300 * time.Millisecond) // the store's last change settled
	if _, err := ls.run("ls"); err != nil {
		b.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	first = start("tui")
	pid, err := strconv.Atoi(tm.Display("tui", "#{pane_pid}"))
	if err != nil {
		b.Fatal(err)
	}
	floorPID, err := strconv.Atoi(tm.Display("floor", "#{pane_pid}"))
	if err != nil {
		b.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	keyP99, capture := scaleKeystroke(b, tm, "tui")
	b.Logf("tui-key-p99-ms %.4g (each reading includes a capture-pane, median %.4g ms)", ms(keyP99), ms(capture))
	b.ReportMetric(ms(keyP99), "tui-key-p99-ms")
	b.ReportMetric(ms(capture), "capture-pane-ms")
	time.Sleep(time.Second)
	used := cpuOver(b, window, pid, floorPID)
	return first, used[0].pct(used[0].ns), used[0].pct(used[1].ns)
}

// scalePtyKeys: the TUI in a pseudo-terminal of its own (no tmux, no
// capture-pane in between), 100 keys moving its selection, 60–106 ms
// apart: from a key's write to the TUI's next output
// (BenchmarkTUIKeyFrame's measure), the median, the p99 by nearest rank
// (the second slowest) and the slowest.
func scalePtyKeys(b *testing.B, ls *liveStore) (p50, p99, slowest time.Duration) {
	b.Helper()
	tui := startInPty(b, exec.Command(ls.bin, "--store", ls.store), "XDG_RUNTIME_DIR="+ls.runtime,
		"XDG_CONFIG_HOME="+filepath.Join(ls.runtime, "config"), "XDG_STATE_HOME="+filepath.Join(ls.runtime, "state"))
	defer tui.stop()
	tui.settle(b)
	var lat []time.Duration
	for i := range 100 {
		lat = append(lat, tui.keyLatency(b, []byte{"jk"[i%2]}))
	}
	return nearestRank(lat, 0.5), nearestRank(lat, 0.99), slices.Max(lat)
}

// scaleKeystroke: 40 rounds of a key that moves the TUI's selection (j,
// then k) until the pane shows the change, read with capture-pane in a
// loop; the slowest but one (p99 of 40 is the 40th value, too noisy) and
// the median of one capture-pane, which each reading includes.
func scaleKeystroke(b *testing.B, tm *tmuxtest.Server, pane string) (p99, capture time.Duration) {
	b.Helper()
	var lat, caps []time.Duration
	for i := range 40 {
		key := "j"
		if i%2 == 1 {
			key = "k"
		}
		before := tm.Screen(pane)
		t0 := time.Now()
		tm.Send(pane, key)
		for {
			c0 := time.Now()
			now := tm.Screen(pane)
			caps = append(caps, time.Since(c0))
			if now != before {
				break
			}
			if time.Since(t0) > 5*time.Second {
				b.Fatalf("the TUI did not move its selection on %q within 5 s", key)
			}
		}
		lat = append(lat, time.Since(t0))
		time.Sleep(50 * time.Millisecond)
	}
	slices.Sort(lat)
	slices.Sort(caps)
	return lat[len(lat)-2], caps[len(caps)/2]
}

// scaleAttach: 10 rounds each of `looprig attach` to a printing session
// and `tmux attach` to a pane printing the same (vmstat 1), in a new tmux
// pane, to the first line of vmstat's output on the pane; the slowest of
// each.
func scaleAttach(b *testing.B, ls *liveStore, tm *tmuxtest.Server, printing []string, tmuxPrinting int) (ours, theirs time.Duration) {
	b.Helper()
	outer := tmuxtest.New(b)
	defer outer.Kill()
	// A session that keeps the outer server up between rounds; the
	// inner server is named by its socket's path, whatever TMUX_TMPDIR.
	outer.Run("new-session", "-d", "-s", "keep", "cat")
	inner := tm.Display("s0", "#{socket_path}")
	env := fmt.Sprintf("XDG_RUNTIME_DIR=%q XDG_CONFIG_HOME=%q XDG_STATE_HOME=%q TERM=xterm-256color",
		ls.runtime, filepath.Join(ls.runtime, "config"), filepath.Join(ls.runtime, "state"))
	firstLine := func(name, cmd string) time.Duration {
		t0 := time.Now()
		outer.Run("new-session", "-d", "-s", name, "-x", "120", "-y", "40", "sh", "-c", cmd)
		for !vmstatRow.MatchString(outer.Screen(name)) {
			if time.Since(t0) > 30*time.Second {
				b.Fatalf("%s showed no output within 30 s:\n%s", cmd, outer.Screen(name))
			}
			time.Sleep(5 * time.Millisecond)
		}
		d := time.Since(t0)
		outer.Run("kill-session", "-t", name)
		return d
	}
	var o, t []time.Duration
	for i := range 10 {
		o = append(o, firstLine("a"+strconv.Itoa(i),
			fmt.Sprintf("exec env %s %q --store %q attach %s", env, ls.bin, ls.store, printing[i%len(printing)])))
		t = append(t, firstLine("t"+strconv.Itoa(i),
			fmt.Sprintf("exec env -u TMUX tmux -S %q attach -t s%d", inner, i%tmuxPrinting)))
	}
	return quantile(o, 0.99), quantile(t, 0.99)
}

// vmstatRow is a line of vmstat's figures.
var vmstatRow = regexp.MustCompile(`(?m)^\s*\d+\s+\d+\s+\d+\s+\d+\s+\d+`)

// scaleRestoreAll kills every host (SIGKILL: a machine that went down),
// then times `looprig restore --all-crashed --json`, checking each of the
// n sessions was restored exactly once.
func scaleRestoreAll(b *testing.B, ls *liveStore, n int) (took time.Duration, restored int) {
	b.Helper()
	for _, pid := range ls.pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for deadline := time.Now().Add(30 * time.Second); slices.ContainsFunc(ls.pids, alive); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("hosts still alive 30 s after SIGKILL")
		}
	}
	t0 := time.Now()
	out, err := ls.runFor(10*time.Minute, "restore", "--all-crashed", "--json")
	took = time.Since(t0)
	if err != nil {
		b.Fatal(err)
	}
	seen := map[string]int{}
	var others []string // what was not restored, for the failure
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var r struct {
			ID      string `json:"id"`
			Outcome string `json:"outcome"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			b.Fatalf("restore --all-crashed --json: %v: %s", err, line)
		}
		if r.Outcome == "restored" {
			seen[r.ID]++
			restored++
		} else if len(others) < 5 {
			others = append(others, string(line))
		}
	}
	for id, k := range seen {
		if k != 1 {
			b.Fatalf("session %s restored %d times", id, k)
		}
	}
	if restored != n {
		b.Fatalf("restore --all-crashed restored %d of %d; others: %s", restored, n, strings.Join(others, "\n"))
	}
	return took, restored
}
