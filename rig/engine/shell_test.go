//go:build linux

package engine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

const helperEnv = "LOOPRIG_ENGINE_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "parent-death":
		helperParentDeath()
	case "hook":
		helperHook()
	default:
		fmt.Fprintln(os.Stderr, "unknown helper")
		os.Exit(2)
	}
}

var markerSeq atomic.Int64

// newMarker returns a sleep duration unique to this test process and call,
// used to find the processes a test started in /proc.
func newMarker() string {
	return fmt.Sprintf("1000.%d%04d", os.Getpid(), markerSeq.Add(1))
}

// procsWith lists the live processes whose command line contains marker.
// Zombies have an empty command line and are not listed.
func procsWith(marker string) []int {
	var pids []int
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(name)))
		if err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// cleanupMarker kills whatever a failed test left behind.
func cleanupMarker(t *testing.T, marker string) {
	t.Cleanup(func() {
		for _, pid := range procsWith(marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

func assertNoProcs(t *testing.T, marker string) {
	t.Helper()
	if pids := procsWith(marker); len(pids) > 0 {
		t.Fatalf("processes still running after Run returned: %v", pids)
	}
}

// modes are the shell engine's two ways of running a turn.
var modes = []struct {
	name string
	cfg  Config
}{
	{"pty", Config{}},
	{"pipes", Config{NoTTY: true}},
}

// bothModes runs f as parallel subtests, once on a pty and once on pipes,
// with the mode's Config (which f may extend).
func bothModes(t *testing.T, f func(t *testing.T, cfg Config)) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			f(t, m.cfg)
		})
	}
}

func shellTurn(t *testing.T, input string) Turn {
	return Turn{
		SessionID: "s-1",
		LoopID:    "l-1",
		ID:        "t-1",
		Input:     input,
		Dir:       t.TempDir(),
		Env:       []string{"LOOPRIG_SESSION=s-1", "LOOPRIG_TURN=t-1"},
	}
}

// runShell runs input to its end and returns the result and the sink.
//
//lint:ignore ST1008 the sink comes last: callers read the error, then the output
func runShell(t *testing.T, cfg Config, input string) (Result, error, *testSink) {
	t.Helper()
	sink := newSink()
	r := await(t, runAsync(context.Background(), NewShell(cfg), shellTurn(t, input), sink), 60*time.Second)
	sink.check(t)
	return r.res, r.err, sink
}

func TestShellStreams(t *testing.T) {
	t.Parallel()
	res, err, sink := runShell(t, Config{NoTTY: true}, "echo out; echo err >&2; echo out2")
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if got := sink.text(Stdout); got != "out\nout2\n" {
		t.Errorf("stdout %q", got)
	}
	if got := sink.text(Stderr); got != "err\n" {
		t.Errorf("stderr %q", got)
	}
}

func TestShellNoOutput(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, cfg Config) {
		res, err, sink := runShell(t, cfg, "true")
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("Run = %+v, %v", res, err)
		}
		if len(sink.chunks) != 0 {
			t.Fatalf("unexpected output %q", sink.chunks)
		}
	})
}

func TestShellExitCode(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, cfg Config) {
		for input, want := range map[string]int{
			"exit 3":                 3,
			"false":                  1,
			"kill -9 $$":             128 + 9,
			"kill -TERM $$; sleep 5": 128 + 15,
			"exit 0":                 0,
		} {
			res, err, _ := runShell(t, cfg, input)
			if err != nil || res.ExitCode != want {
				t.Errorf("%q: Run = %+v, %v; want exit %d", input, res, err, want)
			}
		}
	})
}

func TestShellDirEnvStdin(t *testing.T) {
	t.Parallel()
	sink := newSink()
	turn := shellTurn(t, `pwd -P; echo "$LOOPRIG_SESSION $LOOPRIG_TURN"; cat; echo cat=$?; readlink /proc/self/fd/0; echo $0`)
	r := await(t, runAsync(context.Background(), NewShell(Config{NoTTY: true}), turn, sink), 60*time.Second)
	if r.err != nil || r.res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", r.res, r.err)
	}
	dir, err := filepath.EvalSymlinks(turn.Dir)
	if err != nil {
		t.Fatal(err)
	}
	want := dir + "\ns-1 t-1\ncat=0\n/dev/null\n/bin/sh\n"
	if got := sink.text(Stdout); got != want {
		t.Fatalf("stdout %q, want %q", got, want)
	}
}

func TestShellEnvInheritedAndOverridden(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, cfg Config) {
		path := os.Getenv("PATH")
		sink := newSink()
		turn := shellTurn(t, `echo "$PATH|$LOOPRIG_TURN"`)
		turn.Env = append(turn.Env, "LOOPRIG_TURN=t-2")
		r := await(t, runAsync(context.Background(), NewShell(cfg), turn, sink), 60*time.Second)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if got := sink.text(Stdout); got != path+"|t-2\n" {
			t.Fatalf("stdout %q", got)
		}
	})
}

func TestShellStartError(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, cfg Config) {
		sink := newSink()
		turn := shellTurn(t, "echo hi")
		turn.Dir = filepath.Join(turn.Dir, "missing")
		res, err := NewShell(cfg).Run(context.Background(), turn, sink)
		if err == nil || res.ExitCode != NoExitCode {
			t.Fatalf("Run = %+v, %v", res, err)
		}
		var pe *os.PathError
		if !errors.As(err, &pe) {
			t.Fatalf("err %v does not wrap *os.PathError", err)
		}
		if len(sink.chunks) != 0 {
			t.Fatal("output from a turn that did not start")
		}
	})
}

// Turn.Started gets the turn's process group, whose processes carry the
// turn's environment, before the input runs; its error stops the turn
// before anything ran.
func TestShellStarted(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, cfg Config) {
		sink := newSink()
		turn := shellTurn(t, "echo ran > ran; echo pgid=$(ps -o pgid= -p $$ | tr -d ' ')")
		var got int
		turn.Started = func(pgid int) error {
			got = pgid
			if _, err := os.Stat(filepath.Join(turn.Dir, "ran")); err == nil {
				t.Error("Started was called after the input ran")
			}
			return nil
		}
		r := await(t, runAsync(context.Background(), NewShell(cfg), turn, sink), 60*time.Second)
		if r.err != nil || r.res.ExitCode != 0 {
			t.Fatalf("Run = %+v, %v", r.res, r.err)
		}
		if out := strings.TrimSpace(sink.text(Stdout)); got <= 1 || out != "pgid="+strconv.Itoa(got) {
			t.Fatalf("Started got %d; the turn printed %q", got, out)
		}

		refused := errors.New("no record")
		turn = shellTurn(t, "echo ran > ran")
		turn.Started = func(int) error { return refused }
		res, err := NewShell(cfg).Run(context.Background(), turn, newSink())
		if !errors.Is(err, refused) || res.ExitCode != NoExitCode {
			t.Fatalf("Run with Started refusing = %+v, %v; want its error and no exit code", res, err)
		}
		if _, err := os.Stat(filepath.Join(turn.Dir, "ran")); err == nil {
			t.Fatal("the input ran although Started refused")
		}
	})
}

func TestShellLongLines(t *testing.T) {
	t.Parallel()
	res, err, sink := runShell(t, Config{MaxLine: 10, NoTTY: true}, `printf '0123456789abcdefghijXYZ\nshort\n'; printf 'ééééééé\n' >&2`)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if got := sink.text(Stdout); got != "0123456789\nabcdefghij\nXYZ\nshort\n" {
		t.Errorf("stdout %q", got)
	}
	if got := sink.text(Stderr); got != "ééééé\néé\n" {
		t.Errorf("stderr %q", got)
	}
}

// TestShellDefaultMaxLine: on pipes a line is cut every DefaultMaxLine
// bytes; a pty's output is passed exactly, however long its lines (a
// full-screen program writes none, and a newline inserted into its
// output moved its cursor).
func TestShellDefaultMaxLine(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, cfg Config) {
		res, err, sink := runShell(t, cfg, `head -c 200000 /dev/zero | tr '\0' x`)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("Run = %+v, %v", res, err)
		}
		lines := strings.Split(sink.text(Stdout), "\n")
		if !cfg.NoTTY {
			if len(lines) != 1 || len(lines[0]) != 200000 {
				t.Fatalf("pty: got %d lines (%d bytes first); want the 200,000 bytes as they were", len(lines), len(lines[0]))
			}
			return
		}
		if len(lines) != 4 || len(lines[0]) != DefaultMaxLine || len(lines[3]) != 200000-3*DefaultMaxLine {
			t.Fatalf("got %d lines", len(lines))
		}
	})
}

// TestShellChunksKeepRunes: a character split across two writes arrives
// whole.
func TestShellChunksKeepRunes(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, cfg Config) {
		res, err, sink := runShell(t, cfg, `printf 'a\303'; sleep 0.1; printf '\251b\342\202'; sleep 0.1; printf '\254\n'`)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("Run = %+v, %v", res, err)
		}
		if got := sink.text(Stdout); got != "aéb€\n" {
			t.Fatalf("stdout %q", got)
		}
		for _, c := range sink.chunks {
			if !utf8.ValidString(c.text) {
				t.Errorf("chunk %q splits a character", c.text)
			}
		}
	})
}

func TestShellInvalidUTF8PassesThrough(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, cfg Config) {
		res, err, sink := runShell(t, cfg, `printf 'a\377\200b\033[31m\n'; printf '\303'`)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("Run = %+v, %v", res, err)
		}
		if got := sink.text(Stdout); got != "a\xff\x80b\x1b[31m\n\xc3" {
			t.Fatalf("stdout %q", got)
		}
	})
}

// TestShellPartialLine: output without a newline is delivered while the
// command is still running.
func TestShellPartialLine(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, cfg Config) {
		dir := t.TempDir()
		fifo := filepath.Join(dir, "go")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		sink := newSink()
		turn := shellTurn(t, fmt.Sprintf("printf abc; read x < '%s'; printf def", fifo))
		ch := runAsync(context.Background(), NewShell(cfg), turn, sink)
		sink.waitOutput(t, Stdout, "abc")
		if got := sink.text(Stdout); got != "abc" {
			t.Fatalf("stdout %q before def was printed", got)
		}
		if err := os.WriteFile(fifo, []byte("go\n"), 0); err != nil {
			t.Fatal(err)
		}
		r := await(t, ch, 60*time.Second)
		if r.err != nil || sink.text(Stdout) != "abcdef" {
			t.Fatalf("Run = %+v, %v, stdout %q", r.res, r.err, sink.text(Stdout))
		}
	})
}

// TestShellLargeOutput: 50 MB stream through in bounded chunks; the engine
// holds no more than a read buffer. It runs alone (not in parallel), so the
// live heap it samples is its own: a parallel test's garbage once pushed a
// sample of heap in use past the bound in CI's race pass.
func TestShellLargeOutput(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			sink := newSink()
			sink.discard = true
			var calls int
			var peak uint64
			sink.onOutput = func(string) {
				calls++
				if calls%500 == 0 {
					runtime.GC()
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					peak = max(peak, ms.HeapAlloc)
				}
			}
			r := await(t, runAsync(context.Background(), NewShell(m.cfg), shellTurn(t, "yes | head -c 50000000"), sink), 120*time.Second)
			if r.err != nil || r.res.ExitCode != 0 {
				t.Fatalf("Run = %+v, %v", r.res, r.err)
			}
			sink.check(t)
			if n := sink.bytes[Stdout]; n != 50000000 {
				t.Fatalf("got %d bytes", n)
			}
			if sink.maxChunk > readSize {
				t.Fatalf("chunk of %d bytes", sink.maxChunk)
			}
			if calls < 500 {
				t.Fatalf("%d chunks: the live heap was never sampled", calls)
			}
			// Live heap after a collection: 50 MB of retained output
			// would exceed this bound many times over.
			if peak > 4<<20 {
				t.Fatalf("live heap peaked at %d MiB", peak>>20)
			}
			t.Logf("%d chunks, live heap peaked at %.1f MiB", calls, float64(peak)/(1<<20))
		})
	}
}

// TestShellSerializedOutput: both streams busy at once, Output never runs
// concurrently.
func TestShellSerializedOutput(t *testing.T) {
	t.Parallel()
	sink := newSink()
	sink.discard = true
	sink.onOutput = func(string) { runtime.Gosched() }
	input := `head -c 3000000 /dev/zero | tr '\0' o & head -c 3000000 /dev/zero | tr '\0' e >&2; wait`
	r := await(t, runAsync(context.Background(), NewShell(Config{NoTTY: true}), shellTurn(t, input), sink), 60*time.Second)
	if r.err != nil || r.res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", r.res, r.err)
	}
	sink.check(t)
	if sink.bytes[Stdout] != 3000000+45 || sink.bytes[Stderr] != 3000000+45 {
		// 3e6 bytes in 64 KiB lines: 45 inserted newlines.
		t.Fatalf("bytes %v", sink.bytes)
	}
}

func TestShellInterrupt(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, cfg Config) {
		marker := newMarker()
		cleanupMarker(t, marker)
		cause := errors.New("user pressed I")
		ctx, cancel := context.WithCancelCause(context.Background())
		sink := newSink()
		const grace = 8 * time.Second
		input := fmt.Sprintf("sleep %s & sleep %s & echo ready; sleep %s", marker, marker, marker)
		cfg.ShellGrace = grace
		ch := runAsync(ctx, NewShell(cfg), shellTurn(t, input), sink)
		sink.waitOutput(t, Stdout, "ready")
		// the third sleep starts after the echo: wait for it
		for deadline := time.Now().Add(10 * time.Second); len(procsWith(marker)) < 3; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d marker processes running, want ≥ 3", len(procsWith(marker)))
			}
		}
		start := time.Now()
		cancel(cause)
		r := await(t, ch, 30*time.Second)
		if !errors.Is(r.err, cause) || !errors.Is(r.err, context.Canceled) {
			t.Fatalf("err = %v, want the cause", r.err)
		}
		if r.res.ExitCode != 128+int(syscall.SIGTERM) {
			t.Errorf("exit code %d, want %d", r.res.ExitCode, 128+int(syscall.SIGTERM))
		}
		// SIGTERM ends sleep: no need to wait for the SIGKILL.
		if d := time.Since(start); d >= grace {
			t.Errorf("Run took %v, the whole grace period", d)
		}
		assertNoProcs(t, marker)
	})
}

func TestShellInterruptKillsAfterGrace(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, cfg Config) {
		marker := newMarker()
		cleanupMarker(t, marker)
		ctx, cancel := context.WithCancel(context.Background())
		sink := newSink()
		const grace = 300 * time.Millisecond
		cfg.ShellGrace = grace
		input := fmt.Sprintf("trap '' TERM; sleep %s & echo ready; sleep %s", marker, marker)
		ch := runAsync(ctx, NewShell(cfg), shellTurn(t, input), sink)
		sink.waitOutput(t, Stdout, "ready")
		start := time.Now()
		cancel()
		r := await(t, ch, 30*time.Second)
		if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("err = %v", r.err)
		}
		if r.res.ExitCode != 128+int(syscall.SIGKILL) {
			t.Errorf("exit code %d, want %d", r.res.ExitCode, 128+int(syscall.SIGKILL))
		}
		if d := time.Since(start); d < grace {
			t.Errorf("Run returned after %v, before the grace period", d)
		}
		assertNoProcs(t, marker)
	})
}

// TestShellTermRemnantKilledAfterGrace: the leader dies on SIGTERM, a
// background process ignoring it is SIGKILLed after the grace period.
func TestShellTermRemnantKilledAfterGrace(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, cfg Config) {
		marker := newMarker()
		cleanupMarker(t, marker)
		ctx, cancel := context.WithCancel(context.Background())
		sink := newSink()
		const grace = 300 * time.Millisecond
		cfg.ShellGrace = grace
		// HUP too: on a pty the kernel sends SIGHUP to the foreground group
		// when the session leader dies.
		input := fmt.Sprintf("(trap '' TERM HUP; echo ready; sleep %s) & sleep %s", marker, marker)
		ch := runAsync(ctx, NewShell(cfg), shellTurn(t, input), sink)
		sink.waitOutput(t, Stdout, "ready")
		start := time.Now()
		cancel()
		r := await(t, ch, 30*time.Second)
		if !errors.Is(r.err, context.Canceled) || r.res.ExitCode != 128+int(syscall.SIGTERM) {
			t.Fatalf("Run = %+v, %v", r.res, r.err)
		}
		if d := time.Since(start); d < grace {
			t.Errorf("Run returned after %v, before the grace period", d)
		}
		assertNoProcs(t, marker)
	})
}

// TestShellBackgroundKilledAtEnd: what the shell leaves running in its group
// dies with the turn, and does not keep Run waiting on the pipes.
func TestShellBackgroundKilledAtEnd(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, cfg Config) {
		marker := newMarker()
		cleanupMarker(t, marker)
		res, err, sink := runShell(t, cfg, fmt.Sprintf("sleep %s & echo done", marker))
		if err != nil || res.ExitCode != 0 || sink.text(Stdout) != "done\n" {
			t.Fatalf("Run = %+v, %v, %q", res, err, sink.text(Stdout))
		}
		assertNoProcs(t, marker)
	})
}

// TestShellEscapedPipeHolder: a process that left the group and keeps the
// pipes open does not make Run hang.
func TestShellEscapedPipeHolder(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, cfg Config) {
		if _, err := exec.LookPath("setsid"); err != nil {
			t.Skip("no setsid")
		}
		marker := newMarker()
		cleanupMarker(t, marker)
		res, err, sink := runShell(t, cfg, fmt.Sprintf("setsid sleep %s & echo done", marker))
		if err != nil || res.ExitCode != 0 || sink.text(Stdout) != "done\n" {
			t.Fatalf("Run = %+v, %v, %q", res, err, sink.text(Stdout))
		}
	})
}

func TestShellCancelledBeforeRun(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, cfg Config) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		turn := shellTurn(t, "touch ran")
		res, err := NewShell(cfg).Run(ctx, turn, newSink())
		if !errors.Is(err, context.Canceled) || res.ExitCode != NoExitCode {
			t.Fatalf("Run = %+v, %v", res, err)
		}
		if _, err := os.Stat(filepath.Join(turn.Dir, "ran")); !os.IsNotExist(err) {
			t.Fatal("the command ran")
		}
	})
}

func TestShellGate(t *testing.T) {
	t.Parallel()
	const input = "touch ran && rm -rf ./nothing-here"
	for _, approve := range []bool{true, false} {
		sink := newSink()
		sink.gate = func(context.Context, string) (bool, error) { return approve, nil }
		turn := shellTurn(t, input)
		res, err := NewShell(Config{}).Run(context.Background(), turn, sink)
		gates := sink.gateCalls()
		if len(gates) != 1 || !strings.Contains(gates[0], `"rm -rf"`) || !strings.Contains(gates[0], input) {
			t.Fatalf("gates %q", gates)
		}
		_, statErr := os.Stat(filepath.Join(turn.Dir, "ran"))
		if approve {
			if err != nil || res.ExitCode != 0 || statErr != nil {
				t.Fatalf("approved: Run = %+v, %v; stat %v", res, err, statErr)
			}
			continue
		}
		var gd *GateDeniedError
		if !errors.As(err, &gd) || gd.Prompt != gates[0] || res.ExitCode != NoExitCode {
			t.Fatalf("denied: Run = %+v, %v", res, err)
		}
		if !os.IsNotExist(statErr) {
			t.Fatal("denied command ran")
		}
	}
}

func TestShellGateNotAsked(t *testing.T) {
	t.Parallel()
	sink := newSink() // its Gate fails the run if called
	turn := shellTurn(t, "touch ran; echo rm -r x")
	res, err := NewShell(Config{}).Run(context.Background(), turn, sink)
	if err != nil || res.ExitCode != 0 || len(sink.gateCalls()) != 0 {
		t.Fatalf("Run = %+v, %v, gates %q", res, err, sink.gateCalls())
	}
	// An empty policy gates nothing.
	res, err = NewShell(Config{GatePolicy: []string{}}).Run(context.Background(), shellTurn(t, "echo rm -rf x"), sink)
	if err != nil || res.ExitCode != 0 || len(sink.gateCalls()) != 0 {
		t.Fatalf("empty policy: Run = %+v, %v, gates %q", res, err, sink.gateCalls())
	}
	// A custom policy replaces the default.
	sink.gate = func(context.Context, string) (bool, error) { return false, nil }
	_, err = NewShell(Config{GatePolicy: []string{"make deploy"}}).Run(context.Background(), shellTurn(t, "make   deploy"), sink)
	var gd *GateDeniedError
	if !errors.As(err, &gd) {
		t.Fatalf("custom policy: err = %v", err)
	}
}

func TestShellGateCancel(t *testing.T) {
	t.Parallel()
	cause := errors.New("shutdown")
	ctx, cancel := context.WithCancelCause(context.Background())
	sink := newSink()
	asked := make(chan struct{})
	sink.gate = func(ctx context.Context, _ string) (bool, error) {
		close(asked)
		<-ctx.Done()
		return false, ctx.Err()
	}
	turn := shellTurn(t, "touch ran; sudo true")
	ch := runAsync(ctx, NewShell(Config{}), turn, sink)
	<-asked
	cancel(cause)
	r := await(t, ch, 10*time.Second)
	var gd *GateDeniedError
	if !errors.Is(r.err, cause) || errors.As(r.err, &gd) || r.res.ExitCode != NoExitCode {
		t.Fatalf("Run = %+v, %v", r.res, r.err)
	}
	if _, err := os.Stat(filepath.Join(turn.Dir, "ran")); !os.IsNotExist(err) {
		t.Fatal("the command ran")
	}
}

func TestShellGateError(t *testing.T) {
	t.Parallel()
	boom := errors.New("hub stopped")
	sink := newSink()
	sink.gate = func(context.Context, string) (bool, error) { return false, boom }
	turn := shellTurn(t, "touch ran; sudo true")
	_, err := NewShell(Config{}).Run(context.Background(), turn, sink)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(turn.Dir, "ran")); !os.IsNotExist(err) {
		t.Fatal("the command ran")
	}
}

// TestShellConcurrentRuns: turns run side by side without sharing pipes.
func TestShellConcurrentRuns(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, cfg Config) {
		e := NewShell(cfg)
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				sink := newSink()
				r := await(t, runAsync(context.Background(), e, shellTurn(t, fmt.Sprintf("echo %d; exit %d", i, i)), sink), 60*time.Second)
				if r.err != nil || r.res.ExitCode != i || sink.text(Stdout) != fmt.Sprintf("%d\n", i) {
					t.Errorf("turn %d: Run = %+v, %v, %q", i, r.res, r.err, sink.text(Stdout))
				}
			})
		}
		wg.Wait()
	})
}

// TestShellParentDeath: SIGKILL of the process running a turn leaves no
// turn process behind.
func TestShellParentDeath(t *testing.T) {
	t.Parallel()
	bothModes(t, func(t *testing.T, cfg Config) {
		marker := newMarker()
		cleanupMarker(t, marker)
		helper := exec.Command(os.Args[0], "-test.run=^$")
		helper.Env = append(os.Environ(), helperEnv+"=parent-death", "LOOPRIG_ENGINE_TEST_MARKER="+marker,
			fmt.Sprintf("LOOPRIG_ENGINE_TEST_NOTTY=%t", cfg.NoTTY))
		helper.Stderr = os.Stderr
		stdout, err := helper.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := helper.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })
		line := make(chan string, 1)
		go func() {
			s, _ := bufio.NewReader(stdout).ReadString('\n')
			line <- s
		}()
		select {
		case s := <-line:
			if s != "started\n" {
				t.Fatalf("helper said %q", s)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("helper did not start the turn")
		}
		if n := len(procsWith(marker)); n < 2 {
			t.Fatalf("%d marker processes running, want ≥ 2", n)
		}
		if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = helper.Wait()
		deadline := time.Now().Add(10 * time.Second)
		for {
			pids := procsWith(marker)
			if len(pids) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("turn processes survived the SIGKILL of their parent: %v", pids)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// helperParentDeath runs in a child test process: it starts a shell turn
// (on pipes when LOOPRIG_ENGINE_TEST_NOTTY=true, else on a pty), says
// "started" once the turn runs, and blocks until killed.
func helperParentDeath() {
	marker := os.Getenv("LOOPRIG_ENGINE_TEST_MARKER")
	started := make(chan struct{})
	var once sync.Once
	sink := &funcSink{output: func(_ Stream, text string) {
		if strings.Contains(text, "started") {
			once.Do(func() { close(started) })
		}
	}}
	go func() {
		// HUP ignored: on a pty, the kernel hangs the terminal up when the
		// master closes with this process; the watcher must do the killing.
		input := fmt.Sprintf("trap '' HUP; sleep %s & echo started; sleep %s", marker, marker)
		cfg := Config{NoTTY: os.Getenv("LOOPRIG_ENGINE_TEST_NOTTY") == "true"}
		_, err := NewShell(cfg).Run(context.Background(), Turn{Input: input, Dir: os.TempDir()}, sink)
		fmt.Fprintln(os.Stderr, "helper: turn ended:", err)
		os.Exit(3)
	}()
	<-started
	fmt.Println("started")
	select {}
}

type funcSink struct {
	output func(Stream, string)
}

func (s *funcSink) Output(stream Stream, text string) { s.output(stream, text) }
func (s *funcSink) Gate(context.Context, string) (bool, error) {
	return false, errors.New("no gates here")
}
