package logfile

import (
	"context"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lockFile takes the exclusive flock on the open file. With alive == nil
// it blocks in the kernel; otherwise it polls with backoff and gives up
// with alive's error as soon as alive returns one.
func (l *Log) lockFile(alive func() error) error {
	if alive == nil {
		for {
			err := unix.Flock(l.fd, unix.LOCK_EX)
			if err == nil {
				return nil
			}
			if err != unix.EINTR {
				return &os.PathError{Op: "flock", Path: l.path, Err: err}
			}
		}
	}
	backoff := 20 * time.Microsecond
	for {
		err := unix.Flock(l.fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			return &os.PathError{Op: "flock", Path: l.path, Err: err}
		}
		if err := alive(); err != nil {
			return err
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 2*time.Millisecond)
	}
}

// lockCtx takes the file lock, honouring ctx: it blocks in the kernel
// when ctx cannot be cancelled and polls otherwise.
func (l *Log) lockCtx(ctx context.Context) error {
	if ctx.Done() == nil {
		return l.lockFile(nil)
	}
	return l.lockFile(ctx.Err)
}

func (l *Log) unlockFile() {
	// Closing the descriptor would release the lock too; an error here
	// leaves nothing to do.
	_ = unix.Flock(l.fd, unix.LOCK_UN)
}
