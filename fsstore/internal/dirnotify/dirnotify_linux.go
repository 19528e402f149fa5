// Package dirnotify tells of changes in a directory with dnotify
// (fcntl F_NOTIFY): the fallback where inotify is not available, most
// often because the user's inotify instances are used up
// (fs.inotify.max_user_instances, 128 by default: a thousand background
// hosts cannot each have one). dnotify costs an open descriptor, not an
// instance, and signals the process (SIGIO), which cannot tell which
// directory changed: every watcher of the process is told of every change.
package dirnotify

import (
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
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

type sub struct{ c chan<- struct{} }

// Watch arranges for a change in dir (an entry created, removed, renamed,
// written or its attributes changed) to send on c without blocking (give
// c a buffer of 1: signals are coalesced), until stop is called. A change
// in another directory watched in this process may signal c too.
func Watch(dir string, c chan<- struct{}) (stop func(), err error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_NOTIFY, dnModify|dnCreate|dnDelete|dnRename|dnAttrib|dnMultishot); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fcntl F_NOTIFY", Path: dir, Err: err}
	}
	s := &sub{c: c}
	hub.Lock()
	if !hub.started {
		hub.started, hub.subs = true, map[*sub]struct{}{}
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGIO)
		go fanOut(sig)
	}
	hub.subs[s] = struct{}{}
	hub.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			unix.Close(fd) // ends the notification
			hub.Lock()
			delete(hub.subs, s)
			hub.Unlock()
		})
	}, nil
}

// fanOut tells every watcher of every SIGIO, for the life of the process.
func fanOut(sig <-chan os.Signal) {
	for range sig {
		hub.Lock()
		for s := range hub.subs {
			select {
			case s.c <- struct{}{}:
			default:
			}
		}
		hub.Unlock()
	}
}
