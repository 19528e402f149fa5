package lease

// Lease probing on Darwin: fcntl(F_GETLK) on each lock file.
//
// Darwin has no /proc/locks. Its flock(2) and fcntl(2) locks are two
// faces of one mechanism: both go through VNOP_ADVLOCK into the same
// per-vnode lock list (xnu bsd/kern/kern_lockf.c, lf_advlock), flock's
// owned by the open file description, fcntl's by the process. F_GETLK
// looks for the first lock of that list that is not the caller's own and
// conflicts with the one described (lf_getlock, lf_getblock): a flock
// taken through another open file description is never "the caller's
// own", so F_GETLK for a write lock over the whole file reports any flock
// on the file, the calling process's included (as /proc/locks does).
//
// F_GETLK takes no lock, so a probe cannot make a concurrent Acquire see
// the lease as held (a non-blocking flock attempt on a second descriptor
// would: Acquire's own non-blocking flock could hit the probe's lock in
// the microseconds it is held). The lock file is opened read-only and
// never created; closing that descriptor releases only this process's
// fcntl locks on the file, and looprig takes none there: its leases are
// flocks.

import (
	"context"
	"fmt"
	"io/fs"

	"golang.org/x/sys/unix"

	"looprig/fsstore/internal/fsutil"
	"looprig/rig/storage"
)

// probeState: nothing to learn; each probe asks about each file.
type probeState struct{}

func newProbeState() probeState { return probeState{} }

// probeHeld sets out[p.i].Held for each pending lease: whether its lock
// file is locked (lockFileHeld), asked file by file, on a few goroutines
// when there are many.
func (m *Manager) probeHeld(ctx context.Context, reqs []ProbeRequest, pend []pendingProbe, _ map[uint64]struct{}, out []storage.LeaseStatus) error {
	errs := make([]error, len(pend))
	inParallel(ctx, len(pend), func(k int) {
		p := pend[k]
		out[p.i].Held, errs[k] = lockFileHeld(reqs[p.i].LockPath)
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	for k, err := range errs {
		if err != nil {
			return fmt.Errorf("probe lease %q: %w", reqs[pend[k].i].Name, err)
		}
	}
	return nil
}

// lockFileHeld reports whether a flock (or any lock) is held on the file
// at path, by anyone, without taking one. A path that is gone, a symbolic
// link or not a regular file is not held: Acquire never locks such a
// path.
func lockFileHeld(path string) (bool, error) {
	fd, err := fsutil.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case err == unix.ENOENT || err == unix.ELOOP:
		return false, nil
	case err != nil:
		return false, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false, nil
	}
	for {
		lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0 /* SEEK_SET */, Start: 0, Len: 0 /* to the end */}
		err := unix.FcntlFlock(uintptr(fd), unix.F_GETLK, &lk)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, &fs.PathError{Op: "fcntl F_GETLK", Path: path, Err: err}
		}
		return lk.Type != unix.F_UNLCK, nil
	}
}

// LockTableStamp would summarise the kernel's lock table; Darwin has none
// to read at once, so it always fails with ErrProbeUnsupported, and the
// store's change stamps are always unsettled there (fsstore/changes.go):
// a listing looks again rather than trust a stamp that cannot see a
// holder's death.
func (m *Manager) LockTableStamp() (uint64, error) {
	return 0, fmt.Errorf("%w: no lock table on darwin", ErrProbeUnsupported)
}
