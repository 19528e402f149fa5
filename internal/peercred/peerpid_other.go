//go:build !linux && !darwin

package peercred

import (
	"errors"
	"net"
	"runtime"
)

// errNoPeerPID: the kernel does not say who listens on a socket here.
var errNoPeerPID = errors.New("the pid of a socket's peer is not available on " + runtime.GOOS)

// PID cannot tell on this platform: ServingPID says hello instead.
func PID(*net.UnixConn) (int, error) { return -1, errNoPeerPID }
