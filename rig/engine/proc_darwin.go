package engine

// Process handling of the shell engine on Darwin (see proc_unix.go): no
// waitid, no /proc. A process's state comes from sysctl kern.proc, its exit
// from kqueue.

import (
	"time"

	"golang.org/x/sys/unix"
)

// ioctlInQueue counts the bytes waiting to be read on a pipe or a pty:
// FIONREAD, _IOR('f', 127, int) (not in golang.org/x/sys/unix for Darwin).
const ioctlInQueue = 0x4004667f

// szomb is p_stat of a zombie (sys/proc.h: SIDL 1, SRUN 2, SSLEEP 3,
// SSTOP 4, SZOMB 5).
const szomb = 5

// exitCheck is how often waitExit looks at the process itself, in case
// its kqueue event never comes.
const exitCheck = time.Second

// waitExit blocks until process pid, a child of this process, has exited,
// without reaping it: a kqueue EVFILT_PROC NOTE_EXIT event (registering it
// fails with ESRCH once the process has exited), with a look at the
// process's state every exitCheck as a safety net.
func waitExit(pid int) {
	if exited(pid) {
		return
	}
	kq, err := unix.Kqueue()
	if err != nil {
		pollExit(pid)
		return
	}
	defer unix.Close(kq)
	var ev unix.Kevent_t
	unix.SetKevent(&ev, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	ev.Fflags = unix.NOTE_EXIT
	for {
		_, err = unix.Kevent(kq, []unix.Kevent_t{ev}, nil, nil)
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.ESRCH {
		return // exited already
	}
	if err != nil {
		pollExit(pid)
		return
	}
	events := make([]unix.Kevent_t, 1)
	timeout := unix.NsecToTimespec(int64(exitCheck))
	for {
		n, err := unix.Kevent(kq, nil, events, &timeout)
		if (err == nil && n > 0) || exited(pid) {
			return
		}
	}
}

// pollExit is waitExit without kqueue.
func pollExit(pid int) {
	for !exited(pid) {
		time.Sleep(pollInterval)
	}
}

// exited reports whether the unreaped child pid has exited: it is a
// zombie, or gone (sysctl finds no such process). Any other failure of
// sysctl is "not known to have exited".
func exited(pid int) bool {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	switch {
	case err == unix.EIO: // no process: the sysctl returned nothing
		return true
	case err != nil:
		return false
	}
	return kp.Proc.P_pid == 0 || kp.Proc.P_stat == szomb
}

// groupAlive reports whether a process that is not a zombie is in process
// group pgid. Zombies do not count: an unreaped leader, or orphans whose
// reaper is slow.
func groupAlive(pgid int) bool {
	if err := unix.Kill(-pgid, 0); err == unix.ESRCH {
		return false
	}
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.pgrp", pgid)
	if err != nil {
		return true // cannot tell: assume alive (callers bound their waits)
	}
	for _, p := range procs {
		if p.Proc.P_stat != szomb {
			return true
		}
	}
	return false
}
