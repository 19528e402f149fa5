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
	"time"

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

// openLockFile opens (creating it 0600 if needed) the lock file at path for
// flock, without following a symlink and without blocking on a FIFO. Every
// call returns a fresh file description: flock locks belong to open file
// descriptions, so two descriptors from two calls conflict even inside one
// process.
func openLockFile(path string) (int, error) {
	const flags = unix.O_RDWR | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	for tries := 0; ; tries++ {
		fd, err := openRetry(path, flags, 0)
		if err == unix.ENOENT && tries < 100 {
			fd, err = openRetry(path, flags|unix.O_CREAT|unix.O_EXCL, fileMode)
			if err == unix.EEXIST {
				continue // created by someone else meanwhile
			}
			if err == nil {
				if err := unix.Fchmod(fd, fileMode); err != nil { // undo any umask
					unix.Close(fd)
					return -1, &fs.PathError{Op: "chmod", Path: path, Err: err}
				}
			}
		}
		if err == unix.ELOOP {
			return -1, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("lock file is a symbolic link: %w", ErrUnsafeFile)}
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, &fs.PathError{Op: "fstat", Path: path, Err: err}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			unix.Close(fd)
			return -1, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("lock file: %w", ErrUnsafeFile)}
		}
		return fd, nil
	}
}

// createTempLockFile creates a new, empty lock file next to lockPath under a
// random name and returns its path and descriptor.
func createTempLockFile(lockPath string) (string, int, error) {
	dir, base := filepath.Split(lockPath)
	const flags = unix.O_RDWR | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	for tries := 0; ; tries++ {
		p := filepath.Join(dir, "."+base+".break-"+strconv.FormatUint(rand.Uint64(), 36))
		fd, err := openRetry(p, flags, fileMode)
		if err == unix.EEXIST && tries < 100 {
			continue
		}
		if err != nil {
			return "", -1, &fs.PathError{Op: "create", Path: p, Err: err}
		}
		if err := unix.Fchmod(fd, fileMode); err != nil {
			unix.Close(fd)
			unix.Unlink(p)
			return "", -1, &fs.PathError{Op: "chmod", Path: p, Err: err}
		}
		return p, fd, nil
	}
}

// fileID is what identifies an inode.
type fileID struct{ dev, ino uint64 }

func idOf(st *unix.Stat_t) fileID { return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)} }

// pathNamesFD reports whether path (not following a final symlink) names
// the inode open on fd and that inode still has a link. It returns the
// inode's identity.
func pathNamesFD(fd int, path string) (fileID, bool, error) {
	var fst, pst unix.Stat_t
	if err := unix.Fstat(fd, &fst); err != nil {
		return fileID{}, false, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	id := idOf(&fst)
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
