package lease

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"looprig/rig/storage"
)

// Helper processes: the test binary re-executes itself with
// -test.run=^TestHelperProcess$ and these variables set.
const (
	envMode   = "LEASE_TEST_HELPER_MODE" // hold | break | race
	envDir    = "LEASE_TEST_HELPER_DIR"
	envName   = "LEASE_TEST_HELPER_NAME"
	envCount  = "LEASE_TEST_HELPER_COUNT"
	envMarker = "LEASE_TEST_HELPER_MARKER"
	envLog    = "LEASE_TEST_HELPER_LOG"
)

// helperTimeout bounds every wait on a helper process; generous, for a
// loaded 2-core machine running -race.
const helperTimeout = 60 * time.Second

func leasePaths(dir, name string) (lockPath, epochPath string) {
	base := filepath.Join(dir, "leases", filepath.FromSlash(name))
	return base + ".lock", base + ".epoch"
}

func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(envMode)
	if mode == "" {
		t.Skip("only runs as a helper process")
	}
	code, err := runHelper(mode)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
	}
	os.Exit(code)
}

func runHelper(mode string) (int, error) {
	ctx := context.Background()
	lockPath, epochPath := leasePaths(os.Getenv(envDir), os.Getenv(envName))
	m := NewManager(Options{Watchdog: 10 * time.Millisecond})
	defer m.Close()
	switch mode {
	case "hold", "break":
		var l *Lease
		var err error
		if mode == "hold" {
			l, err = m.Acquire(ctx, os.Getenv(envName), lockPath, epochPath)
		} else {
			l, err = m.Break(ctx, os.Getenv(envName), lockPath, epochPath)
		}
		if err != nil {
			return 2, err
		}
		fmt.Printf("%d %d\n", l.Epoch(), os.Getpid())
		// Hold until the parent closes stdin or kills us.
		io.Copy(io.Discard, os.Stdin)
		return 0, l.Release(ctx)
	case "race":
		count, err := strconv.Atoi(os.Getenv(envCount))
		if err != nil {
			return 2, err
		}
		return raceHelper(ctx, m, count, lockPath, epochPath)
	}
	return 2, fmt.Errorf("unknown mode %q", mode)
}

// raceHelper acquires the name count times. While holding it, it checks
// that the marker file is empty, writes its pid into it, appends its epoch
// to the shared log, yields, checks the marker still holds its pid and
// empties it. Exit code 3 means two holders overlapped.
func raceHelper(ctx context.Context, m *Manager, count int, lockPath, epochPath string) (int, error) {
	name := os.Getenv(envName)
	marker := os.Getenv(envMarker)
	logf, err := os.OpenFile(os.Getenv(envLog), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return 2, err
	}
	defer logf.Close()
	me := strconv.Itoa(os.Getpid())
	for got := 0; got < count; {
		l, err := m.Acquire(ctx, name, lockPath, epochPath)
		var held *storage.LeaseHeldError
		if errors.As(err, &held) {
			time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
			continue
		}
		if err != nil {
			return 2, err
		}
		if b, err := os.ReadFile(marker); err != nil || len(b) != 0 {
			return 3, fmt.Errorf("overlap: marker holds %q on entry (err %v) at epoch %d", b, err, l.Epoch())
		}
		if err := os.WriteFile(marker, []byte(me), 0o600); err != nil {
			return 2, err
		}
		if _, err := fmt.Fprintf(logf, "%d %s\n", l.Epoch(), me); err != nil {
			return 2, err
		}
		time.Sleep(0)
		if b, err := os.ReadFile(marker); err != nil || string(b) != me {
			return 3, fmt.Errorf("overlap: marker holds %q, not our pid %s (err %v) at epoch %d", b, me, err, l.Epoch())
		}
		if err := os.Truncate(marker, 0); err != nil {
			return 2, err
		}
		if err := l.Release(ctx); err != nil {
			return 2, err
		}
		got++
	}
	return 0, nil
}

// helper is a running helper process.
type helper struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *strings.Builder
	epoch  uint64
	pid    int
	done   chan error
}

func helperCmd(t *testing.T, mode, dir, name string, extraEnv ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		envMode+"="+mode, envDir+"="+dir, envName+"="+name)
	// Under -race a process sleeps 1s at exit by default; helpers need not.
	cmd.Env = append(cmd.Env, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cmd.Env = append(cmd.Env, extraEnv...)
	return cmd
}

// startHelper starts a hold or break helper and waits for it to report its
// epoch and pid. The helper is killed at cleanup if still running.
func startHelper(t *testing.T, mode, dir, name string) *helper {
	t.Helper()
	cmd := helperCmd(t, mode, dir, name)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, stdin: stdin, stderr: new(strings.Builder), done: make(chan error, 1)}
	cmd.Stderr = h.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		h.wait(t)
	})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		io.Copy(io.Discard, stdout)
		h.done <- cmd.Wait()
	}()
	select {
	case line := <-lines:
		if _, err := fmt.Sscanf(line, "%d %d", &h.epoch, &h.pid); err != nil {
			cmd.Process.Kill()
			t.Fatalf("helper %s printed %q: %v; stderr:\n%s", mode, line, err, h.stderr)
		}
	case <-time.After(helperTimeout):
		cmd.Process.Kill()
		t.Fatalf("helper %s did not report within %v", mode, helperTimeout)
	}
	if h.pid != cmd.Process.Pid {
		t.Fatalf("helper reported pid %d, started %d", h.pid, cmd.Process.Pid)
	}
	return h
}

// wait waits for the helper to exit and returns its error (once).
func (h *helper) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.done:
		h.done <- err
		return err
	case <-time.After(helperTimeout):
		t.Fatalf("helper pid %d did not exit within %v", h.pid, helperTimeout)
		return nil
	}
}

// kill sends SIGKILL and waits until the process is gone (its locks with
// it).
func (h *helper) kill(t *testing.T) {
	t.Helper()
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
}
