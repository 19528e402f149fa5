package lease

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/gofrs/flock"
	"golang.org/x/sys/unix"

	"looprig/fsstore/internal/fsutil"
)

const (
	dirMode  = 0o700
	fileMode = 0o600
)

// ErrUnsafeFile is wrapped by the error an operation returns when a lease
// file is a symbolic link or not a regular file. Such a path is never
// followed, locked or written through.
var ErrUnsafeFile = errors.New("not a regular file (refusing symlinks and special files)")

// flockRetry is flock(2) retried on EINTR.
func flockRetry(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if err != unix.EINTR {
			return err
		}
	}
}

// mkdirAll creates dir and any missing parents. Directories it creates get
// mode 0700 exactly (chmod after mkdir undoes the umask) and their parent
// directory is fsynced, so that an epoch file written below survives a
// crash together with the directories that hold it. Existing directories
// are left as they are.
func mkdirAll(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: unix.ENOTDIR}
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, dirMode); err != nil {
		if errors.Is(err, fs.ErrExist) { // lost a race with another creator
			if fi, serr := os.Stat(dir); serr == nil && fi.IsDir() {
				return nil
			}
		}
		return err
	}
	if err := os.Chmod(dir, dirMode); err != nil {
		return err
	}
	return fsutil.SyncDir(parent)
}

// lockFlags open a lock file read-write, creating it if needed, never
// through a symbolic link (O_NOFOLLOW) and never blocking on a FIFO
// (O_NONBLOCK).
const lockFlags = os.O_RDWR | os.O_CREATE | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC

// tryLockFile opens a fresh flock.Flock on path and tries an exclusive,
// non-blocking lock. Every call has its own open file description: flock
// locks belong to those, so two calls conflict even inside one process.
// held reports that another description holds the lock; on success the
// returned Flock owns the locked descriptor. A symlink or a non-regular
// file at path is refused with ErrUnsafeFile.
func tryLockFile(path string, flags int) (fl *flock.Flock, held bool, err error) {
	for {
		fl = flock.New(path, flock.SetFlag(flags), flock.SetPermissions(fileMode))
		ok, err := fl.TryLock()
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ELOOP):
			return nil, false, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("lock file is a symbolic link: %w", ErrUnsafeFile)}
		case err != nil:
			return nil, false, &fs.PathError{Op: "flock", Path: path, Err: err}
		case !ok:
			return nil, true, nil
		}
		st, err := statLock(fl)
		if err != nil {
			fl.Close()
			return nil, false, &fs.PathError{Op: "fstat", Path: path, Err: err}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			fl.Close()
			return nil, false, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("lock file: %w", ErrUnsafeFile)}
		}
		return fl, false, nil
	}
}

// statLock is fstat of the descriptor a locked Flock holds.
func statLock(fl *flock.Flock) (*syscall.Stat_t, error) {
	fi, err := fl.Stat()
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("no stat_t for %s", fl.Path())
	}
	return st, nil
}

// createTempLockFile creates and locks a new, empty lock file next to
// lockPath under a random name and returns its path and Flock.
func createTempLockFile(lockPath string) (string, *flock.Flock, error) {
	dir, base := filepath.Split(lockPath)
	for tries := 0; ; tries++ {
		p := filepath.Join(dir, "."+base+".break-"+strconv.FormatUint(rand.Uint64(), 36))
		fl, held, err := tryLockFile(p, lockFlags|os.O_EXCL)
		if errors.Is(err, fs.ErrExist) && tries < 100 {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		if held { // impossible for a file we just created
			return "", nil, fmt.Errorf("new lock file %s is locked by someone else", p)
		}
		return p, fl, nil
	}
}

// fileID is what identifies an inode.
type fileID struct{ dev, ino uint64 }

func idOf(st *unix.Stat_t) fileID { return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)} }

func idOfSys(st *syscall.Stat_t) fileID { return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)} }

// pathNamesLock reports whether path (not following a final symlink) names
// the inode fl has locked and that inode still has a link. It returns the
// inode's identity.
func pathNamesLock(fl *flock.Flock, path string) (fileID, bool, error) {
	fst, err := statLock(fl)
	if err != nil {
		return fileID{}, false, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	var pst unix.Stat_t
	id := idOfSys(fst)
	if fst.Nlink == 0 {
		return id, false, nil
	}
	if err := unix.Lstat(path, &pst); err != nil {
		if err == unix.ENOENT {
			return id, false, nil
		}
		return id, false, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	return id, idOf(&pst) == id, nil
}
