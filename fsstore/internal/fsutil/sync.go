package fsutil

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"looprig/fsstore/internal/seam"
)

// Durability on each platform.
//
// Linux: fsync(2) and fdatasync(2) flush the file to the device and, on a
// device with a volatile write cache, issue a cache flush: once they
// return, the data survives a power cut.
//
// Darwin: fsync(2) only hands the data to the drive, whose cache may still
// lose it on a power cut; fcntl(F_FULLFSYNC) also asks the drive to flush
// its cache (what os.File.Sync and SQLite's fullfsync do). Some file
// systems refuse F_FULLFSYNC (SMB answers ENOTSUP, see Go issue 64215;
// others EINVAL): there Fsync and DataSync fall back to fsync, the best
// such a file system offers. Any other error is returned as is, never
// papered over by a weaker sync.

// Fsync makes the file fd is open on durable, its metadata included:
// fsync(2) on Linux, fcntl(F_FULLFSYNC) on Darwin (see above), retried on
// EINTR. A failure is an *fs.PathError naming path, the file fd is open on,
// and the call that failed.
func Fsync(fd int, path string) error {
	if err := seam.At(seam.Fsync, path); err != nil { // test seam: every fsync, in order
		return &fs.PathError{Op: "fsync", Path: path, Err: err}
	}
	return fullSync(fd, path, fullSyncCall, "fsync", unix.Fsync)
}

// SyncFile is Fsync of an *os.File. (os.File.Sync also issues F_FULLFSYNC
// on Darwin, but falls back to fsync on ENOTSUP only.)
func SyncFile(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = Fsync(int(fd), f.Name()) }); err != nil {
		return err
	}
	return serr
}

// DataSync makes the data of the file fd is open on durable, with the
// metadata needed to read it back (its size): fdatasync(2) on Linux,
// fcntl(F_FULLFSYNC) on Darwin, which has no cheaper full flush. Errors
// are as Fsync's.
func DataSync(fd int, path string) error {
	if err := seam.At(seam.DataSync, path); err != nil { // test seam: every data sync, in order
		return &fs.PathError{Op: dataSyncName, Path: path, Err: err}
	}
	return fullSync(fd, path, fullSyncCall, dataSyncName, dataSyncCall)
}

// syncCall is one sync system call; fullSyncCall, dataSyncName and
// dataSyncCall are the platform's (sync_linux.go, sync_darwin.go).
type syncCall struct {
	name string
	call func(fd int) error
}

// fullSync runs full (when the platform has one, else plain) on fd,
// retried on EINTR; if full is refused as unsupported (FallBackToFsync),
// it runs plain instead. The function values are parameters so that
// tests drive the decision on any platform.
func fullSync(fd int, path string, full syncCall, plainName string, plain func(int) error) error {
	if full.call != nil {
		err := retryEINTR(fd, full.call)
		if err == nil {
			return nil
		}
		if !FallBackToFsync(err) {
			return &fs.PathError{Op: full.name, Path: path, Err: err}
		}
	}
	if err := retryEINTR(fd, plain); err != nil {
		return &fs.PathError{Op: plainName, Path: path, Err: err}
	}
	return nil
}

// FallBackToFsync reports whether err, from fcntl(F_FULLFSYNC), says the
// file system does not support a full sync (ENOTSUP, EOPNOTSUPP, which
// Darwin keeps distinct, or EINVAL), so that a plain fsync is the most it
// can do. Any other error (EIO, ENOSPC, EBADF...) is a failed sync.
func FallBackToFsync(err error) bool {
	return err == unix.ENOTSUP || err == unix.EOPNOTSUPP || err == unix.EINVAL
}

func retryEINTR(fd int, call func(int) error) error {
	for {
		if err := call(fd); err != unix.EINTR {
			return err
		}
	}
}
