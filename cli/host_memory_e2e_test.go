package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"looprig/host"
	"looprig/rig/event"
)

// hostMemoryCeiling is what a host may hold, as its peak resident set,
// while 32 clients that never read replay a 40 MB journal (issue 31;
// SECURITY.md, "Resource bounds").
const hostMemoryCeiling = 150 << 20

// TestHostMemoryUnderStuckReplays: a session whose journal holds about 40
// MB (three turns of 14 MB of output, journaled as 64 KiB checkpoints) is
// served by a new host of the built binary (restore --detach), allowed 33
// clients (LOOPRIG_E2E_HOST_MAX_CLIENTS) so that 32 clients can fill the
// default's connections and one more still read. The 32 subscribe from
// seq 0 and never read a byte; a 33rd client then reads the whole journal
// from seq 0 and a turn it submits. The host's peak resident set
// (VmHWM, from its start: the restore included) stays under 150 MiB; the
// reading client gets its first event, the journal and the live turn
// (generous ceilings, not measurements: see BenchmarkHostReplaySubscribers
// for the times); and the clients that never read were cut with "lost"
// after the last event their host's writer took, from which one resumes.
func TestHostMemoryUnderStuckReplays(t *testing.T) {
	if testing.Short() {
		t.Skip("a 40 MB journal")
	}
	h := newHarness(t)
	h.env = append(h.env, "LOOPRIG_E2E_HOST_MAX_CLIENTS=33")
	id, pid := h.detached()
	line := strings.Repeat("0123456789", 7)
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := h.command(ctx, "run", id, "--", fmt.Sprintf("yes %s | head -c 14000000", line))
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr // the output is the journal's
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Fatalf("looprig run: %v\n%s", err, stderr.Bytes())
		}
	}
	fi, err := os.Stat(filepath.Join(h.store, "ledgers", "sessions", id+".log"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() < 38e6 {
		t.Fatalf("the journal holds %d bytes, want about 40 MB", fi.Size())
	}
	h.must(0, "stop", id)
	waitExit(t, pid)
	r := h.must(0, "restore", "--detach", "--json", id)
	pid = decode[struct {
		PID int `json:"pid"`
	}](t, r.stdout).PID
	if pid <= 0 {
		t.Fatalf("restore --detach --json = %s", r.stdout)
	}

	// The host's memory, sampled, beside its VmHWM at the end.
	var maxRSS int64
	stop := make(chan struct{})
	var sampled sync.WaitGroup
	sampled.Add(1)
	go func() {
		defer sampled.Done()
		for {
			if rss, _, err := procStatus(pid); err == nil {
				maxRSS = max(maxRSS, rss)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()

	reader := h.dialHost(id) // the 33rd client, connected first so that none refuses it
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stat, err := reader.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sock := hostSocket(t, h, id)
	stuck := make([]*rawClient, 32)
	for i := range stuck {
		stuck[i] = dialStuck(t, sock)
	}

	t0 := time.Now()
	st, err := reader.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var first time.Duration
	var last uint64
	events, again := 0, 0
	next := func() event.Envelope {
		for {
			env, err := st.Next(ctx)
			var lost *host.StreamLostError
			if errors.As(err, &lost) {
				again++
				if st, err = reader.Subscribe(ctx, lost.LastSeq); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("the reading client, after seq %d: %v", last, err)
			}
			if events == 0 {
				first = time.Since(t0)
			}
			events++
			if env.Seq != 0 {
				if env.Seq <= last {
					t.Fatalf("the reading client got seq %d after %d", env.Seq, last)
				}
				last = env.Seq
			}
			return env
		}
	}
	for last < stat.Tip {
		next()
	}
	replayed := time.Since(t0)
	ti, err := reader.Submit(ctx, "echo live")
	if err != nil {
		t.Fatal(err)
	}
	for {
		env := next()
		if d, ok := env.Event.(event.TurnDone); ok && d.TurnID == ti.ID {
			break
		}
	}
	live := time.Since(t0) - replayed
	close(stop)
	sampled.Wait()
	rss, hwm, err := procStatus(pid)
	if err != nil {
		t.Fatal(err)
	}
	maxRSS = max(maxRSS, rss)
	t.Logf("journal %.1f MB; host VmHWM %.1f MiB (sampled RSS at most %.1f MiB) with 32 clients that never read; "+
		"the reading client: first event after %v, %d events to seq %d in %v (subscribed again %d times), a live turn in %v",
		float64(fi.Size())/1e6, float64(hwm)/(1<<20), float64(maxRSS)/(1<<20), first.Round(time.Millisecond),
		events, stat.Tip, replayed.Round(time.Millisecond), again, live.Round(time.Millisecond))
	if hwm > hostMemoryCeiling {
		t.Errorf("the host's peak resident set was %d bytes, over %d", hwm, hostMemoryCeiling)
	}
	// Generous ceilings: a reader is served while the others hold the
	// host's budget (these are not the figures: the benchmark has them).
	if first > 30*time.Second || replayed > 2*time.Minute {
		t.Errorf("the reading client got its first event after %v and the journal after %v", first, replayed)
	}

	// The clients that never read: each now reads what its host sent it.
	// Those the budget had no room for were cut: a "lost" line whose
	// last_seq is the last event they got; one of them resumes there.
	cut := 0
	var resume *rawClient
	var resumeAfter uint64
	for i, c := range stuck {
		lostAt, lastSeq, ok := c.readUntilLost(t, 8<<20)
		if !ok {
			continue // a client the budget kept: its events go on
		}
		if lostAt != lastSeq {
			t.Errorf("stuck client %d: lost after seq %d, but it got events up to seq %d", i, lostAt, lastSeq)
		}
		cut++
		if resume == nil {
			resume, resumeAfter = c, lostAt
		}
	}
	t.Logf("%d of 32 clients that never read were cut", cut)
	if cut < 32-8 {
		t.Errorf("%d of 32 clients that never read were cut; the budget (32 MiB) has room for the queues (4 MiB) of about 8", cut)
	}
	if resume != nil {
		resume.send(fmt.Sprintf(`{"type":"subscribe","id":2,"after_seq":%d}`, resumeAfter))
		if seq := resume.nextEventSeq(t); seq <= resumeAfter {
			t.Errorf("a cut client subscribed again after seq %d and got seq %d", resumeAfter, seq)
		}
	}
}

// hostSocket is the path of the socket of session id's host.
func hostSocket(t *testing.T, h *harness, id string) string {
	t.Helper()
	key, err := filepath.EvalSymlinks(h.store)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(h.runtime, "looprig", host.StoreHash(key), id+".sock")
}

// procStatus returns pid's VmRSS and VmHWM, in bytes.
func procStatus(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("/proc/%d/status: %q", pid, l)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, 0, err
		}
		if k == "VmRSS" {
			rss = n << 10
		} else {
			hwm = n << 10
		}
	}
	if rss == 0 || hwm == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status has no VmRSS or VmHWM", pid)
	}
	return rss, hwm, nil
}

// rawClient is a connection to a host that speaks the protocol by hand.
type rawClient struct {
	c  net.Conn
	rd *bufio.Reader
}

// dialStuck connects to the host at sock, says hello and subscribes from
// seq 0, and reads nothing (until the test reads what was sent).
func dialStuck(t *testing.T, sock string) *rawClient {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rc := &rawClient{c: c, rd: bufio.NewReaderSize(c, 64<<10)}
	rc.send(fmt.Sprintf(`{"type":"hello","protocol":%d,"version":"raw"}`, host.ProtocolVersion))
	rc.send(`{"type":"subscribe","id":1,"after_seq":0}`)
	return rc
}

func (rc *rawClient) send(line string) {
	rc.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	rc.c.Write([]byte(line + "\n"))
}

// rawMsg is what the tests read of a host's line.
type rawMsg struct {
	Type    string `json:"type"`
	Sub     uint64 `json:"sub"`
	LastSeq uint64 `json:"last_seq"`
	Event   struct {
		Seq uint64 `json:"seq"`
	} `json:"event"`
}

func (rc *rawClient) read(t *testing.T) (rawMsg, int) {
	t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	var b []byte
	for {
		part, err := rc.rd.ReadSlice('\n')
		b = append(b, part...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			t.Fatalf("read from the host: %v", err)
		}
		break
	}
	var m rawMsg
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("a host line: %v: %.200s", err, b)
	}
	return m, len(b)
}

// readUntilLost reads the subscription's lines until its "lost" line,
// returning its last_seq and the sequence of the last event before it, or
// ok false once more than limit bytes of events came without one (or
// they ended).
func (rc *rawClient) readUntilLost(t *testing.T, limit int) (lostAt, lastSeq uint64, ok bool) {
	t.Helper()
	for n := 0; n < limit; {
		m, size := rc.read(t)
		n += size
		switch m.Type {
		case "event":
			lastSeq = max(lastSeq, m.Event.Seq)
		case "lost":
			return m.LastSeq, lastSeq, true
		case "end":
			return 0, lastSeq, false
		}
	}
	return 0, lastSeq, false
}

// nextEventSeq reads until an event of a subscription after the first
// and returns its sequence.
func (rc *rawClient) nextEventSeq(t *testing.T) uint64 {
	t.Helper()
	for {
		m, _ := rc.read(t)
		if m.Type == "event" && m.Sub > 1 && m.Event.Seq > 0 {
			return m.Event.Seq
		}
	}
}
