package fsstore

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"looprig/fsstore/internal/dirnotify"
	"looprig/rig/storage"
)

var _ storage.KeyWatcher = (*Store)(nil)

// inotifyInit makes an inotify instance (tests make it fail).
var inotifyInit = func() (int, error) { return unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK) }

// keyEvents are the changes of a key's directory that may be a put or a
// delete of the key (a put renames a temp file over it) or the directory
// itself going away.
const keyEvents = unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_CREATE | unix.IN_DELETE |
	unix.IN_CLOSE_WRITE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// WatchKey implements storage.KeyWatcher with inotify on the key's own
// directory (a session's keys are alone in theirs: other sessions' puts do
// not signal), or dnotify when no inotify instance is left (told only when
// the directory's entries moved: dnotify's signal is the process's, and
// other directories' changes would wake every watcher). The directory
// must exist; a missing one is an error.
func (s *Store) WatchKey(key string) (<-chan struct{}, func(), error) {
	if err := storage.ValidateName(key); err != nil {
		return nil, nil, err
	}
	dir := filepath.Dir(s.kvPath(key))
	fd, err := inotifyInit()
	if err != nil {
		// No inotify instance left (a user has 128 by default; a thousand
		// hosts each watch a key): dnotify on the same directory.
		changed := make(chan struct{}, 1)
		stop, derr := dirnotify.WatchEntries(dir, changed)
		if derr != nil {
			return nil, nil, fmt.Errorf("watch %s: %w; %w", key, err, derr)
		}
		return changed, stop, nil
	}
	if _, err := unix.InotifyAddWatch(fd, dir, keyEvents); err != nil {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("watch %s: %s: %w", key, dir, err)
	}
	f := os.NewFile(uintptr(fd), "inotify") // read through the runtime's poller
	changed := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 512) // one event with a short name at least; an overflow still reads as a change
		for {
			if _, err := f.Read(buf); err != nil {
				return
			}
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	})
	var once sync.Once
	return changed, func() { once.Do(func() { f.Close(); wg.Wait() }) }, nil
}
