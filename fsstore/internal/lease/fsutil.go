package lease

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"golang.org/x/sys/unix"
)

const (
	dirMode  = 0o700
	fileMode = 0o600
)

// ErrUnsafeFile is wrapped by the error an operation returns when a lease
// file is a symbolic link or not a regular file. Such a path is never
// followed, locked or written through.
var ErrUnsafeFile = errors.New("not a regular file (refusing symlinks and special files)")

func openRetry(path string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Open(path, flags, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func flockRetry(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if err != unix.EINTR {
			return err
		}
	}
}

func fsyncRetry(fd int, path string) error {
	for {
		err := unix.Fsync(fd)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "fsync", Path: path, Err: err}
		}
		return nil
	}
}

func syncDir(dir string) error {
	fd, err := openRetry(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	return fsyncRetry(fd, dir)
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
	return syncDir(parent)
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

// The directory guard.
//
// Every epoch read-modify-write (Acquire's and Break's) and Break's rename
// of a lock file happen under an exclusive flock on the directory that
// holds the lock file. Without it this interleaving would grant one epoch
// twice:
//
//	Acquire: lock inode A at lockPath, verify path -> A, read epoch N
//	Break:   rename new inode B over lockPath, read N, write N+1
//	Acquire: write N+1                      <- duplicate epoch
//
// Under the guard Acquire re-verifies that lockPath still names the inode it
// locked before reading the epoch; Break holds the guard from its rename to
// its epoch write. So the two critical sections are ordered: either Acquire
// writes N+1 first and Break then writes N+2 (and the Acquire's lease is
// lost to the replacement), or Break goes first and Acquire finds its inode
// replaced and retries (now refused: Break holds the new inode).
//
// The guard is a flock on a fresh O_RDONLY|O_DIRECTORY descriptor of the
// directory, so it excludes other processes and other descriptors of this
// process alike. It is taken by polling LOCK_NB with a short sleep, so a
// context can interrupt the wait. Within the process a semaphore per
// directory path is taken first, so goroutines queue on it instead of
// polling each other. Critical sections are short (two small fsyncs).
type dirGuard struct {
	fd  int
	dir string
	sem chan struct{}
}

var guardSems struct {
	sync.Mutex
	m map[string]chan struct{}
}

func guardSem(dir string) chan struct{} {
	guardSems.Lock()
	defer guardSems.Unlock()
	if guardSems.m == nil {
		guardSems.m = make(map[string]chan struct{})
	}
	s, ok := guardSems.m[dir]
	if !ok {
		s = make(chan struct{}, 1)
		guardSems.m[dir] = s
	}
	return s
}

// lockDir takes the directory guard of dir, waiting until ctx is done.
func lockDir(ctx context.Context, dir string) (*dirGuard, error) {
	sem := guardSem(dir)
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	fd, err := openRetry(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		<-sem
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	delay := 50 * time.Microsecond
	for {
		err := flockRetry(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return &dirGuard{fd: fd, dir: dir, sem: sem}, nil
		}
		if err != unix.EWOULDBLOCK {
			unix.Close(fd)
			<-sem
			return nil, &fs.PathError{Op: "flock", Path: dir, Err: err}
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			unix.Close(fd)
			<-sem
			return nil, ctx.Err()
		}
		if delay < 2*time.Millisecond {
			delay *= 2
		}
	}
}

func (g *dirGuard) unlock() {
	flockRetry(g.fd, unix.LOCK_UN)
	unix.Close(g.fd)
	<-g.sem
}
