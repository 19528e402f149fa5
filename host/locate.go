package host

import (
	"context"
	"errors"
	"io/fs"
	"looprig/internal/peercred"
	"net"
	"os"
	"syscall"
)

// Connect dials the host of session id of the store named storeKey on this
// machine and says hello. It returns ErrNotHosted when no host answers:
// no socket, or a socket nobody listens on any more (its host was killed).
// A host that answers for another session is refused as not hosting this
// one.
func Connect(ctx context.Context, storeKey, id string, opts ...DialOption) (*Client, error) {
	dir, err := SocketDir(storeKey)
	if err != nil {
		return nil, err
	}
	path, err := SocketPath(dir, id)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotHosted
	}
	c, err := Dial(ctx, path, opts...)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fs.ErrNotExist) {
			return nil, ErrNotHosted
		}
		return nil, err
	}
	if c.Hello().Session != id {
		c.Close()
		return nil, ErrNotHosted
	}
	return c, nil
}

// Probe reports who hosts session id on this machine: the host's hello,
// or ErrNotHosted.
func Probe(ctx context.Context, storeKey, id string, opts ...DialOption) (Hello, error) {
	c, err := Connect(ctx, storeKey, id, opts...)
	if err != nil {
		return Hello{}, err
	}
	defer c.Close()
	return c.Hello(), nil
}

// ServingPID returns the pid of the process listening on session id's
// socket in dir (SocketDir of the store), or ErrNotHosted when none
// listens. The kernel says who listens (SO_PEERCRED, LOCAL_PEERPID) as
// the connection is made, without a word from the host: a listing of many
// sessions costs one connect each and waits for no host to be scheduled
// (a host stopped by SIGSTOP is found as quickly; attaching to it is what
// then waits). The host sees a client leave before its hello. Where the
// kernel does not say, the host's hello does.
func ServingPID(ctx context.Context, dir, id string, opts ...DialOption) (int, error) {
	path, err := SocketPath(dir, id)
	if err != nil {
		return 0, err
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fs.ErrNotExist) {
			return 0, ErrNotHosted
		}
		return 0, err
	}
	pid, err := peercred.PID(nc.(*net.UnixConn))
	nc.Close()
	if err == nil {
		return pid, nil
	}
	c, err := Dial(ctx, path, opts...)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fs.ErrNotExist) {
			return 0, ErrNotHosted
		}
		return 0, err
	}
	defer c.Close()
	if c.Hello().Session != id {
		return 0, ErrNotHosted
	}
	return c.Hello().PID, nil
}
