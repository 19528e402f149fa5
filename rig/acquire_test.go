//go:build linux

package rig

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"looprig/rig/storage"
)

// heldLeaser refuses Acquire with a LeaseHeldError naming holder until
// free is closed.
type heldLeaser struct {
	holder storage.Holder
	free   chan struct{}
	tries  int
}

func (l *heldLeaser) Acquire(ctx context.Context, name string) (storage.Lease, error) {
	l.tries++
	select {
	case <-l.free:
		return nil, nil
	default:
		return nil, &storage.LeaseHeldError{Name: name, HolderEpoch: 3, Holder: l.holder}
	}
}

// A lease whose holder on this machine is dead (here a zombie: killed,
// not reaped) is waited for until the kernel lets it go; one held by a
// live process, or by a process of another machine, is refused at once;
// a dead holder whose lock never goes is refused after deadHolderWait.
func TestAcquireWaitsForADeadHolder(t *testing.T) {
	ctx := context.Background()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	zombie := cmd.Process.Pid
	cmd.Process.Kill()
	t.Cleanup(func() { cmd.Wait() })
	for dead, _ := deadHolder(zombie); !dead; dead, _ = deadHolder(zombie) {
		time.Sleep(5 * time.Millisecond)
	}

	l := &heldLeaser{holder: storage.Holder{PID: zombie, Host: hostname()}, free: make(chan struct{})}
	time.AfterFunc(300*time.Millisecond, func() { close(l.free) })
	start := time.Now()
	if _, err := acquireAfterExit(ctx, l, "sessions/x"); err != nil {
		t.Fatalf("acquire of a lease its dead holder lets go of 300 ms later: %v", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || l.tries < 2 {
		t.Errorf("acquired after %s in %d tries", d, l.tries)
	}

	for _, h := range []storage.Holder{
		{PID: os.Getpid(), Host: hostname()},           // alive
		{PID: zombie, Host: hostname() + "-elsewhere"}, // another machine
		{PID: 0, Host: hostname()},                     // not known
	} {
		l := &heldLeaser{holder: h, free: make(chan struct{})}
		start := time.Now()
		_, err := acquireAfterExit(ctx, l, "sessions/x")
		var held *storage.LeaseHeldError
		// One try is the check (a wait for the holder's exit tries again
		// every deadHolderPoll); the time is bounded loosely, as a loaded
		// race pass stalls for tens of milliseconds.
		if !errors.As(err, &held) || l.tries != 1 || time.Since(start) > time.Second {
			t.Errorf("holder %+v: %v after %d tries, %s; want refused at once", h, err, l.tries, time.Since(start))
		}
	}

	l = &heldLeaser{holder: storage.Holder{PID: zombie, Host: hostname()}, free: make(chan struct{})}
	start = time.Now()
	_, err := acquireAfterExit(ctx, l, "sessions/x")
	var held *storage.LeaseHeldError
	if d := time.Since(start); !errors.As(err, &held) || d < deadHolderWait || d > deadHolderWait+time.Second {
		t.Errorf("a dead holder whose lock stays: %v after %s, want refused after about %s", err, d, deadHolderWait)
	}
}

func deadHolder(pid int) (bool, error) {
	return holderExited(storage.Holder{PID: pid, Host: hostname()}), nil
}
