package fsstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"looprig/fsstore/internal/fsutil"
	"looprig/fsstore/internal/lease"
)

// Change stamps (storage.ChangeStamper). Every KV put or delete and every
// lease grant, break and release of any process sets the modification time
// of the store directory to now, after the change. A holder's death
// changes no file: the deaths of the holders a listing's probes saw held
// are counted from their process descriptors (lease.HolderStamp: one
// epoll_wait, Linux 5.3+), else read from the kernel's lock table. A stamp
// is therefore the directory's mtime plus that count, or a summary of
// /proc/locks (lease.LockTableStamp): one stat and one system call, or one
// stat and one read of the table, whatever the number of sessions.
//
// Timestamps come from a clock that ticks in steps of a few milliseconds,
// so two changes may leave the same mtime. A stamp taken before the last
// change settled (fsutil.Settled) is therefore unsettled: it includes a
// counter, so it equals no other stamp and the caller looks again. Without a
// lock table (Darwin has none; Linux without /proc) every stamp is
// unsettled: a holder's death would not move it.

// settled reports whether a change at mtime is old enough that the next
// change will leave another mtime (fsutil.Settled).
func settled(mtime time.Time) bool { return fsutil.Settled(mtime, time.Now()) }

// touch records a change others can see: the store directory's mtime
// becomes now. It is a hint, so it is not synced and cannot fail a change.
func (s *Store) touch() {
	_ = unix.UtimesNanoAt(unix.AT_FDCWD, s.dir, nil, 0)
}

// ChangeStamp implements storage.ChangeStamper.
func (s *Store) ChangeStamp(ctx context.Context) (string, error) {
	if err := ctxErr(ctx); err != nil {
		return "", err
	}
	var st unix.Stat_t
	if err := unix.Stat(s.dir, &st); err != nil {
		return "", fmt.Errorf("change stamp: %w", err)
	}
	mtime := time.Unix(st.Mtim.Unix())
	stamp := strconv.FormatInt(mtime.UnixNano(), 36)
	if deaths, ok := s.leases.HolderStamp(); ok {
		stamp += "p" + strconv.FormatUint(deaths, 36)
		if !settled(mtime) {
			stamp += "-" + s.unsettled()
		}
		return stamp, nil
	}
	if !s.leases.WatchesLockFiles() {
		if err := s.watchLockFiles(); err != nil {
			return "", fmt.Errorf("change stamp: %w", err)
		}
	}
	locks, err := s.leases.LockTableStamp()
	switch {
	case errors.Is(err, lease.ErrProbeUnsupported):
		return stamp + "-" + s.unsettled(), nil
	case err != nil:
		return "", fmt.Errorf("change stamp: %w", err)
	}
	stamp += "." + strconv.FormatUint(locks, 36)
	if !settled(mtime) {
		stamp += "-" + s.unsettled()
	}
	return stamp, nil
}

// DurableStamp implements storage.DurableStamper: the store directory's
// device, inode and modification time, which every KV change and every
// lease grant, release and break of any process sets (touch), once the
// last change has settled. Unlike ChangeStamp it counts no holder's
// death, which changes no file: that is the caller's to allow for.
func (s *Store) DurableStamp(ctx context.Context) (string, bool, error) {
	if err := ctxErr(ctx); err != nil {
		return "", false, err
	}
	var st unix.Stat_t
	if err := unix.Stat(s.dir, &st); err != nil {
		return "", false, fmt.Errorf("durable stamp: %w", err)
	}
	mtime := time.Unix(st.Mtim.Unix())
	if !settled(mtime) {
		return "", false, nil
	}
	return "fs." + strconv.FormatUint(uint64(st.Dev), 36) + "." + strconv.FormatUint(st.Ino, 36) + "." +
		strconv.FormatInt(mtime.UnixNano(), 36), true, nil
}

// watchLockFiles tells the lease manager which lock files the store has,
// so that flocks of other programs do not move the stamp. Lock files made
// later come with an epoch file write, which touches the store.
func (s *Store) watchLockFiles() error {
	root := filepath.Join(s.dir, "leases")
	files, err := walkFiles(root, func(base string) bool {
		return strings.HasSuffix(base, ".lock") && !strings.HasPrefix(base, ".")
	})
	if err != nil {
		return err
	}
	inodes := make(map[uint64]struct{}, len(files))
	for _, rel := range files {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(root, rel), &st); err == nil {
			inodes[uint64(st.Ino)] = struct{}{}
		}
	}
	s.leases.WatchLockFiles(inodes)
	return nil
}

// unsettled returns a suffix no earlier stamp of s had.
func (s *Store) unsettled() string {
	return strconv.FormatUint(s.unsettledCount.Add(1), 36)
}
