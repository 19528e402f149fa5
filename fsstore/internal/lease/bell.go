package lease

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A lease's bell is a directory of its own that Break rings (an entry made
// and removed in it) once it has replaced the lease's lock file, and a
// grant once it has written its epoch. A holder
// without inotify (dnotify, whose signal is the process's and covers a
// whole directory) watches its bell, not the leases' directory that every
// other lease's files share: there, each grant and release of a
// neighbour woke every such holder (at a thousand hosts, a session begun
// cost the others about 2 s of CPU together, and the garbage of those
// wakes stayed in their memory).
//
// A live holder's lease goes to another process by Break, or by a grant
// once its lock file was removed by hand (an Acquire is refused while the
// holder's flock on the file stands): either rings, so the holder learns
// of the loss at once, as with inotify. A loss that gives the lease to no
// one (a lock or epoch file removed or rewritten by hand) or by an older
// looprig, which rings no bell, is found by the watchdog's poll
// (notifiedPoll), and the fence stops the old holder's appends before
// that.
//
// Bells live in the ".bells" directory beside the lock files, one per
// lease name: a name's segments never begin with a dot, so no lease's
// files are there, and the store's walks skip it. A bell outlives its
// lease, as the lock and epoch files do.

// bellsDir is the directory of the bells beside a lease's lock file.
const bellsDir = ".bells"

// bellPath is the bell of the lease whose lock file is lockPath.
func bellPath(lockPath string) string {
	return filepath.Join(filepath.Dir(lockPath), bellsDir, strings.TrimSuffix(filepath.Base(lockPath), ".lock"))
}

// makeBell makes the bell of the lease whose lock file is lockPath (0700,
// with its parent), for a holder that watches it.
func makeBell(lockPath string) (string, error) {
	bell := bellPath(lockPath)
	return bell, mkdirAll(bell)
}

// rings counts this process's rings, to name each one's entry.
var rings atomic.Uint64

// ringBell rings the bell of the lease whose lock file is lockPath: an
// entry made and removed in it, which tells a holder that watches it. A
// lease without a bell has no holder listening for one: nothing to do.
// Errors are not the caller's: a holder that missed the ring finds the
// loss at its next poll.
func ringBell(lockPath string) {
	fd, err := unix.Open(bellPath(lockPath), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	name := ".ring-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(rings.Add(1), 10)
	f, err := unix.Openat(fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return
	}
	unix.Close(f)
	unix.Unlinkat(fd, name, 0)
}
