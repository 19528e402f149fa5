//go:build linux

package peercred

import (
	"net"

	"golang.org/x/sys/unix"
)

// cred returns the credentials of the process at the other end of c
// (SO_PEERCRED: a client's when it connected, a listener's when it called
// listen).
func cred(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, serr
	}
	return cred, nil
}

// UID returns the uid of the process at the other end of c.
func UID(c *net.UnixConn) (int, error) {
	cr, err := cred(c)
	if err != nil {
		return -1, err
	}
	return int(cr.Uid), nil
}

// PID returns the pid of the process at the other end of c: for a
// client, the process that listens.
func PID(c *net.UnixConn) (int, error) {
	cr, err := cred(c)
	if err != nil {
		return -1, err
	}
	return int(cr.Pid), nil
}
