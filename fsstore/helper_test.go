package fsstore_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"looprig/fsstore"
	"looprig/rig/storage"
)

// The test binary re-executes itself as a helper process when
// LOOPRIG_FSSTORE_HELPER names a role.
func TestMain(m *testing.M) {
	if role := os.Getenv("LOOPRIG_FSSTORE_HELPER"); role != "" {
		os.Exit(runHelper(role, os.Args[len(os.Args)-1]))
	}
	os.Exit(m.Run())
}

func helperCmd(t *testing.T, role, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", dir)
	cmd.Env = append(os.Environ(), "LOOPRIG_FSSTORE_HELPER="+role)
	cmd.Stderr = os.Stderr
	return cmd
}

func runHelper(role, dir string) int {
	ctx := context.Background()
	s, err := fsstore.Open(dir, fsstore.WithWatchdog(testWatchdog))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper open:", err)
		return 1
	}
	defer s.Close()
	switch role {
	case "hold":
		// Acquire sessions/held, report "epoch pid", then wait for stdin to close.
		l, err := s.Acquire(ctx, "sessions/held")
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper acquire:", err)
			return 1
		}
		fmt.Printf("%d %d\n", l.Epoch(), os.Getpid())
		bufio.NewReader(os.Stdin).ReadString('\n')
		return 0
	case "race":
		// Take the race lease 125 times; under it, append our epoch at the tip.
		for got := 0; got < 125; {
			l, err := s.Acquire(ctx, "race/lease")
			var held *storage.LeaseHeldError
			if errors.As(err, &held) {
				time.Sleep(time.Duration(50+os.Getpid()%50) * time.Microsecond)
				continue
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "helper acquire:", err)
				return 1
			}
			tip, err := s.Tip(ctx, "race/epochs")
			if err == nil {
				var p [8]byte
				binary.BigEndian.PutUint64(p[:], l.Epoch())
				err = s.Append(ctx, "race/epochs", tip, p[:])
			}
			if rerr := l.Release(ctx); rerr != nil && err == nil {
				err = rerr
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "helper append under lease:", err)
				return 1
			}
			got++
		}
		return 0
	case "break":
		l, err := s.Break(ctx, "sessions/held")
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper break:", err)
			return 1
		}
		fmt.Printf("%d %d\n", l.Epoch(), os.Getpid())
		return 0
	case "putblob-killed":
		return putBlobUntilKilled(s)
	case "putblob-same":
		return putSameBlob(s)
	}
	fmt.Fprintln(os.Stderr, "unknown helper role", role)
	return 2
}

// startHolder starts a helper that holds sessions/held and returns it with
// the epoch and pid it reported.
func startHolder(t *testing.T, dir string) (cmd *exec.Cmd, stdin interface{ Close() error }, epoch uint64, pid int) {
	t.Helper()
	cmd = helperCmd(t, "hold", dir)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper said %q: %v", line, err)
	}
	if _, err := fmt.Sscanf(line, "%d %d", &epoch, &pid); err != nil {
		t.Fatalf("helper line %q: %v", line, err)
	}
	return cmd, in, epoch, pid
}
