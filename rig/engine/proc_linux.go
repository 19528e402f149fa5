package engine

// Process handling of the shell engine on Linux (see proc_unix.go): waitid
// and /proc.

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// ioctlInQueue counts the bytes waiting to be read on a pipe or a pty
// (FIONREAD).
const ioctlInQueue = unix.TIOCINQ

// waitExit blocks until process pid has exited, without reaping it.
func waitExit(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// groupAlive reports whether a process that is not a zombie is in process
// group pgid. Zombies do not count: an unreaped leader, or orphans whose
// reaper is slow (or absent, under an init that does not reap).
func groupAlive(pgid int) bool {
	if err := unix.Kill(-pgid, 0); err == unix.ESRCH {
		return false
	}
	d, err := os.Open("/proc")
	if err != nil {
		return true // cannot tell: assume alive (callers bound their waits)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return true
	}
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may contain anything.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 3 {
			continue
		}
		if pg, err := strconv.Atoi(string(f[2])); err != nil || pg != pgid {
			continue
		}
		if st := f[0]; len(st) == 1 && (st[0] == 'Z' || st[0] == 'X') {
			continue
		}
		return true
	}
	return false
}
