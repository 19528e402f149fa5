package logfile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"looprig/rig/storage"
)

// The tests below re-execute the test binary as helper processes. The
// helper's role is chosen by this environment variable.
const helperEnv = "LOGFILE_TEST_HELPER"

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		os.Exit(runHelper(role))
	}
	os.Exit(m.Run())
}

func runHelper(role string) int {
	path := os.Getenv("LOGFILE_PATH")
	var err error
	switch role {
	case "append":
		err = helperAppend(path)
	case "crash":
		err = helperCrash(path)
	default:
		err = fmt.Errorf("unknown helper role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	return 0
}

func envInt(name string) int {
	n, err := strconv.Atoi(os.Getenv(name))
	if err != nil {
		panic(fmt.Sprintf("%s: %v", name, err))
	}
	return n
}

// helperAppend appends LOGFILE_EACH payloads "p<id>g<g>-<i>" from each of
// LOGFILE_GOROUTINES goroutines, with CAS-retry loops.
func helperAppend(path string) error {
	id, goroutines, each := envInt("LOGFILE_ID"), envInt("LOGFILE_GOROUTINES"), envInt("LOGFILE_EACH")
	l, err := Open(path, Options{Name: testName})
	if err != nil {
		return err
	}
	defer l.Close()
	// Start together with the other helpers, so that they overlap.
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				p := fmt.Sprintf("p%dg%d-%d", id, g, i)
				if _, err := appendRetry(context.Background(), l, []byte(p)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// crashPayload is the deterministic payload of record seq in the crash
// test: mostly small, sometimes several pages, so that a kill can land in
// the middle of a multi-page write.
func crashPayload(seq uint64) []byte {
	h := seq * 0x9E3779B97F4A7C15
	n := int(h>>40) % 600
	if h>>61 == 0 { // one record in eight
		n = 4096 + int(h>>20)%12000
	}
	b := make([]byte, max(n, 8))[:n]
	if n >= 8 {
		binary.LittleEndian.PutUint64(b, seq)
	}
	for i := 8; i < n; i++ {
		b[i] = byte(seq) ^ byte(i*31)
	}
	return b
}

// helperCrash opens (and so repairs) the log, says "ready", then appends
// until killed from several goroutines, printing "ack <seq>" for the last
// record of every acknowledged append.
func helperCrash(path string) error {
	l, err := Open(path, Options{Name: testName})
	if err != nil {
		return err
	}
	if _, err := os.Stdout.WriteString("ready\n"); err != nil {
		return err
	}
	seed := uint64(envInt("LOGFILE_SEED"))
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for g := range 3 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for {
				tip, err := l.Tip(context.Background())
				if err != nil {
					errs <- err
					return
				}
				k := 1 + rng.IntN(3)
				batch := make([][]byte, k)
				for j := range batch {
					batch[j] = crashPayload(tip + uint64(j) + 1)
				}
				err = l.Append(context.Background(), tip, 1, batch...)
				if err == nil {
					if _, err := fmt.Fprintf(os.Stdout, "ack %d\n", tip+uint64(k)); err != nil {
						errs <- err
						return
					}
					continue
				}
				var ce *storage.ConflictError
				if !errors.As(err, &ce) {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	return <-errs
}

func helperCmd(t *testing.T, role string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+role)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = &lockedBuffer{}
	return cmd
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestCrossProcessCAS(t *testing.T) {
	const procs, goroutines, each = 3, 2, 40
	path := newPath(t)
	// The file is absent: the helpers also race to create it.
	var cmds []*exec.Cmd
	var stdins []io.WriteCloser
	for id := range procs {
		cmd := helperCmd(t, "append",
			"LOGFILE_PATH="+path,
			fmt.Sprintf("LOGFILE_ID=%d", id),
			fmt.Sprintf("LOGFILE_GOROUTINES=%d", goroutines),
			fmt.Sprintf("LOGFILE_EACH=%d", each))
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		stdins = append(stdins, in)
	}
	for _, in := range stdins {
		if _, err := io.WriteString(in, "go\n"); err != nil {
			t.Fatal(err)
		}
		in.Close()
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v\n%s", i, err, cmd.Stderr)
		}
	}
	l := openLog(t, path)
	recs := readAll(t, l, 0)
	if len(recs) != procs*goroutines*each {
		t.Fatalf("%d records, want %d", len(recs), procs*goroutines*each)
	}
	seen := map[string]bool{}
	next := map[string]int{}
	for i, r := range recs {
		if r.Seq != uint64(i+1) {
			t.Fatalf("record %d has seq %d", i+1, r.Seq)
		}
		p := string(r.Payload)
		if seen[p] {
			t.Fatalf("payload %q written twice", p)
		}
		seen[p] = true
		who, n, ok := strings.Cut(p, "-")
		k, err := strconv.Atoi(n)
		if !ok || err != nil || k != next[who] {
			t.Fatalf("payload %q out of order, want %s-%d", p, who, next[who])
		}
		next[who]++
	}
	if len(next) != procs*goroutines {
		t.Fatalf("writers seen: %v", next)
	}
	switches := 0
	for i := 1; i < len(recs); i++ {
		if recs[i].Payload[1] != recs[i-1].Payload[1] {
			switches++
		}
	}
	t.Logf("%d records; the writing process changed %d times", len(recs), switches)
}

func TestCrashRecovery(t *testing.T) {
	trials := 50
	if s := os.Getenv("LOGFILE_CRASH_TRIALS"); s != "" {
		trials, _ = strconv.Atoi(s)
	}
	path := newPath(t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var verified uint64 // records 1..verified were checked already
	var totalAcked, kills, repairs int
	for trial := range trials {
		seed := rng.Uint64() >> 1
		cmd := helperCmd(t, "crash", "LOGFILE_PATH="+path, fmt.Sprintf("LOGFILE_SEED=%d", seed))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		if !sc.Scan() || sc.Text() != "ready" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("trial %d: helper did not start: %q %v\n%s", trial, sc.Text(), sc.Err(), cmd.Stderr)
		}
		delay := time.Duration(5+rng.IntN(56)) * time.Millisecond
		killed := make(chan struct{})
		go func() {
			defer close(killed)
			time.Sleep(delay)
			cmd.Process.Kill() // SIGKILL
		}()
		var acked uint64
		for sc.Scan() {
			seq, err := strconv.ParseUint(strings.TrimPrefix(sc.Text(), "ack "), 10, 64)
			if err != nil {
				t.Fatalf("trial %d: bad line %q", trial, sc.Text())
			}
			acked = max(acked, seq)
			totalAcked++
		}
		<-killed
		err = cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.Success() {
			t.Fatalf("trial %d: helper ended with %v, want killed\n%s", trial, err, cmd.Stderr)
		}
		kills++

		var before int64
		if st, err := os.Stat(path); err == nil {
			before = st.Size()
		}
		l, err := Open(path, Options{Name: testName})
		if err != nil {
			t.Fatalf("trial %d: reopen after kill: %v", trial, err)
		}
		tip := mustTip(t, l)
		if tip < acked {
			t.Fatalf("trial %d: tip %d but seq %d was acknowledged", trial, tip, acked)
		}
		c, err := l.Read(context.Background(), verified)
		if err != nil {
			t.Fatal(err)
		}
		want := verified + 1
		for c.Next() {
			r := c.Record()
			if r.Seq != want || !bytes.Equal(r.Payload, crashPayload(r.Seq)) {
				t.Fatalf("trial %d: record %d damaged (seq %d, %d bytes)", trial, want, r.Seq, len(r.Payload))
			}
			want++
		}
		if err := c.Err(); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		c.Close()
		if want != tip+1 {
			t.Fatalf("trial %d: read up to %d, tip %d", trial, want-1, tip)
		}
		verified = tip
		l.Close()
		if st, err := os.Stat(path); err == nil && st.Size() != before {
			repairs++
		}
	}
	st, _ := os.Stat(path)
	t.Logf("%d kills, %d torn tails repaired by the parent, %d acknowledged appends, %d records, %d bytes",
		kills, repairs, totalAcked, verified, st.Size())
}
