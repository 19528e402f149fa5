package benchmarks

import (
	"bytes"
	"context"
	"encoding/json"
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
	pid  int
	id   string
	sock string
	stop func() // stops the host: `looprig stop`, then SIGTERM, then SIGKILL
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
	out, err := looprig("new", "--detach", "--json")
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
	h := &binaryHost{pid: created.PID, id: created.ID}
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
