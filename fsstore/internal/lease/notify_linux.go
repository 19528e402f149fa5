package lease

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// notifier tells the watchdog that something changed in the directories
// of the leases it watches (inotify): a lock file replaced or removed, an
// epoch file rewritten. The watchdog then checks at once instead of waiting
// for its next period, and can poll seldom while nothing happens.
type notifier struct {
	fd      int
	f       *os.File // fd, read through the runtime's poller
	changes chan struct{}
	wg      sync.WaitGroup

	mu   sync.Mutex
	dirs map[string]bool
}

// dirEvents are the events that may mean a lease was lost: the lock file
// or the epoch file created, removed, renamed over, rewritten, or its link
// count changed; or the directory itself moved or removed.
const dirEvents = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM |
	unix.IN_CLOSE_WRITE | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// newNotifier returns a running notifier, or nil when inotify is not
// available (the watchdog then only polls).
func newNotifier() *notifier {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil
	}
	n := &notifier{fd: fd, f: os.NewFile(uintptr(fd), "inotify"), changes: make(chan struct{}, 1), dirs: map[string]bool{}}
	n.wg.Go(n.read)
	return n
}

// watch adds dir to the watched directories. It reports false when dir
// cannot be watched (the watchdog must then poll at its own period).
func (n *notifier) watch(dir string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.dirs[dir] {
		return true
	}
	if _, err := unix.InotifyAddWatch(n.fd, dir, dirEvents); err != nil {
		return false
	}
	n.dirs[dir] = true
	return true
}

// read turns every batch of events (an overflow included) into one signal
// on changes, until the notifier is closed.
func (n *notifier) read() {
	buf := make([]byte, 4096)
	for {
		if _, err := n.f.Read(buf); err != nil {
			return
		}
		select {
		case n.changes <- struct{}{}:
		default: // a check is already due
		}
	}
}

// close stops the notifier and waits for its reader.
func (n *notifier) close() {
	n.f.Close()
	n.wg.Wait()
}
