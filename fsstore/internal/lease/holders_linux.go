package lease

import (
	"sync"

	"golang.org/x/sys/unix"

	"looprig/rig/storage"
)

// Holder deaths without the lock table (Linux 5.3+: pidfd). A holder's
// death changes no file; the lock table (/proc/locks) shows it, but reading
// that table costs about a millisecond per thousand entries, and a TUI
// showing a thousand sessions read it twice a second (a third of its idle
// CPU). A process descriptor (pidfd_open) of each holder a probe saw held
// instead becomes readable when the holder exits; one epoll of them all
// answers "did any die?" with one system call. HolderStamp counts the
// deaths seen.
//
// A holder is watched when a probe finds its lease held and its epoch file
// names a pid on this host. A lease held by a process the watch cannot
// name (no pid, another host's name: another pid namespace sharing the
// directory) makes the watch incomplete for good, and HolderStamp gives
// way to the lock table.

// maxWatchedHolders bounds the descriptors the watch keeps: past it, it is
// incomplete (the lock table again).
const maxWatchedHolders = 4096

// holderWatch is the Manager's watch of holders' deaths.
type holderWatch struct {
	mu         sync.Mutex
	epfd       int         // -1: pidfd or epoll unavailable
	byPID      map[int]int // pid → its pidfd
	byFD       map[int]int // pidfd → pid
	deaths     uint64
	incomplete bool
}

// newHolderWatch returns a watch, or one that is never complete where
// pidfds or epoll are not available.
func newHolderWatch() *holderWatch {
	w := &holderWatch{epfd: -1, byPID: map[int]int{}, byFD: map[int]int{}}
	self, err := unix.PidfdOpen(unix.Getpid(), 0)
	if err != nil {
		return w // Linux before 5.3, or seccomp
	}
	unix.Close(self)
	if w.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		w.epfd = -1
	}
	return w
}

// note watches the holders of the held leases in out; host is this host's
// name as holders write it.
func (w *holderWatch) note(out []storage.LeaseStatus, host string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.epfd < 0 || w.incomplete {
		return
	}
	for _, st := range out {
		if !st.Held {
			continue
		}
		pid := st.Holder.PID
		if pid <= 0 || st.Holder.Host != host || len(w.byPID) >= maxWatchedHolders {
			w.incomplete = true
			return
		}
		if _, ok := w.byPID[pid]; ok {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0) // close-on-exec always
		if err == unix.ESRCH {
			w.deaths++ // it died since the probe saw its lease held
			continue
		}
		if err != nil {
			w.incomplete = true // out of descriptors, or not ours to watch
			return
		}
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
		if err := unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			unix.Close(fd)
			w.incomplete = true
			return
		}
		w.byPID[pid], w.byFD[fd] = fd, pid
	}
}

// stamp returns the deaths seen so far, after taking in those that
// happened since the last call; ok is false when the watch cannot tell.
func (w *holderWatch) stamp() (deaths uint64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.epfd < 0 || w.incomplete {
		return 0, false
	}
	var evs [64]unix.EpollEvent
	for {
		n, err := unix.EpollWait(w.epfd, evs[:], 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			w.incomplete = true
			return 0, false
		}
		for _, ev := range evs[:n] {
			fd := int(ev.Fd)
			unix.EpollCtl(w.epfd, unix.EPOLL_CTL_DEL, fd, nil)
			unix.Close(fd)
			delete(w.byPID, w.byFD[fd])
			delete(w.byFD, fd)
			w.deaths++
		}
		if n < len(evs) {
			return w.deaths, true
		}
	}
}

// close releases the descriptors.
func (w *holderWatch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for fd := range w.byFD {
		unix.Close(fd)
	}
	w.byPID, w.byFD = map[int]int{}, map[int]int{}
	if w.epfd >= 0 {
		unix.Close(w.epfd)
		w.epfd = -1
	}
}
