//go:build linux

package engine

// The shell engine on a pseudo-terminal, and the Console driving it: real
// processes on real ptys.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startPTY runs input on a pty with console c; the channel yields the
// outcome.
func startPTY(t *testing.T, ctx context.Context, cfg Config, c *Console, input string) (<-chan runResult, *testSink) {
	t.Helper()
	sink := newSink()
	turn := shellTurn(t, input)
	turn.Console = c
	return runAsync(ctx, NewShell(cfg), turn, sink), sink
}

func TestPTYIsTerminal(t *testing.T) {
	t.Parallel()
	res, err, sink := runShell(t, Config{}, `tty; test -t 0 && test -t 1 && test -t 2 && echo all-tty; echo "TERM=$TERM"; stty size`)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	want := regexp.MustCompile(`^/dev/pts/[0-9]+\nall-tty\nTERM=xterm-256color\n40 120\n$`)
	if got := sink.text(Stdout); !want.MatchString(got) {
		t.Fatalf("stdout %q, want %s", got, want)
	}
}

func TestPTYTermOverride(t *testing.T) {
	t.Parallel()
	res, err, sink := runShell(t, Config{Term: "vt100"}, `echo "TERM=$TERM"`)
	if err != nil || res.ExitCode != 0 || sink.text(Stdout) != "TERM=vt100\n" {
		t.Fatalf("Run = %+v, %v, stdout %q", res, err, sink.text(Stdout))
	}
}

// TestPTYSessionLeader: the turn's shell leads its own session and process
// group, its controlling terminal is the pty, and its group is the
// terminal's foreground group.
func TestPTYSessionLeader(t *testing.T) {
	t.Parallel()
	res, err, sink := runShell(t, Config{}, `read -r s < /proc/$$/stat; echo "$s"`)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	stat := sink.text(Stdout)
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		t.Fatalf("stat %q", stat)
	}
	pid, _ := strconv.Atoi(strings.Fields(stat)[0])
	f := strings.Fields(stat[i+1:]) // state ppid pgrp session tty_nr tpgid
	pgrp, _ := strconv.Atoi(f[2])
	sid, _ := strconv.Atoi(f[3])
	ttyNr, _ := strconv.Atoi(f[4])
	tpgid, _ := strconv.Atoi(f[5])
	if pid == 0 || pgrp != pid || sid != pid || ttyNr == 0 || tpgid != pid {
		t.Fatalf("pid %d pgrp %d session %d tty %d tpgid %d: not a session leader on its terminal", pid, pgrp, sid, ttyNr, tpgid)
	}
}

// TestPTYMergedOutput: stdout and stderr arrive merged, in order, as Stdout;
// "\n" is not turned into "\r\n"; lines longer than MaxLine are not cut
// (the bytes of a terminal are passed exactly).
func TestPTYMergedOutput(t *testing.T) {
	t.Parallel()
	res, err, sink := runShell(t, Config{MaxLine: 10}, `echo out; echo err >&2; printf '0123456789abcdefghijXYZ\n'; printf 'ééééééé\n' >&2`)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if got := sink.text(Stdout); got != "out\nerr\n0123456789abcdefghijXYZ\nééééééé\n" {
		t.Errorf("stdout %q", got)
	}
	if got := sink.text(Stderr); got != "" {
		t.Errorf("stderr %q", got)
	}
}

// TestPTYConsoleSize: the turn starts with the Console's size, including a
// Resize made before the turn.
func TestPTYConsoleSize(t *testing.T) {
	t.Parallel()
	c := NewConsole(80, 24)
	ch, sink := startPTY(t, context.Background(), Config{}, c, "stty size")
	r := await(t, ch, 60*time.Second)
	if r.err != nil || sink.text(Stdout) != "24 80\n" {
		t.Fatalf("Run = %+v, %v, stdout %q", r.res, r.err, sink.text(Stdout))
	}
	if err := c.Resize(132, 43); err != nil {
		t.Fatal(err)
	}
	ch, sink = startPTY(t, context.Background(), Config{}, c, "stty size")
	r = await(t, ch, 60*time.Second)
	if r.err != nil || sink.text(Stdout) != "43 132\n" {
		t.Fatalf("Run = %+v, %v, stdout %q", r.res, r.err, sink.text(Stdout))
	}
}

// TestPTYResizeDuringTurn: a Resize reaches the running turn as SIGWINCH
// with the new size.
func TestPTYResizeDuringTurn(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := NewConsole(0, 0)
	ch, sink := startPTY(t, ctx, Config{}, c, `trap 'echo "winch $(stty size)"' WINCH; echo ready; while :; do sleep 0.05; done`)
	sink.waitOutput(t, Stdout, "ready")
	if err := c.Resize(100, 50); err != nil {
		t.Fatal(err)
	}
	if cols, rows := c.Size(); cols != 100 || rows != 50 {
		t.Fatalf("Size = %d, %d", cols, rows)
	}
	sink.waitOutput(t, Stdout, "winch 50 100\n")
	cancel()
	r := await(t, ch, 30*time.Second)
	if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("err = %v", r.err)
	}
}

// TestPTYWriteLine: a line written through the Console is read by the turn
// and echoed by the terminal.
func TestPTYWriteLine(t *testing.T) {
	t.Parallel()
	c := NewConsole(0, 0)
	ch, sink := startPTY(t, context.Background(), Config{}, c, `echo ready; read name; echo "got $name"`)
	sink.waitOutput(t, Stdout, "ready\n")
	if c.EchoOff() {
		t.Error("EchoOff with echo on")
	}
	hidden, err := c.Write(context.Background(), []byte("alice\n"))
	if err != nil || hidden {
		t.Fatalf("Write = %v, %v", hidden, err)
	}
	r := await(t, ch, 30*time.Second)
	if r.err != nil || r.res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", r.res, r.err)
	}
	if got := sink.text(Stdout); got != "ready\nalice\ngot alice\n" {
		t.Fatalf("stdout %q", got)
	}
}

// TestPTYHiddenInput: with echo off (a password prompt), Write reports the
// input hidden and the terminal does not echo it.
func TestPTYHiddenInput(t *testing.T) {
	t.Parallel()
	c := NewConsole(0, 0)
	ch, sink := startPTY(t, context.Background(), Config{}, c, `stty -echo; echo ready; read pw; stty echo; echo "got $pw"`)
	sink.waitOutput(t, Stdout, "ready\n")
	if !c.EchoOff() {
		t.Error("EchoOff false after stty -echo")
	}
	hidden, err := c.Write(context.Background(), []byte("s3cret\n"))
	if err != nil || !hidden {
		t.Fatalf("Write = %v, %v; want hidden", hidden, err)
	}
	r := await(t, ch, 30*time.Second)
	if r.err != nil || r.res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", r.res, r.err)
	}
	if got := sink.text(Stdout); got != "ready\ngot s3cret\n" {
		t.Fatalf("stdout %q", got)
	}
}

// TestPTYEOF: EOF ends cat's input; after a partial line it takes two, as
// ^D does in a terminal.
func TestPTYEOF(t *testing.T) {
	t.Parallel()
	c := NewConsole(0, 0)
	ch, sink := startPTY(t, context.Background(), Config{}, c, `echo ready; cat; echo "cat=$?"`)
	sink.waitOutput(t, Stdout, "ready\n")
	if _, err := c.Write(context.Background(), []byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	sink.waitOutput(t, Stdout, "hello\nhello\n") // echo, then cat
	if _, err := c.Write(context.Background(), []byte("part")); err != nil {
		t.Fatal(err)
	}
	if err := c.EOF(context.Background()); err != nil {
		t.Fatal(err)
	}
	sink.waitOutput(t, Stdout, "partpart") // the first ^D delivers the partial line
	if err := c.EOF(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := await(t, ch, 30*time.Second)
	if r.err != nil || r.res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", r.res, r.err)
	}
	if got := sink.text(Stdout); got != "ready\nhello\nhello\npartpartcat=0\n" {
		t.Fatalf("stdout %q", got)
	}
}

// TestPTYInterrupt: Console.Interrupt is ^C: SIGINT to the foreground
// group, in cooked mode through the line discipline, in raw mode (no ISIG)
// by a signal. The turn ends with its own exit status, not an engine error.
func TestPTYInterrupt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, input, out string
		exit             int
	}{
		{"cooked", "sleep %s", "", 128 + int(syscall.SIGINT)},
		{"raw", "stty raw -isig; sleep %s", "", 128 + int(syscall.SIGINT)},
		{"cooked-trap", "trap 'echo got-int; exit 7' INT; while :; do sleep %s; done", "got-int", 7},
		{"raw-trap", "stty raw -isig; trap 'echo got-int; exit 7' INT; while :; do sleep %s; done", "got-int", 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			marker := newMarker()
			cleanupMarker(t, marker)
			c := NewConsole(0, 0)
			// Grace long enough for a SIGTERM escalation to be noticed.
			ch, sink := startPTY(t, context.Background(), Config{ShellGrace: time.Minute}, c, fmt.Sprintf(tc.input, marker))
			// Interrupt once sleep runs: dash swallows a SIGINT that hits
			// a child it forked before that child's exec.
			waitExec(t, marker, "sleep")
			start := time.Now()
			if err := c.Interrupt(context.Background()); err != nil {
				t.Fatal(err)
			}
			r := await(t, ch, 30*time.Second)
			if r.err != nil || r.res.ExitCode != tc.exit {
				t.Fatalf("Run = %+v, %v; want exit %d", r.res, r.err, tc.exit)
			}
			if !strings.Contains(sink.text(Stdout), tc.out) {
				t.Fatalf("stdout %q, want %q", sink.text(Stdout), tc.out)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("interrupt took %v", d)
			}
			assertNoProcs(t, marker)
		})
	}
}

// waitExec waits until a process running program (its comm) has marker on
// its command line.
func waitExec(t *testing.T, marker, program string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, pid := range procsWith(marker) {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(b)) == program {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no %s process with %s", program, marker)
}

// TestPTYWriteTimeout: a turn that does not read its input fills the
// terminal's buffer; Write returns *InputTimeoutError when its ctx ends,
// later writes wait their turn within their own ctx, the turn end aborts an
// unbounded write, and the turn itself is unaffected.
func TestPTYWriteTimeout(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	c := NewConsole(0, 0)
	ch, sink := startPTY(t, context.Background(), Config{}, c, fmt.Sprintf("echo ready; read x < '%s'; echo alive", fifo))
	sink.waitOutput(t, Stdout, "ready\n")
	big := []byte(strings.Repeat("y\n", 2<<20)) // 4 MiB of lines: more than the kernel buffers

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	first := make(chan error, 1)
	go func() {
		_, err := c.Write(ctx, big)
		first <- err
	}()
	var err error
	select {
	case err = <-first:
	case <-time.After(20 * time.Second):
		t.Fatal("Write blocked beyond its ctx")
	}
	d := time.Since(start)
	var te *InputTimeoutError
	if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Write err = %v, want *InputTimeoutError", err)
	}
	if te.Len != len(big) || te.Written <= 0 || te.Written >= len(big) {
		t.Fatalf("Written %d of %d", te.Written, te.Len)
	}
	if d < 150*time.Millisecond || d > 5*time.Second {
		t.Fatalf("Write returned after %v", d)
	}

	// An unbounded write blocks until the turn ends...
	unbounded := make(chan error, 1)
	go func() {
		_, err := c.Write(context.Background(), big)
		unbounded <- err
	}()
	// ...and holds up a later one only as long as that one's ctx.
	time.Sleep(100 * time.Millisecond)
	ctx2, cancel2 := context.WithCancelCause(context.Background())
	stop := errors.New("user gave up")
	time.AfterFunc(200*time.Millisecond, func() { cancel2(stop) })
	if _, err := c.Write(ctx2, []byte("z\n")); !errors.As(err, &te) || !errors.Is(err, stop) || te.Written != 0 {
		t.Fatalf("queued Write err = %v", err)
	}
	select {
	case err := <-unbounded:
		t.Fatalf("unbounded Write returned %v while the turn runs", err)
	default:
	}

	if err := os.WriteFile(fifo, []byte("go\n"), 0); err != nil {
		t.Fatal(err)
	}
	r := await(t, ch, 30*time.Second)
	if r.err != nil || r.res.ExitCode != 0 || !strings.HasSuffix(sink.text(Stdout), "alive\n") {
		t.Fatalf("Run = %+v, %v, stdout ends %q", r.res, r.err, tail(sink.text(Stdout)))
	}
	select {
	case err := <-unbounded:
		if !errors.Is(err, ErrNoTerminal) {
			t.Fatalf("unbounded Write err = %v, want ErrNoTerminal", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("unbounded Write still blocked after the turn ended")
	}
}

func tail(s string) string {
	if len(s) > 40 {
		return s[len(s)-40:]
	}
	return s
}

// TestPTYNoTerminal: Write, EOF and Interrupt report ErrNoTerminal before
// and after a turn, on pipes (NoTTY) and with the demo engine; Resize is
// remembered.
func TestPTYNoTerminal(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, c *Console, when string) {
		t.Helper()
		if _, err := c.Write(context.Background(), []byte("x\n")); !errors.Is(err, ErrNoTerminal) {
			t.Errorf("%s: Write err = %v", when, err)
		}
		if err := c.EOF(context.Background()); !errors.Is(err, ErrNoTerminal) {
			t.Errorf("%s: EOF err = %v", when, err)
		}
		if err := c.Interrupt(context.Background()); !errors.Is(err, ErrNoTerminal) {
			t.Errorf("%s: Interrupt err = %v", when, err)
		}
		if c.EchoOff() {
			t.Errorf("%s: EchoOff", when)
		}
	}
	c := NewConsole(0, 0)
	check(t, c, "before")
	ch, sink := startPTY(t, context.Background(), Config{}, c, "echo hi")
	if r := await(t, ch, 30*time.Second); r.err != nil || sink.text(Stdout) != "hi\n" {
		t.Fatalf("Run = %+v, %v", r.res, r.err)
	}
	check(t, c, "after")

	// NoTTY: the turn has no terminal while it runs.
	c = NewConsole(0, 0)
	ctx, cancel := context.WithCancel(context.Background())
	ch, sink = startPTY(t, ctx, Config{NoTTY: true}, c, "test -t 0 || test -t 1 || echo no-tty; echo ready; sleep 100")
	sink.waitOutput(t, Stdout, "no-tty\nready\n")
	check(t, c, "NoTTY")
	if err := c.Resize(90, 30); err != nil {
		t.Fatal(err)
	}
	cancel()
	await(t, ch, 30*time.Second)
	if cols, rows := c.Size(); cols != 90 || rows != 30 {
		t.Fatalf("Size = %d, %d", cols, rows)
	}

	// Demo: no terminal either.
	c = NewConsole(0, 0)
	sink = newSink()
	demoCh := runAsync(context.Background(), demoEngine(2, 200*time.Millisecond), Turn{Input: "x", Console: c}, sink)
	sink.waitOutput(t, Stdout, "step 1/2")
	check(t, c, "demo")
	await(t, demoCh, 30*time.Second)
}

// TestPTYConsoleInUse: a Console serves one turn at a time.
func TestPTYConsoleInUse(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := NewConsole(0, 0)
	ch, sink := startPTY(t, ctx, Config{}, c, "echo ready; sleep 100")
	sink.waitOutput(t, Stdout, "ready")
	turn := shellTurn(t, "touch ran")
	turn.Console = c
	res, err := NewShell(Config{}).Run(context.Background(), turn, newSink())
	if err == nil || res.ExitCode != NoExitCode {
		t.Fatalf("second Run = %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(turn.Dir, "ran")); !os.IsNotExist(err) {
		t.Fatal("the second turn ran")
	}
	// The first turn still has its terminal.
	if !c.attached() {
		t.Fatal("first turn lost its terminal")
	}
	cancel()
	await(t, ch, 30*time.Second)
}

// TestPTYConsoleConcurrent: the Console's methods race with each other and
// with the start and end of the turn (run with -race).
func TestPTYConsoleConcurrent(t *testing.T) {
	t.Parallel()
	c := NewConsole(0, 0)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				switch i {
				case 0:
					_ = c.Resize(80+i, 24)
				case 1:
					_, _ = c.Write(ctx, []byte("line\n"))
				case 2:
					_ = c.EchoOff()
					_, _ = c.Size()
				case 3:
					_ = c.Resize(100, 30)
				}
				cancel()
				time.Sleep(time.Millisecond)
			}
		})
	}
	for range 3 {
		ch, _ := startPTY(t, context.Background(), Config{}, c, "head -n 20 >/dev/null; stty size")
		r := await(t, ch, 60*time.Second)
		if r.err != nil || r.res.ExitCode != 0 {
			t.Fatalf("Run = %+v, %v", r.res, r.err)
		}
	}
	close(stop)
	wg.Wait()
}
