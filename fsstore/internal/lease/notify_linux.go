package lease

import (
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"looprig/fsstore/internal/dirnotify"
)

// notifier tells the watchdog that a file of one of its leases changed
// (inotify): the lock file unlinked or renamed over, the epoch file
// rewritten or replaced, or a lease's directory moved or removed. The
// watchdog then checks at once instead of waiting for its next period, and
// can poll seldom while nothing happens.
//
// It watches each lease's own files, never the directory's entries: a
// grant or release of another name in the same directory (another host's)
// does not wake it, so an idle holder's wakeups do not grow with the
// number of other holders.
//
// Without an inotify instance (a user has 128 by default: a thousand
// hosts cannot each have one) it falls back to dnotify (dirnotify) on each
// lease's bell (bell.go), which Break rings: as prompt for a break, and
// other holders' grants and releases do not wake it either. Where a bell
// cannot be made, on the leases' directories, which any change in wakes.
type notifier struct {
	fd      int      // inotify; -1 when dnotify is used instead
	f       *os.File // fd, read through the runtime's poller
	changes chan struct{}
	wg      sync.WaitGroup

	mu     sync.Mutex
	epochs map[string]int    // epoch file path -> watch descriptor of the inode it named
	dirs   map[string]func() // dnotify: stop of each watched directory
}

// inotifyInit makes an inotify instance (tests make it fail).
var inotifyInit = func() (int, error) { return unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK) }

// The watched events. The lock inode: its link count changed (unlinked, or
// renamed over: rename signals IN_ATTRIB on the inode it replaces) or it
// moved. The epoch file: the same, or written in place. A directory: only
// itself moved or removed (no event about its entries).
const (
	lockEvents  = unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF
	epochEvents = lockEvents | unix.IN_MODIFY | unix.IN_CLOSE_WRITE
	dirEvents   = unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR
)

// newNotifier returns a running notifier, or nil when inotify is not
// available (the watchdog then only polls).
func newNotifier() *notifier {
	fd, err := inotifyInit()
	if err != nil {
		return &notifier{fd: -1, changes: make(chan struct{}, 1), dirs: map[string]func(){}}
	}
	n := &notifier{fd: fd, f: os.NewFile(uintptr(fd), "inotify"), changes: make(chan struct{}, 1), epochs: map[string]int{}}
	n.wg.Go(n.read)
	return n
}

// watch adds the files of a lease: its lock file and epoch file, and their
// directories (themselves only). It reports false when one cannot be
// watched (the watchdog must then poll at its own period). An epoch file
// that is missing counts as watched: the check that follows every
// registration finds the loss.
func (n *notifier) watch(lockPath, epochPath string) bool {
	if n.fd < 0 {
		if bell, err := makeBell(lockPath); err == nil && n.watchDirs(dirnotify.WatchEntries, bell) {
			return true
		}
		return n.watchDirs(dirnotify.Watch, filepath.Dir(lockPath), filepath.Dir(epochPath))
	}
	ok := true
	for _, dir := range []string{filepath.Dir(lockPath), filepath.Dir(epochPath)} {
		if _, err := unix.InotifyAddWatch(n.fd, dir, dirEvents); err != nil {
			ok = false
		}
	}
	if _, err := unix.InotifyAddWatch(n.fd, lockPath, lockEvents|unix.IN_DONT_FOLLOW); err != nil {
		ok = false
	}
	return n.rewatchEpoch(epochPath) && ok
}

// rewatchEpoch watches the inode epochPath names now. An epoch file is
// replaced by rename, so the inode watched before may no longer be the
// file: the watchdog calls this before each read of it, so that a
// replacement after the read is an event on a watched inode.
func (n *notifier) rewatchEpoch(epochPath string) bool {
	if n.fd < 0 {
		return true // dnotify watches the directory
	}
	wd, err := unix.InotifyAddWatch(n.fd, epochPath, epochEvents|unix.IN_DONT_FOLLOW)
	if err != nil {
		return err == unix.ENOENT
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if old, ok := n.epochs[epochPath]; ok && old != wd {
		unix.InotifyRmWatch(n.fd, uint32(old)) // the replaced inode; gone already if it was freed
	}
	n.epochs[epochPath] = wd
	return true
}

// dnotifyCoalesce is how long the watchdog waits, after a dnotify signal,
// for the ones that follow it before it checks: a ring is two changes to
// the bell (an entry made and removed), and where the leases' directory is
// watched instead, a neighbour's grant is several (its lock file made, its
// epoch file written, renamed and synced), each a signal.
const dnotifyCoalesce = 50 * time.Millisecond

// coalesce is how long the watchdog waits after a signal before it checks
// (with inotify, on a lease's own files, no time).
func (n *notifier) coalesce() time.Duration {
	if n.fd < 0 {
		return dnotifyCoalesce
	}
	return 0
}

// poke asks the watchdog for a check.
func (n *notifier) poke() {
	select {
	case n.changes <- struct{}{}:
	default: // a check is already due
	}
}

// read turns every batch of events (an overflow included) into one signal
// on changes, until the notifier is closed.
func (n *notifier) read() {
	buf := make([]byte, 1024)
	for {
		if _, err := n.f.Read(buf); err != nil {
			return
		}
		n.poke()
	}
}

// watchDirs watches dirs with dnotify: with dirnotify.WatchEntries for a
// bell (a ring makes and removes an entry; a signal of another directory
// of this process is not its), dirnotify.Watch for the leases' directories
// (an epoch file written in place is a change too).
func (n *notifier) watchDirs(watch func(string, chan<- struct{}) (func(), error), dirs ...string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	ok := true
	for _, dir := range dirs {
		if n.dirs[dir] != nil {
			continue
		}
		stop, err := watch(dir, n.changes)
		if err != nil {
			ok = false
			continue
		}
		n.dirs[dir] = stop
	}
	return ok
}

// close stops the notifier and waits for its reader.
func (n *notifier) close() {
	if n.fd < 0 {
		n.mu.Lock()
		defer n.mu.Unlock()
		for _, stop := range n.dirs {
			stop()
		}
		return
	}
	n.f.Close()
	n.wg.Wait()
}
