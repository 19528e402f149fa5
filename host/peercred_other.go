//go:build !linux && !darwin && !freebsd

package host

import (
	"errors"
	"net"
	"runtime"
)

// peerUID cannot tell who connected on this platform: every peer is
// refused rather than trusted.
func peerUID(*net.UnixConn) (int, error) {
	return -1, errors.New("peer credentials are not available on " + runtime.GOOS)
}
