package benchmarks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
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
)

// floodEnv asks TestHostFloodGenerator for that many numbers, printed as
// seq prints them.
const floodEnv = "LOOPRIG_BENCH_FLOOD"

// TestHostFloodGenerator is not a test: BenchmarkHostSlowSubscribers runs
// this test binary as a turn's command, and then it prints the numbers 1 to
// $LOOPRIG_BENCH_FLOOD one a line, as `seq` does (in blocks of 4 KiB, as
// fast as the terminal takes them), each block starting with a line
// "lrts <unix ns>" taken just before its write(2), for a reader's line
// clock. Skipped otherwise.
func TestHostFloodGenerator(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv(floodEnv))
	if err != nil || n <= 0 {
		t.Skip("a helper of BenchmarkHostSlowSubscribers")
	}
	const block = 4 << 10
	buf := make([]byte, 0, block+64)
	stamp := func() {
		buf = strconv.AppendInt(append(buf[:0], genPrefix...), time.Now().UnixNano(), 10)
		buf = append(buf, '\n')
	}
	stamp()
	for i := 1; i <= n; i++ {
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, '\n')
		if len(buf) >= block || i == n {
			if _, err := os.Stdout.Write(buf); err != nil {
				t.Fatal(err)
			}
			stamp()
		}
	}
}

// binaryHost is a real background host: `looprig new --detach` of the
// built command on a temporary store, with XDG_RUNTIME_DIR a short private
// directory.
type binaryHost struct {
	pid     int
	id      string
	sock    string
	store   string
	stop    func()                               // stops the host: `looprig stop`, then SIGTERM, then SIGKILL
	looprig func(args ...string) ([]byte, error) // runs the command on the host's store, in its environment
}

// startBinaryHost starts a background host, which its stop or the end of
// the benchmark stops.
func startBinaryHost(b *testing.B) *binaryHost {
	b.Helper()
	bin := looprigBinary(b)
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
	h := &binaryHost{pid: created.PID, id: created.ID, store: store, looprig: looprig}
	var once sync.Once
	h.stop = func() { once.Do(func() { stopBinaryHost(b, h, looprig) }) }
	b.Cleanup(h.stop)
	socks, err := filepath.Glob(filepath.Join(rt, "looprig", "*", created.ID+".sock"))
	if err != nil || len(socks) != 1 {
		b.Fatalf("the host's socket: %v %v", socks, err)
	}
	h.sock = socks[0]
	return h
}

func stopBinaryHost(b *testing.B, h *binaryHost, looprig func(args ...string) ([]byte, error)) {
	if _, err := looprig("stop", h.id); err != nil {
		b.Log(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if !alive(h.pid) {
				return
			}
		}
		syscall.Kill(h.pid, sig)
	}
	if alive(h.pid) {
		b.Errorf("host pid %d outlived SIGKILL", h.pid)
	}
}

// resetPeakRSS makes pid's VmHWM its current RSS (Linux: clear_refs 5).
func resetPeakRSS(tb testing.TB, pid int) {
	tb.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		tb.Fatalf("reset the host's peak RSS: %v", err)
	}
}

// stuckSubscriber connects to the host at path, says hello and subscribes
// after seq, and never reads a byte.
func stuckSubscriber(tb testing.TB, path string, after uint64) net.Conn {
	tb.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		tb.Fatal(err)
	}
	req := fmt.Sprintf("{\"type\":\"hello\",\"protocol\":%d,\"version\":\"bench\"}\n{\"type\":\"subscribe\",\"id\":1,\"after_seq\":%d}\n",
		host.ProtocolVersion, after)
	if _, err := c.Write([]byte(req)); err != nil {
		c.Close()
		tb.Fatal(err)
	}
	return c
}

// BenchmarkHostSlowSubscribers: a real background host (the built command)
// runs a turn printing `seq 1 3000000` (TestHostFloodGenerator: the numbers
// in 4 KiB writes, each write led by a timestamp line; 300,000 numbers with
// -short) while 25 clients subscribed to the session never read, and one
// client (host.Client) reads the stream as attach does. The baseline, in
// interleaved turns on the same host, is the same turn with the reading
// client alone. Targets (docs/ARCHITECTURE.md, "Performance figures"): the
// host's peak RSS ≤ 150 MB, the turn's time ≤ 1.2× the baseline's, the
// reading client's p99 line latency ≤ 2× the baseline's.
//
// Metrics: rss-MB and base-rss-MB (the host's VmHWM during the turn, reset
// before it), ours-ms and base-ms (submit to the reading client seeing the
// turn's end), ratio (ours/base), ours-p99-ms and base-p99-ms (the reading
// client's latency from a timestamp line's write to its delta's delivery),
// p99-ratio, dropped (deltas the host dropped for the reading client) and
// resubs (its streams the host ended and it subscribed again).
func BenchmarkHostSlowSubscribers(b *testing.B) {
	const stuck = 25
	rounds, numbers := pick(1, 3), pick(300_000, 3_000_000)
	input := fmt.Sprintf("%s=%d exec %s -test.run='^TestHostFloodGenerator$'", floodEnv, numbers, shQuote(os.Args[0]))
	for range b.N {
		var ours, base side
		var oursRSS, baseRSS int64
		var dropped uint64
		var resubs int
		interleave(rounds, func() {
			d, r, hwm := slowSubscribersTurn(b, input, stuck)
			ours.add(1, d)
			ours.lat = append(ours.lat, r.lc.lat...)
			oursRSS = max(oursRSS, hwm)
			dropped += r.dropped
			resubs += r.resubs
		}, func() {
			d, r, hwm := slowSubscribersTurn(b, input, 0)
			base.add(1, d)
			base.lat = append(base.lat, r.lc.lat...)
			baseRSS = max(baseRSS, hwm)
		})
		if len(ours.lat) == 0 || len(base.lat) == 0 {
			b.Fatalf("no timestamped line arrived (ours %d, base %d)", len(ours.lat), len(base.lat))
		}
		b.ReportMetric(float64(oursRSS)/1e6, "rss-MB")
		b.ReportMetric(float64(baseRSS)/1e6, "base-rss-MB")
		b.ReportMetric(ours.perOp()/1e3, "ours-ms")
		b.ReportMetric(base.perOp()/1e3, "base-ms")
		b.ReportMetric(ours.perOp()/base.perOp(), "ratio")
		b.ReportMetric(ours.pct(0.99)/1e3, "ours-p99-ms")
		b.ReportMetric(base.pct(0.99)/1e3, "base-p99-ms")
		b.ReportMetric(ours.pct(0.99)/base.pct(0.99), "p99-ratio")
		b.ReportMetric(float64(dropped), "dropped")
		b.ReportMetric(float64(resubs), "resubs")
	}
}

// slowSubscribersTurn runs input as a turn of a new background host, read
// by one client while stuck clients subscribed to it never read; it returns
// the time from the submit to the reader seeing the turn's end, the reader,
// and the host's peak RSS during the turn.
func slowSubscribersTurn(b *testing.B, input string, stuck int) (time.Duration, *hostReader, int64) {
	b.Helper()
	h := startBinaryHost(b)
	defer h.stop()
	ctx, cancel := context.WithTimeout(bg, 5*time.Minute)
	defer cancel()
	c, err := host.Dial(ctx, h.sock, host.WithClientVersion("bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	stat, err := c.Status(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var conns []net.Conn
	defer func() {
		for _, sc := range conns {
			sc.Close()
		}
	}()
	for range stuck {
		conns = append(conns, stuckSubscriber(b, h.sock, stat.Tip))
	}
	r := &hostReader{c: c, lc: &lineClock{}}
	if r.st, err = c.Subscribe(ctx, stat.Tip); err != nil {
		b.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // for the host to read the stuck clients' subscribes
	resetPeakRSS(b, h.pid)
	var rerr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		rerr = r.read(ctx)
	}()
	t0 := time.Now()
	if _, err := c.Submit(ctx, input); err != nil {
		b.Fatal(err)
	}
	<-done
	d := time.Since(t0)
	if rerr != nil {
		b.Fatal(rerr)
	}
	_, hwm, err := procMem(h.pid)
	if err != nil {
		b.Fatal(err)
	}
	return d, r, hwm
}

// replayLine is what the turns that fill BenchmarkHostReplaySubscribers'
// journal print, again and again.
const replayLine = "0123456789012345678901234567890123456789012345678901234567890123456789"

// BenchmarkHostReplaySubscribers: a real background host (the built
// command) serves a session whose journal holds about 40 MB (three turns
// printing 14 MB each, journaled as 64 KiB output checkpoints; one turn
// with -short), restored for each round by `looprig restore --detach`.
// Ours: 32 clients (the host's limit) subscribe from seq 0 and never read;
// once the host is quiet (it served them what their queues and the output
// budget hold and cut the others: "settle"), one of them hangs up and a
// client (host.Client) reads the whole journal from seq 0 while the 31
// others stay. The baseline, in interleaved rounds, is the host alone: a
// new host, the same reading client and no other. Target (issue 31;
// SECURITY.md, "Resource bounds"): the host's peak RSS ≤ 150 MiB (157 MB),
// the restore and everything after it included.
//
// Metrics: rss-MB and base-rss-MB (the host's VmHWM over its life), ours-ms
// and base-ms (the reading client's subscribe to its last journaled event),
// ratio (ours/base), first-ms and base-first-ms (to its first event),
// settle-ms (the 32 subscribes to the host's quiet: its CPU time still for
// 300 ms), journal-MB.
func BenchmarkHostReplaySubscribers(b *testing.B) {
	const stuck = 32
	rounds, turns := pick(1, 3), pick(1, 3)
	h := startBinaryHost(b)
	for range turns {
		if _, err := h.looprig("run", h.id, "--", fmt.Sprintf("yes %s | head -c 14000000", replayLine)); err != nil {
			b.Fatal(err)
		}
	}
	h.stop()
	fi, err := os.Stat(filepath.Join(h.store, "ledgers", "sessions", h.id+".log"))
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		var ours, base side
		var oursRSS, baseRSS int64
		var first, baseFirst, settle time.Duration
		interleave(rounds, func() {
			r := replayRound(b, h, stuck)
			ours.add(1, r.read)
			oursRSS = max(oursRSS, r.hwm)
			first, settle = max(first, r.first), max(settle, r.settle)
		}, func() {
			r := replayRound(b, h, 0)
			base.add(1, r.read)
			baseRSS = max(baseRSS, r.hwm)
			baseFirst = max(baseFirst, r.first)
		})
		b.ReportMetric(float64(oursRSS)/1e6, "rss-MB")
		b.ReportMetric(float64(baseRSS)/1e6, "base-rss-MB")
		b.ReportMetric(ours.perOp()/1e3, "ours-ms")
		b.ReportMetric(base.perOp()/1e3, "base-ms")
		b.ReportMetric(ours.perOp()/base.perOp(), "ratio")
		b.ReportMetric(float64(first.Microseconds())/1e3, "first-ms")
		b.ReportMetric(float64(baseFirst.Microseconds())/1e3, "base-first-ms")
		b.ReportMetric(float64(settle.Microseconds())/1e3, "settle-ms")
		b.ReportMetric(float64(fi.Size())/1e6, "journal-MB")
	}
}

// replayResult is one round of BenchmarkHostReplaySubscribers.
type replayResult struct {
	read, first, settle time.Duration
	hwm                 int64
}

// replayRound restores h's session in a new host, subscribes stuck clients
// from seq 0 that never read, waits for the host to be quiet, replaces one
// of them (if any) by a client that reads the journal from seq 0, and stops
// the host.
func replayRound(b *testing.B, h *binaryHost, stuck int) replayResult {
	b.Helper()
	var restored struct {
		PID int `json:"pid"`
	}
	var err error
	for try := 0; try < 20; try++ { // the previous round's host may still hold the lease a moment
		var out []byte
		if out, err = h.looprig("restore", "--detach", "--json", h.id); err == nil {
			if err = json.Unmarshal(out, &restored); err == nil && restored.PID <= 0 {
				err = fmt.Errorf("looprig restore --detach --json: no pid in %s", out)
			}
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		b.Fatal(err)
	}
	pid := restored.PID
	var res replayResult
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		// The host may take a moment to see its clients go (a stop is
		// refused while it serves as many as it may): stop until it is
		// gone, then kill it.
		for deadline := time.Now().Add(time.Minute); alive(pid) && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			h.looprig("stop", h.id)
		}
		if alive(pid) {
			b.Logf("host pid %d did not stop: killed", pid)
			syscall.Kill(pid, syscall.SIGKILL)
			for alive(pid) {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}()
	if stuck > 0 {
		t0 := time.Now()
		for range stuck {
			conns = append(conns, stuckSubscriber(b, h.sock, 0))
		}
		res.settle = waitHostQuiet(b, pid, 300*time.Millisecond).Sub(t0)
		conns[0].Close()
		conns = conns[1:]
	}
	ctx, cancel := context.WithTimeout(bg, 5*time.Minute)
	defer cancel()
	var c *host.Client
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err = host.Dial(ctx, h.sock, host.WithClientVersion("bench")); err == nil || time.Now().After(deadline) {
			break // the host may not have seen the hang-up yet: too_many_clients
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	stat, err := c.Status(ctx)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	st, err := c.Subscribe(ctx, 0)
	if err != nil {
		b.Fatal(err)
	}
	for last := uint64(0); last < stat.Tip; {
		env, err := st.Next(ctx)
		var lost *host.StreamLostError
		if errors.As(err, &lost) {
			if st, err = c.Subscribe(ctx, lost.LastSeq); err != nil {
				b.Fatal(err)
			}
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		if res.first == 0 {
			res.first = time.Since(t0)
		}
		last = max(last, env.Seq)
	}
	res.read = time.Since(t0)
	if _, res.hwm, err = procMem(pid); err != nil {
		b.Fatal(err)
	}
	return res
}

// waitHostQuiet waits until pid's CPU time (utime+stime) has not moved for
// quiet, and returns when it last moved.
func waitHostQuiet(tb testing.TB, pid int, quiet time.Duration) time.Time {
	tb.Helper()
	prev, _, err := procCPU(pid)
	if err != nil {
		tb.Fatal(err)
	}
	moved := time.Now()
	for deadline := moved.Add(2 * time.Minute); time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		ticks, _, err := procCPU(pid)
		if err != nil {
			tb.Fatal(err)
		}
		if ticks != prev {
			prev, moved = ticks, time.Now()
		} else if time.Since(moved) >= quiet {
			return moved
		}
	}
	tb.Fatalf("host pid %d did not go quiet", pid)
	return time.Time{}
}
