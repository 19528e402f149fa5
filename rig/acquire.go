package rig

import (
	"context"
	"errors"
	"time"

	"looprig/rig/procgroup"
	"looprig/rig/storage"
)

// deadHolderWait bounds how long acquiring a lease waits for the kernel to
// release the lock of a holder on this machine that has exited.
const deadHolderWait = 2 * time.Second

// deadHolderPoll is how often that wait tries again.
const deadHolderPoll = 20 * time.Millisecond

// acquire takes lease name. A lease held by a process on this machine
// that is dead or dying (no such process, a zombie, its exit begun or a
// SIGKILL pending: procgroup.Dead) is tried again, for up to
// deadHolderWait: a SIGKILLed holder's lock is released by the kernel
// only once its last thread has exited (a thread in the middle of a write
// or an fsync goes last), a moment after its pid stops answering, so a
// restore right after a crash would otherwise be refused "held by pid N"
// for a process that is dead. A holder that is alive, on another machine,
// or that cannot be told (no pid, no procfs) is refused at once, as
// Acquire does: *storage.LeaseHeldError.
func (r *Rig) acquire(ctx context.Context, name string) (storage.Lease, error) {
	return acquireAfterExit(ctx, r.store, name)
}

// acquireAfterExit is acquire on store.
func acquireAfterExit(ctx context.Context, store storage.Leaser, name string) (storage.Lease, error) {
	var deadline time.Time
	for {
		l, err := store.Acquire(ctx, name)
		var held *storage.LeaseHeldError
		if err == nil || !errors.As(err, &held) || !holderExited(held.Holder) {
			return l, err
		}
		now := time.Now()
		if deadline.IsZero() {
			deadline = now.Add(deadHolderWait)
		}
		if now.After(deadline) {
			return nil, err
		}
		t := time.NewTimer(deadHolderPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// holderExited reports whether h is a process of this machine that is
// dead or dying.
func holderExited(h storage.Holder) bool {
	if h.PID <= 0 || h.Host == "" || h.Host != hostname() {
		return false
	}
	dead, err := procgroup.Dead(h.PID)
	return err == nil && dead
}
