package benchmarks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/hub"
)

// The host benchmarks (docs/ARCHITECTURE.md, "Hosts" and "Performance
// figures"): a live session served by host.Serve on a real unix socket,
// read by host.Client, against the same session's hub subscription in
// this process (what a client in the session's own process reads), and the
// idle cost of a real background host (`looprig new --detach`).

// genEnv asks TestHostLineGenerator (this test binary, run by a turn) for
// that many lines; genRateEnv is their rate, lines per second.
const (
	genEnv     = "LOOPRIG_BENCH_GEN_LINES"
	genRateEnv = "LOOPRIG_BENCH_GEN_RATE"
	genPrefix  = "lrts "
)

// TestHostLineGenerator is not a test: BenchmarkHostOutputLatency runs this
// test binary as a turn's command, and then it prints $LOOPRIG_BENCH_GEN_LINES
// lines "lrts <unix ns>" at $LOOPRIG_BENCH_GEN_RATE lines/s, one write(2)
// each, the time taken (CLOCK_REALTIME) just before the write. Skipped
// otherwise.
func TestHostLineGenerator(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv(genEnv))
	if err != nil || n <= 0 {
		t.Skip("a helper of BenchmarkHostOutputLatency")
	}
	rate, err := strconv.Atoi(os.Getenv(genRateEnv))
	if err != nil || rate <= 0 {
		rate = 10_000
	}
	interval := time.Second / time.Duration(rate)
	buf := make([]byte, 0, 64)
	start := time.Now()
	for i := range n {
		// Paced against the schedule, not line to line: a late sleep is
		// made up by the lines after it (the rate holds on average).
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		buf = strconv.AppendInt(append(buf[:0], genPrefix...), time.Now().UnixNano(), 10)
		buf = append(buf, '\n')
		if _, err := os.Stdout.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
}

// idleFloorEnv asks TestHostIdleFloor to run as BenchmarkHostIdle's
// baseline, checking the file it names.
const idleFloorEnv = "LOOPRIG_BENCH_IDLE_FLOOR"

// TestHostIdleFloor is not a test: BenchmarkHostIdle runs this test binary
// beside the host as its baseline, the floor of a Go process that only
// does what an idle host's lease watchdog does (every 500 ms, its default
// period: fstat the lock file, lstat its path, read the epoch file) until
// it is killed. Skipped otherwise.
func TestHostIdleFloor(t *testing.T) {
	path := os.Getenv(idleFloorEnv)
	if path == "" {
		t.Skip("a helper of BenchmarkHostIdle")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tick := time.NewTicker(500 * time.Millisecond)
	for range tick.C {
		f.Stat()
		os.Lstat(path)
		os.ReadFile(path)
	}
}

// genCommand is the shell command printing n timestamped lines at rate/s.
func genCommand(n, rate int) string {
	return fmt.Sprintf("%s=%d %s=%d exec %s -test.run='^TestHostLineGenerator$'", genEnv, n, genRateEnv, rate, shQuote(os.Args[0]))
}

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// hostedSession is a live session (shell engine, fsstore) served by
// host.Serve on a unix socket in a short private directory.
type hostedSession struct {
	s      *rig.Session
	path   string
	cancel context.CancelFunc
	served chan error
}

func startHosted(b *testing.B) *hostedSession {
	b.Helper()
	dir := b.TempDir()
	st := openStore(b, filepath.Join(dir, "store"))
	b.Cleanup(func() { st.Close() })
	r, err := rig.Define(rig.WithStore(st), rig.WithProfile(rig.Profile{Name: "bench", Engine: "shell", Placement: rig.PlacementSession}),
		rig.WithWorkspaces(filepath.Join(dir, "ws")))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, time.Minute)
	defer cancel()
	s, err := r.NewSession(ctx)
	if err != nil {
		b.Fatal(err)
	}
	sockDir := shortPrivateDir(b)
	path := filepath.Join(sockDir, "h.sock")
	ln, err := host.Listen(path, false)
	if err != nil {
		b.Fatal(err)
	}
	sctx, scancel := context.WithCancel(bg)
	h := &hostedSession{s: s, path: path, cancel: scancel, served: make(chan error, 1)}
	go func() { h.served <- host.Serve(sctx, s, ln, host.WithVersion("bench")) }()
	b.Cleanup(func() {
		scancel()
		select {
		case <-h.served:
		case <-time.After(time.Minute):
			b.Error("host.Serve did not return")
		}
		ctx, cancel := context.WithTimeout(bg, time.Minute)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			b.Error(err)
		}
	})
	return h
}

// shortPrivateDir is a new 0700 directory with a short path (a socket path
// must fit sun_path), removed at the end.
func shortPrivateDir(tb testing.TB) string {
	tb.Helper()
	d, err := os.MkdirTemp("", "lr")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o700); err != nil {
		tb.Fatal(err)
	}
	return d
}

func (h *hostedSession) dial(b *testing.B) *host.Client {
	b.Helper()
	ctx, cancel := context.WithTimeout(bg, time.Minute)
	defer cancel()
	c, err := host.Dial(ctx, h.path, host.WithClientVersion("bench"))
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func isTurnEnd(env event.Envelope) bool {
	switch env.Event.(type) {
	case event.TurnDone, event.TurnFailed, event.TurnInterrupted:
		return true
	}
	return false
}

// lineClock turns the output deltas one reader receives into latencies:
// for every complete "lrts <ns>" line, the time from its write to the
// delivery of the delta that completed it.
type lineClock struct {
	part []byte
	lat  []time.Duration
}

func (lc *lineClock) feed(text string, at time.Time) {
	lc.part = append(lc.part, text...)
	for {
		i := bytes.IndexByte(lc.part, '\n')
		if i < 0 {
			return
		}
		ln := lc.part[:i]
		if rest, ok := bytes.CutPrefix(ln, []byte(genPrefix)); ok {
			if ns, err := strconv.ParseInt(string(rest), 10, 64); err == nil {
				lc.lat = append(lc.lat, at.Sub(time.Unix(0, ns)))
			}
		}
		lc.part = lc.part[i+1:]
	}
}

// hostReader reads one client's stream until the turn ends, feeding
// stdout deltas to lc when it is not nil, and subscribing again after the
// last sequence it got whenever the host ends the stream as lost (it fell
// behind by a durable event), as every client must.
type hostReader struct {
	c       *host.Client
	st      *host.Stream
	lc      *lineClock
	bytes   int    // delta text received
	dropped uint64 // deltas the host dropped for this client
	resubs  int    // subscriptions lost and opened again
}

func (r *hostReader) read(ctx context.Context) error {
	for {
		env, err := r.st.Next(ctx)
		var lost *host.StreamLostError
		if errors.As(err, &lost) {
			r.dropped += r.st.Dropped()
			r.resubs++
			if r.st, err = r.c.Subscribe(ctx, lost.LastSeq); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		at := time.Now()
		if d, ok := env.Event.(event.OutputDelta); ok {
			r.bytes += len(d.Text)
			if r.lc != nil && d.Stream == event.StreamStdout {
				r.lc.feed(d.Text, at)
			}
		}
		if isTurnEnd(env) {
			r.dropped += r.st.Dropped()
			return nil
		}
	}
}

// readHub is readHost for an in-process hub subscription.
func readHub(ctx context.Context, hs *hub.Subscription, lc *lineClock) (int, error) {
	n := 0
	for {
		batch, ok, err := hs.Next(ctx, 0)
		if err != nil {
			return n, err
		}
		if !ok {
			return n, fmt.Errorf("hub subscription closed: %v", hs.Err())
		}
		at := time.Now()
		for _, env := range batch {
			if d, ok := env.Event.(event.OutputDelta); ok {
				n += len(d.Text)
				if lc != nil && d.Stream == event.StreamStdout {
					lc.feed(d.Text, at)
				}
			}
			if isTurnEnd(env) {
				return n, nil
			}
		}
	}
}

// hostTurn runs input as a turn with clients host clients subscribed (the
// first one submits), each reading until the turn ends; it returns the
// time from the submit to the last client seeing the end, and the readers.
func hostTurn(b *testing.B, h *hostedSession, clients int, input string, clock bool) (time.Duration, []*hostReader) {
	b.Helper()
	ctx, cancel := context.WithTimeout(bg, 5*time.Minute)
	defer cancel()
	rs := make([]*hostReader, clients)
	for i := range rs {
		rs[i] = &hostReader{c: h.dial(b)}
		defer rs[i].c.Close()
		if clock {
			rs[i].lc = &lineClock{}
		}
	}
	stat, err := rs[0].c.Status(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range rs {
		if r.st, err = r.c.Subscribe(ctx, stat.Tip); err != nil {
			b.Fatal(err)
		}
	}
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.read(ctx)
		}()
	}
	t0 := time.Now()
	if _, err := rs[0].c.Submit(ctx, input); err != nil {
		b.Fatal(err)
	}
	wg.Wait()
	d := time.Since(t0)
	for i := range rs {
		if errs[i] != nil {
			b.Fatalf("client %d: %v", i, errs[i])
		}
	}
	return d, rs
}

// hubTurn runs input as a turn read by one hub subscription in this
// process; it returns the time from the submit to the end, the line clock
// and the delta bytes received.
func hubTurn(b *testing.B, h *hostedSession, input string, clock bool) (time.Duration, *lineClock, int) {
	b.Helper()
	ctx, cancel := context.WithTimeout(bg, 5*time.Minute)
	defer cancel()
	hs := h.s.Subscribe(hub.Filter{AllLoops: true})
	defer hs.Close()
	var lc *lineClock
	if clock {
		lc = &lineClock{}
	}
	t0 := time.Now()
	if _, err := h.s.Submit(ctx, input); err != nil {
		b.Fatal(err)
	}
	n, err := readHub(ctx, hs, lc)
	if err != nil {
		b.Fatal(err)
	}
	return time.Since(t0), lc, n
}

// BenchmarkHostOutputLatency: a turn printing timestamped lines at 10k
// lines/s (this test binary as TestHostLineGenerator, one write per line),
// read by 2 clients attached through host.Serve on a unix socket, against
// the same session's hub subscription in this process (no socket, no JSON),
// in interleaved turns. The latency of a line is the time from just before
// its write(2) to the delivery of the delta holding it (Stream.Next or the
// hub's Next returning). Target (docs/ARCHITECTURE.md, "Performance
// figures"): p99 ≤ 20 ms through the host.
//
// Metrics: ours-p50-ms, ours-p99-ms (both clients' lines), base-p50-ms,
// base-p99-ms, ratio (ours p99 / base p99), lines/s (the rate the
// generator reached, as the host's clients saw it), dropped (deltas the
// host dropped for its clients; their lines are not counted), resubs
// (streams lost and subscribed again).
func BenchmarkHostOutputLatency(b *testing.B) {
	const rate = 10_000
	rounds, lines := pick(1, 4), pick(10_000, 30_000) // 1 s / 3 s per turn
	input := genCommand(lines, rate)
	for range b.N {
		h := startHosted(b)
		var ours, base side
		var oursDur time.Duration
		var dropped uint64
		var resubs int
		interleave(rounds, func() {
			d, rs := hostTurn(b, h, 2, input, true)
			for _, r := range rs {
				ours.lat = append(ours.lat, r.lc.lat...)
				ours.ops += len(r.lc.lat)
				dropped += r.dropped
				resubs += r.resubs
			}
			oursDur += d
		}, func() {
			_, lc, _ := hubTurn(b, h, input, true)
			base.lat = append(base.lat, lc.lat...)
			base.ops += len(lc.lat)
		})
		if ours.ops == 0 || base.ops == 0 {
			b.Fatalf("no timestamped line arrived (host %d, hub %d)", ours.ops, base.ops)
		}
		b.ReportMetric(ours.pct(0.50)/1e3, "ours-p50-ms")
		b.ReportMetric(ours.pct(0.99)/1e3, "ours-p99-ms")
		b.ReportMetric(base.pct(0.50)/1e3, "base-p50-ms")
		b.ReportMetric(base.pct(0.99)/1e3, "base-p99-ms")
		b.ReportMetric(ours.pct(0.99)/base.pct(0.99), "ratio")
		b.ReportMetric(float64(ours.ops)/2/oursDur.Seconds(), "lines/s")
		b.ReportMetric(float64(dropped), "dropped")
		b.ReportMetric(float64(resubs), "resubs")
	}
}

// BenchmarkHostThroughput: a `seq 2000000` turn (14.9 MB of output)
// streamed through host.Serve to one client on a unix socket, from the
// submit to the client reading TurnDone, against the same turn read by a
// hub subscription in this process, in interleaved turns. Target
// (docs/ARCHITECTURE.md, "Performance figures"): ≤ 2 × in-process.
//
// Metrics: ours-ms, base-ms (per turn), ratio (ours/base), ours-MB and
// base-MB (delta text received per turn), dropped (deltas the host dropped
// for its client: a client that reads slower than the turn prints loses
// live output), resubs (streams the host ended as lost, a durable event not
// fitting the client's queue, and the client subscribed again after the
// last sequence it got; it loses nothing durable).
func BenchmarkHostThroughput(b *testing.B) {
	rounds := pick(1, 3)
	const input = "seq 2000000"
	for range b.N {
		h := startHosted(b)
		var ours, base side
		var oursB, baseB, resubs int
		var dropped uint64
		interleave(rounds, func() {
			d, rs := hostTurn(b, h, 1, input, false)
			ours.add(1, d)
			oursB += rs[0].bytes
			dropped += rs[0].dropped
			resubs += rs[0].resubs
		}, func() {
			d, _, n := hubTurn(b, h, input, false)
			base.add(1, d)
			baseB += n
		})
		b.ReportMetric(ours.perOp()/1e3, "ours-ms")
		b.ReportMetric(base.perOp()/1e3, "base-ms")
		b.ReportMetric(ours.perOp()/base.perOp(), "ratio")
		b.ReportMetric(float64(oursB)/float64(rounds)/1e6, "ours-MB")
		b.ReportMetric(float64(baseB)/float64(rounds)/1e6, "base-MB")
		b.ReportMetric(float64(dropped), "dropped")
		b.ReportMetric(float64(resubs), "resubs")
	}
}

// idleWindow is how long BenchmarkHostIdle watches the host:
// $LOOPRIG_IDLE_SECONDS, else 5 s with -short (scripts/bench --quick runs
// it 3 times; the CPU time is read in nanoseconds, so 5 s resolves far
// below the target) and 60 s otherwise.
func idleWindow() time.Duration {
	if s, err := strconv.ParseFloat(os.Getenv("LOOPRIG_IDLE_SECONDS"), 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	return pick(5*time.Second, 60*time.Second)
}

// BenchmarkHostIdle: a real background host (`looprig new --detach`, the
// built command, a new session on a temporary store, XDG_RUNTIME_DIR a
// short private directory), left alone with no client for a window (5 s
// with -short, 60 s otherwise, or $LOOPRIG_IDLE_SECONDS) after a second to
// settle: the CPU time the host process used in the window and its
// resident memory at the end. The host is stopped at the end (`looprig
// stop`, then SIGTERM, then SIGKILL), whatever happened. Targets
// (docs/ARCHITECTURE.md, "Performance figures"): ≤ 0.1 % of one CPU, ≤ 25
// MB RSS.
//
// The baseline, watched in the same window, is TestHostIdleFloor: a Go
// process doing only an idle host's lease watchdog checks every 500 ms.
//
// Metrics: cpu-pct (utime+stime from /proc/PID/stat, clock ticks),
// cpu-ns-pct (the same from every thread's /proc/PID/task/*/schedstat, in
// nanoseconds: the precise one), base-cpu-ns-pct (the floor's), ratio
// (ours/base), rss-MB (VmRSS), hwm-MB (VmHWM, the peak).
func BenchmarkHostIdle(b *testing.B) {
	bin := looprigBinary(b)
	window := idleWindow()
	for range b.N {
		rt := shortPrivateDir(b)
		store := filepath.Join(rt, "store")
		env := append(os.Environ(), "XDG_RUNTIME_DIR="+rt, "XDG_CONFIG_HOME="+filepath.Join(rt, "config"),
			"XDG_STATE_HOME="+filepath.Join(rt, "state"), "XDG_DATA_HOME="+filepath.Join(rt, "data"))
		looprig := func(args ...string) ([]byte, error) {
			ctx, cancel := context.WithTimeout(bg, time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, append([]string{"--store", store}, args...)...)
			cmd.Env = env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				err = fmt.Errorf("looprig %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
			}
			return out, err
		}
		out, err := looprig("new", "--scratch", "--detach", "--json")
		var created struct {
			ID  string `json:"id"`
			PID int    `json:"pid"`
		}
		if err == nil {
			err = json.Unmarshal(out, &created)
		}
		if err == nil && created.PID <= 0 {
			err = fmt.Errorf("looprig new --detach --json: no pid in %s", out)
		}
		if err != nil {
			b.Fatal(err)
		}
		pid := created.PID
		stopHost := func() {
			if _, err := looprig("stop", created.ID); err != nil {
				b.Log(err)
			}
			for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
					if !alive(pid) {
						return
					}
				}
				syscall.Kill(pid, sig)
			}
			if alive(pid) {
				b.Errorf("host pid %d outlived SIGKILL", pid)
			}
		}
		func() {
			defer stopHost()
			floorFile := filepath.Join(rt, "floor.epoch")
			if err := os.WriteFile(floorFile, []byte(`{"epoch":1,"pid":1,"host":"h"}`), 0o600); err != nil {
				b.Fatal(err)
			}
			floor := exec.Command(os.Args[0], "-test.run=^TestHostIdleFloor$")
			floor.Env = append(os.Environ(), idleFloorEnv+"="+floorFile)
			if err := floor.Start(); err != nil {
				b.Fatal(err)
			}
			defer func() {
				floor.Process.Kill()
				floor.Wait()
			}()
			time.Sleep(time.Second) // let the host (and the floor) finish starting
			used := cpuOver(b, window, pid, floor.Process.Pid)
			host, fl := used[0], used[1]
			b.ReportMetric(fl.pct(fl.ns), "base-cpu-ns-pct")
			b.ReportMetric(float64(host.ns)/float64(max(fl.ns, 1)), "ratio")
			rss, hwm, err := procMem(pid)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(host.pct(host.ticks), "cpu-pct")
			b.ReportMetric(host.pct(host.ns), "cpu-ns-pct")
			b.ReportMetric(float64(rss)/(1<<20), "rss-MB")
			b.ReportMetric(float64(hwm)/(1<<20), "hwm-MB")
		}()
	}
}

// cpuUse is the CPU time a process used in a window (procCPU's two
// measures) and the window's length.
type cpuUse struct {
	ticks, ns, wall time.Duration
}

// pct is d as a percentage of one core over the window.
func (u cpuUse) pct(d time.Duration) float64 { return 100 * d.Seconds() / u.wall.Seconds() }

// cpuOver watches the processes pids for window and returns, for each, the
// CPU time it used meanwhile.
func cpuOver(tb testing.TB, window time.Duration, pids ...int) []cpuUse {
	tb.Helper()
	sample := func() [][2]time.Duration {
		out := make([][2]time.Duration, len(pids))
		for i, pid := range pids {
			ticks, ns, err := procCPU(pid)
			if err != nil {
				tb.Fatal(err)
			}
			out[i] = [2]time.Duration{ticks, ns}
		}
		return out
	}
	before, w0 := sample(), time.Now()
	time.Sleep(window)
	after, wall := sample(), time.Since(w0)
	use := make([]cpuUse, len(pids))
	for i := range pids {
		use[i] = cpuUse{ticks: after[i][0] - before[i][0], ns: after[i][1] - before[i][1], wall: wall}
	}
	return use
}

// alive reports whether pid names a process that is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || len(b) < i+3 || b[i+2] != 'Z'
}

// clockTick is USER_HZ, the unit of /proc/PID/stat's times (100 on every
// Linux this runs on).
const clockTick = time.Second / 100

// procCPU returns the CPU time pid has used: utime+stime from
// /proc/PID/stat (clock ticks), and the sum of every thread's run time
// from /proc/PID/task/*/schedstat (nanoseconds; threads that ended are not
// counted, which a Go process's threads seldom do).
func procCPU(pid int) (ticks, ns time.Duration, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errors.New("bad /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	// Fields after the command: state is f[0], utime f[11], stime f[12].
	if len(f) < 13 {
		return 0, 0, errors.New("short /proc stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	stt, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, err
	}
	ticks = time.Duration(ut+stt) * clockTick
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, t := range tasks {
		sb, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended
		}
		if sf := strings.Fields(string(sb)); len(sf) > 0 {
			v, _ := strconv.ParseInt(sf[0], 10, 64)
			ns += time.Duration(v)
		}
	}
	return ticks, ns, nil
}

// procMem returns pid's VmRSS and VmHWM in bytes.
func procMem(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, ln := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(ln, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) < 1 {
			continue
		}
		kb, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmRSS":
			rss = kb << 10
		case "VmHWM":
			hwm = kb << 10
		}
	}
	if rss == 0 {
		return 0, 0, errors.New("no VmRSS in /proc status")
	}
	return rss, hwm, nil
}
