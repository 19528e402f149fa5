package host

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// SocketExistsError: Listen found a file where the socket goes. When
// NotSocket is false it is a socket Listen was not told is stale (another
// host may serve it); when true, something else that Listen never removes.
type SocketExistsError struct {
	Path      string
	NotSocket bool
}

func (e *SocketExistsError) Error() string {
	if e.NotSocket {
		return fmt.Sprintf("%s exists and is not a socket; remove it by hand if it is yours", e.Path)
	}
	return fmt.Sprintf("socket %s exists: another host may be serving this session", e.Path)
}

// Listen creates the unix socket path, mode 0600, in a directory that
// passes SocketDir's checks (owned by this uid, mode 0700). A socket file
// already at path is removed when stale is true — pass it only while
// holding the session's lease: then nobody else can be serving the
// session — and refused (*SocketExistsError) otherwise. The listener does
// not unlink the socket when closed (a successor may own the path by
// then); Serve removes it when it ends, if it is still the one it served.
func Listen(path string, stale bool) (*net.UnixListener, error) {
	if len(path) > MaxSocketPath {
		return nil, &SocketPathTooLongError{Path: path, Len: len(path), Max: MaxSocketPath}
	}
	if err := checkDir(filepath.Dir(path), os.Getuid()); err != nil {
		return nil, err
	}
	fi, err := os.Lstat(path)
	switch {
	case err == nil:
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, &SocketExistsError{Path: path, NotSocket: true}
		}
		if !stale {
			return nil, &SocketExistsError{Path: path}
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false)
	// Nothing is accepted before this: the 0700 directory keeps everyone
	// else out in between, whatever the umask made of the socket's mode.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		os.Remove(path)
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	return ln, nil
}

type fileID struct{ dev, ino uint64 }

// socketID identifies the file at path, so that Serve removes only the
// socket it served.
func socketID(path string) (fileID, bool) {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != fs.ModeSocket {
		return fileID{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true
}
