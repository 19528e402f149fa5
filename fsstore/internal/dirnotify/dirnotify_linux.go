// Package dirnotify tells of changes in a directory with dnotify
// (fcntl F_NOTIFY): the fallback where inotify is not available, most
// often because the user's inotify instances are used up
// (fs.inotify.max_user_instances, 128 by default: a thousand background
// hosts cannot each have one). dnotify costs an open descriptor, not an
// instance, and signals the process (SIGIO), which cannot tell which
// directory changed: every watcher of the process is told of every change,
// but a watcher of a directory's entries (WatchEntries), whose directory's
// modification time stood still.
package dirnotify

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"looprig/fsstore/internal/fsutil"
)

// dnotify's event bits (linux/fcntl.h).
const (
	dnModify    = 0x2
	dnCreate    = 0x4
	dnDelete    = 0x8
	dnRename    = 0x10
	dnAttrib    = 0x20
	dnMultishot = 0x80000000
)

var hub struct {
	sync.Mutex
	started bool
	subs    map[*sub]struct{}
}

// sub is one watch. An entries watch is told only when its directory's
// own stamp moved (last: the stamp it was last told at).
type sub struct {
	c       chan<- struct{}
	fd      int
	entries bool
	last    dirStamp
}

// dirStamp is what a stat of a directory says of its entries: creating,
// removing or renaming one changes its modification and change times.
type dirStamp struct {
	ino          uint64
	mtime, ctime int64
}

// Watch arranges for a change in dir (an entry created, removed, renamed,
// written or its attributes changed) to send on c without blocking (give
// c a buffer of 1: signals are coalesced), until stop is called. A change
// in another directory watched in this process may signal c too.
func Watch(dir string, c chan<- struct{}) (stop func(), err error) {
	return watch(dir, c, false)
}

// WatchEntries is Watch for a reader of dir's entries only (files replaced
// by rename, created or removed): c is told when dir's own modification
// time moved, not of a change in another directory of this process, nor
// of a file in dir written in place. A process of a thousand watchers
// (sessions' hand-over keys) then wakes one of them per change, not all.
func WatchEntries(dir string, c chan<- struct{}) (stop func(), err error) {
	return watch(dir, c, true)
}

func watch(dir string, c chan<- struct{}, entries bool) (stop func(), err error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_NOTIFY, dnModify|dnCreate|dnDelete|dnRename|dnAttrib|dnMultishot); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fcntl F_NOTIFY", Path: dir, Err: err}
	}
	s := &sub{c: c, fd: fd, entries: entries}
	hub.Lock()
	if !hub.started {
		hub.started, hub.subs = true, map[*sub]struct{}{}
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGIO)
		go fanOut(sig)
	}
	if entries {
		s.last, _ = s.stamp() // what the watcher's first read will see
	}
	hub.subs[s] = struct{}{}
	hub.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			hub.Lock()
			delete(hub.subs, s)
			hub.Unlock()
			unix.Close(fd) // ends the notification; no longer stat'ed by fanOut
		})
	}, nil
}

// stamp is the directory's stamp, and whether its last change is old
// enough to be told from the next one (fsutil.Settled; until then an
// entries watch is told of every signal).
func (s *sub) stamp() (dirStamp, bool) {
	var st unix.Stat_t
	if err := unix.Fstat(s.fd, &st); err != nil {
		return dirStamp{}, false
	}
	mtime, ctime, now := time.Unix(st.Mtim.Unix()), time.Unix(st.Ctim.Unix()), time.Now()
	settled := fsutil.Settled(mtime, now) && fsutil.Settled(ctime, now)
	return dirStamp{ino: st.Ino, mtime: mtime.UnixNano(), ctime: ctime.UnixNano()}, settled
}

// fanOut tells the watchers of each SIGIO, for the life of the process:
// every plain watcher, and each entries watcher whose directory moved (or
// whose stamp cannot be trusted yet).
func fanOut(sig <-chan os.Signal) {
	for range sig {
		hub.Lock()
		for s := range hub.subs {
			if s.entries {
				st, settled := s.stamp()
				if settled && st == s.last {
					continue
				}
				s.last = st
			}
			select {
			case s.c <- struct{}{}:
			default:
			}
		}
		hub.Unlock()
	}
}
