package host

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"looprig/rig/fault"
)

// MaxSocketPath is the longest socket path SocketPath accepts, in bytes.
// sun_path holds 104 bytes on macOS and the BSDs (108 on Linux), its NUL
// included; 103 fits everywhere.
const MaxSocketPath = 103

// UnsafeSocketDirError refuses a socket directory that another user could
// have made or could reach: a symlink, not a directory, owned by another
// uid, or not mode 0700. Fix says what to do about it.
type UnsafeSocketDirError struct {
	Path   string
	Reason string
	Fix    string
}

// Explanation classifies it (fault.Explainer): kind unsafe_socket_dir,
// with the directory, why it is refused and what to do about it.
func (e *UnsafeSocketDirError) Explanation() fault.Explanation {
	return fault.Of(fault.KindUnsafeSocketDir, fault.Field{Name: "path", Value: e.Path},
		fault.Field{Name: "reason", Value: e.Reason}, fault.Field{Name: "fix", Value: e.Fix})
}

func (e *UnsafeSocketDirError) Error() string {
	msg := fmt.Sprintf("refusing socket directory %s: %s", e.Path, e.Reason)
	if e.Fix != "" {
		msg += " (" + e.Fix + ")"
	}
	return msg
}

// SocketDirError: a level of the socket directory cannot be made or
// looked at (a parent without write access, a full disk).
type SocketDirError struct {
	Path string
	Err  error
}

// Explanation classifies it (fault.Explainer): kind socket_dir_failed,
// with the level that failed and why.
func (e *SocketDirError) Explanation() fault.Explanation {
	cause := ""
	if e.Err != nil {
		cause = e.Err.Error()
	}
	return fault.Of(fault.KindSocketDirFailed, fault.Field{Name: "path", Value: e.Path}, fault.Field{Name: "cause", Value: cause})
}

func (e *SocketDirError) Error() string {
	return fmt.Sprintf("socket directory %s: %v (a host needs it: make its parent writable, or set XDG_RUNTIME_DIR to a directory of your own with mode 0700)",
		e.Path, e.Err)
}

func (e *SocketDirError) Unwrap() error { return e.Err }

// SocketPathTooLongError refuses a socket path that does not fit in a unix
// socket address.
type SocketPathTooLongError struct {
	Path string
	Len  int
	Max  int
}

// Explanation classifies it (fault.Explainer): kind
// socket_path_too_long.
func (e *SocketPathTooLongError) Explanation() fault.Explanation {
	return fault.Of(fault.KindSocketPathTooLong)
}

func (e *SocketPathTooLongError) Error() string {
	return fmt.Sprintf("socket path %s is %d bytes, more than the %d a unix socket address holds; "+
		"set XDG_RUNTIME_DIR to a shorter directory", e.Path, e.Len, e.Max)
}

// InvalidSessionIDError refuses a session id that cannot name a socket
// file.
type InvalidSessionIDError struct {
	ID string
}

func (e *InvalidSessionIDError) Error() string {
	return fmt.Sprintf("session id %q cannot name a socket file", e.ID)
}

// fallbackBase is where the socket directory goes when XDG_RUNTIME_DIR is
// unusable; tests point it elsewhere.
var fallbackBase = "/tmp"

// StoreHash is the short hex hash of storeKey that names its socket
// directory.
func StoreHash(storeKey string) string {
	sum := sha256.Sum256([]byte(storeKey))
	return hex.EncodeToString(sum[:8])
}

// SocketDir returns the directory the sockets of the store named storeKey
// (its canonical directory or URL) live in, creating what is missing (mode
// 0700) and checking every level looprig owns: see the package doc.
func SocketDir(storeKey string) (string, error) {
	uid := os.Getuid()
	hash := StoreHash(storeKey)
	if x := os.Getenv("XDG_RUNTIME_DIR"); runtimeDirUsable(x, uid) {
		top := filepath.Join(x, "looprig")
		return ensureDirs(uid, top, filepath.Join(top, hash))
	}
	top := filepath.Join(fallbackBase, "looprig-"+strconv.Itoa(uid))
	return ensureDirs(uid, top, filepath.Join(top, hash))
}

// sampleSessionID is as long as every session id (a UUID's text).
const sampleSessionID = "00000000-0000-0000-0000-000000000000"

// CheckSocketDir checks, before anything is created or restored for a host
// to serve, that a host could serve a session of the store named storeKey:
// its socket directory is usable (SocketDir) and a session's socket path
// fits in a unix socket address. It returns the directory; the error
// (*UnsafeSocketDirError, *SocketDirError, *SocketPathTooLongError) names
// it and how to fix it.
func CheckSocketDir(storeKey string) (string, error) {
	dir, err := SocketDir(storeKey)
	if err != nil {
		return "", err
	}
	if _, err := SocketPath(dir, sampleSessionID); err != nil {
		return "", err
	}
	return dir, nil
}

// runtimeDirUsable reports whether dir is an XDG runtime directory of uid:
// absolute, a directory, owned by uid, no group or other access, writable.
func runtimeDirUsable(dir string, uid int) bool {
	if dir == "" || !filepath.IsAbs(dir) {
		return false
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != uid || fi.Mode().Perm()&0o077 != 0 {
		return false
	}
	return syscall.Access(dir, 0o3 /* W_OK|X_OK */) == nil
}

func ensureDirs(uid int, dirs ...string) (string, error) {
	for _, d := range dirs {
		if err := ensureDir(d, uid); err != nil {
			return "", err
		}
	}
	return dirs[len(dirs)-1], nil
}

// ensureDir creates path 0700 if it is missing, then checks it.
func ensureDir(path string, uid int) error {
	err := os.Mkdir(path, 0o700)
	switch {
	case err == nil:
		// Ours: the umask may have taken bits away, never added any.
		if err := os.Chmod(path, 0o700); err != nil {
			return &SocketDirError{Path: path, Err: err}
		}
	case !errors.Is(err, fs.ErrExist):
		return &SocketDirError{Path: path, Err: err}
	}
	return checkDir(path, uid)
}

// checkDir refuses path unless it is a directory (not a symlink to one)
// owned by uid with mode exactly 0700.
func checkDir(path string, uid int) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return &SocketDirError{Path: path, Err: err}
	}
	q := shellQuote(path)
	if fi.Mode()&fs.ModeSymlink != 0 {
		return &UnsafeSocketDirError{Path: path, Reason: "it is a symlink",
			Fix: "remove it, looprig makes the directory itself: rm " + q}
	}
	if !fi.IsDir() {
		return &UnsafeSocketDirError{Path: path, Reason: "it is not a directory",
			Fix: "remove it, looprig makes the directory itself: rm " + q}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return &UnsafeSocketDirError{Path: path, Reason: "its owner cannot be read"}
	}
	if int(st.Uid) != uid {
		return &UnsafeSocketDirError{Path: path,
			Reason: fmt.Sprintf("it is owned by uid %d, not by uid %d", st.Uid, uid),
			Fix:    "another user made it, perhaps to intercept your sessions; have it removed (rm -r " + q + ") or set XDG_RUNTIME_DIR"}
	}
	if m := fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky); m != 0o700 {
		return &UnsafeSocketDirError{Path: path,
			Reason: fmt.Sprintf("its mode is %s, not drwx------", fi.Mode()),
			Fix:    "run: chmod 700 " + q}
	}
	return nil
}

// SocketPath returns the socket path of session sessionID in dir.
func SocketPath(dir, sessionID string) (string, error) {
	if sessionID == "" || sessionID == "." || sessionID == ".." || strings.ContainsAny(sessionID, "/\x00") {
		return "", &InvalidSessionIDError{ID: sessionID}
	}
	p := filepath.Join(dir, sessionID+".sock")
	if len(p) > MaxSocketPath {
		return "", &SocketPathTooLongError{Path: p, Len: len(p), Max: MaxSocketPath}
	}
	return p, nil
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
