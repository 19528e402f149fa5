package lease

import (
	"context"
	"io/fs"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"looprig/fsstore/internal/fsutil"
)

// dirGuard is the directory guard.
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
	fd, err := fsutil.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
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
