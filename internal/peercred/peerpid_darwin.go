package peercred

import (
	"net"

	"golang.org/x/sys/unix"
)

// PID returns the pid of the process at the other end of c: for a
// client, the process that listens (LOCAL_PEERPID).
func PID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	var pid int
	var serr error
	if err := raw.Control(func(fd uintptr) {
		pid, serr = unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	}); err != nil {
		return -1, err
	}
	if serr != nil {
		return -1, serr
	}
	return pid, nil
}
