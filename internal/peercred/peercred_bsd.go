//go:build darwin || freebsd

package peercred

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// xucredVersion is XUCRED_VERSION (sys/ucred.h), the only layout of struct
// xucred there is; getpeereid(3) refuses any other the same way.
const xucredVersion = 0

// UID returns the uid of the process at the other end of c: the
// effective uid it had when it connected (getsockopt SOL_LOCAL,
// LOCAL_PEERCRED: what getpeereid(3) reads).
func UID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *unix.Xucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if serr != nil {
		return -1, serr
	}
	if cred.Version != xucredVersion {
		return -1, fmt.Errorf("peer credentials: unknown xucred version %d", cred.Version)
	}
	return int(cred.Uid), nil
}
