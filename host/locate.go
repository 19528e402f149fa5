package host

import (
	"context"
	"errors"
	"io/fs"
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
