package host

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// privateDir returns a fresh directory of mode 0700, as an XDG runtime
// directory is.
func privateDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func asUnsafe(t *testing.T, err error, what string) *UnsafeSocketDirError {
	t.Helper()
	var u *UnsafeSocketDirError
	if !errors.As(err, &u) {
		t.Fatalf("%s: got %v (%T), want *UnsafeSocketDirError", what, err, err)
	}
	if u.Reason == "" || u.Fix == "" {
		t.Errorf("%s: UnsafeSocketDirError without a reason or a fix: %+v", what, u)
	}
	return u
}

func TestSocketDirUnderXDG(t *testing.T) {
	xdg := privateDir(t)
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	// A umask that takes owner bits away must not change the outcome:
	// what SocketDir creates is 0700 whatever the umask made of it.
	old := syscall.Umask(0o277)
	defer syscall.Umask(old)

	a, err := SocketDir("/srv/store-a")
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(xdg, "looprig", StoreHash("/srv/store-a"))
	if a != want {
		t.Fatalf("SocketDir = %s, want %s", a, want)
	}
	for _, d := range []string{filepath.Join(xdg, "looprig"), a} {
		if m := mode(t, d); m != fs.ModeDir|0o700 {
			t.Errorf("%s: mode %s, want drwx------", d, m)
		}
	}
	b, err := SocketDir("/srv/store-b")
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatalf("two stores share socket directory %s", a)
	}
	again, err := SocketDir("/srv/store-a")
	if err != nil || again != a {
		t.Fatalf("SocketDir again = %s, %v; want %s", again, err, a)
	}
}

func TestSocketDirFallsBackToTmp(t *testing.T) {
	base := t.TempDir()
	old := fallbackBase
	fallbackBase = base
	defer func() { fallbackBase = old }()

	open := t.TempDir()
	if err := os.Chmod(open, 0o755); err != nil { // not a usable runtime dir
		t.Fatal(err)
	}
	for _, xdg := range []string{"", "relative/dir", open, filepath.Join(base, "missing")} {
		t.Setenv("XDG_RUNTIME_DIR", xdg)
		d, err := SocketDir("key")
		if err != nil {
			t.Fatalf("XDG_RUNTIME_DIR=%q: %v", xdg, err)
		}
		top := filepath.Join(base, "looprig-"+strconv.Itoa(os.Getuid()))
		if d != filepath.Join(top, StoreHash("key")) {
			t.Errorf("XDG_RUNTIME_DIR=%q: SocketDir = %s, want it under %s", xdg, d, top)
		}
		if m := mode(t, top); m != fs.ModeDir|0o700 {
			t.Errorf("%s: mode %s", top, m)
		}
	}
}

func TestSocketDirRefusesLooseModes(t *testing.T) {
	xdg := privateDir(t)
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	d, err := SocketDir("k")
	if err != nil {
		t.Fatal(err)
	}
	top := filepath.Dir(d)
	for _, c := range []struct {
		path string
		mode fs.FileMode
	}{{top, 0o750}, {top, 0o701}, {d, 0o770}, {d, 0o707}, {d, 0o500}} {
		if err := os.Chmod(c.path, c.mode); err != nil {
			t.Fatal(err)
		}
		_, err := SocketDir("k")
		u := asUnsafe(t, err, c.path+" "+c.mode.String())
		if u.Path != c.path || !strings.Contains(u.Fix, "chmod 700") {
			t.Errorf("refusal %+v, want path %s and a chmod fix", u, c.path)
		}
		os.Chmod(c.path, 0o700)
	}
	// setgid and sticky are refused too: "exactly 0700".
	if err := os.Chmod(d, 0o700|fs.ModeSetgid); err == nil && mode(t, d)&fs.ModeSetgid != 0 {
		asUnsafe(t, checkDir(d, os.Getuid()), "setgid")
	}
}

func TestSocketDirRefusesSymlinkAndFile(t *testing.T) {
	xdg := privateDir(t)
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	elsewhere := privateDir(t) // a perfectly good directory, reached by a link
	if err := os.Symlink(elsewhere, filepath.Join(xdg, "looprig")); err != nil {
		t.Fatal(err)
	}
	u := asUnsafe(t, func() error { _, err := SocketDir("k"); return err }(), "symlink")
	if !strings.Contains(u.Reason, "symlink") {
		t.Errorf("reason %q", u.Reason)
	}
	os.Remove(filepath.Join(xdg, "looprig"))
	if err := os.WriteFile(filepath.Join(xdg, "looprig"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := SocketDir("k")
	asUnsafe(t, err, "file")
}

func TestSocketDirRefusesOtherOwner(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to chown a directory to another uid")
	}
	xdg := privateDir(t)
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	d, err := SocketDir("k")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	u := asUnsafe(t, func() error { _, err := SocketDir("k"); return err }(), "owned by 65534")
	if !strings.Contains(u.Reason, "65534") {
		t.Errorf("reason %q does not name the owner", u.Reason)
	}
	// An XDG_RUNTIME_DIR of another uid is not used at all.
	if err := os.Chown(xdg, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if runtimeDirUsable(xdg, os.Getuid()) {
		t.Errorf("runtime dir owned by 65534 counted as usable")
	}
}

func TestSocketPath(t *testing.T) {
	p, err := SocketPath("/run/user/1000/looprig/0123456789abcdef", "0b6e3c9a-3a4e-4f7e-9a0b-4f6f9c1d2e3f")
	if err != nil || p != "/run/user/1000/looprig/0123456789abcdef/0b6e3c9a-3a4e-4f7e-9a0b-4f6f9c1d2e3f.sock" {
		t.Fatalf("SocketPath = %q, %v", p, err)
	}
	long := "/" + strings.Repeat("d", MaxSocketPath-len("/x.sock")-1)
	if _, err := SocketPath(long, "x"); err != nil {
		t.Fatalf("a path of %d bytes refused: %v", len(long)+len("/x.sock"), err)
	}
	_, err = SocketPath(long+"d", "x")
	var tl *SocketPathTooLongError
	if !errors.As(err, &tl) || tl.Len != MaxSocketPath+1 || tl.Max != MaxSocketPath {
		t.Fatalf("too long: %v (%T)", err, err)
	}
	for _, id := range []string{"", ".", "..", "a/b", "a\x00b"} {
		var bad *InvalidSessionIDError
		if _, err := SocketPath("/tmp", id); !errors.As(err, &bad) {
			t.Errorf("SocketPath(%q): %v, want *InvalidSessionIDError", id, err)
		}
	}
}

func TestListen(t *testing.T) {
	dir := privateDir(t)
	path := filepath.Join(dir, "s.sock")
	old := syscall.Umask(0) // the socket is 0600 whatever the umask
	ln, err := Listen(path, false)
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	if m := mode(t, path); m != fs.ModeSocket|0o600 {
		t.Errorf("socket mode %s, want srw-------", m)
	}
	// A live (or leftover) socket is not replaced unless the caller says
	// it is stale.
	var exists *SocketExistsError
	if _, err := Listen(path, false); !errors.As(err, &exists) || exists.NotSocket {
		t.Fatalf("second Listen: %v", err)
	}
	ln.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("closing the listener removed the socket: %v", err)
	}
	ln2, err := Listen(path, true)
	if err != nil {
		t.Fatalf("stale Listen: %v", err)
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dial the new socket: %v", err)
	}
	c.Close()
	ln2.Close()

	// Something that is not a socket is never removed.
	file := filepath.Join(dir, "f.sock")
	os.WriteFile(file, []byte("keep"), 0o600)
	if _, err := Listen(file, true); !errors.As(err, &exists) || !exists.NotSocket {
		t.Fatalf("Listen over a file: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Fatalf("the file was touched")
	}
	// An unsafe directory is refused.
	loose := t.TempDir()
	os.Chmod(loose, 0o755)
	if _, err := Listen(filepath.Join(loose, "s.sock"), false); err == nil {
		t.Fatalf("Listen in a 0755 directory succeeded")
	} else {
		asUnsafe(t, err, "Listen in 0755")
	}
	var tl *SocketPathTooLongError
	if _, err := Listen(filepath.Join(dir, strings.Repeat("x", MaxSocketPath))+".sock", false); !errors.As(err, &tl) {
		t.Fatalf("Listen on a long path: %v", err)
	}
}

// CheckSocketDir reports, before anything is made for a host, every
// reason no host could serve: an unsafe directory, one that cannot be
// made (the error names it and what to do), a socket path that does not
// fit.
func TestCheckSocketDir(t *testing.T) {
	xdg, err := os.MkdirTemp("", "lr") // short: t.TempDir's are too long for a socket path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(xdg) })
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	if err := os.Chmod(xdg, 0o700); err != nil {
		t.Fatal(err)
	}
	dir, err := CheckSocketDir("k")
	if err != nil || dir != filepath.Join(xdg, "looprig", StoreHash("k")) {
		t.Fatalf("CheckSocketDir = %q, %v", dir, err)
	}

	if err := os.Chmod(filepath.Join(xdg, "looprig"), 0o770); err != nil {
		t.Fatal(err)
	}
	_, err = CheckSocketDir("k")
	asUnsafe(t, err, "a group-writable directory")

	if os.Getuid() != 0 { // root writes anywhere
		old := fallbackBase
		fallbackBase = filepath.Join(privateDir(t), "ro")
		defer func() { fallbackBase = old }()
		if err := os.Mkdir(fallbackBase, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Setenv("XDG_RUNTIME_DIR", "")
		_, err = CheckSocketDir("k")
		var sd *SocketDirError
		if !errors.As(err, &sd) || !strings.Contains(err.Error(), fallbackBase) || !strings.Contains(err.Error(), "XDG_RUNTIME_DIR") {
			t.Fatalf("CheckSocketDir under a read-only directory: %v (%T), want *SocketDirError naming it and the fix", err, err)
		}
	}

	long := filepath.Join(privateDir(t), strings.Repeat("d", 60))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", long)
	_, err = CheckSocketDir("k")
	var tooLong *SocketPathTooLongError
	if !errors.As(err, &tooLong) {
		t.Fatalf("CheckSocketDir with a long runtime directory: %v (%T), want *SocketPathTooLongError", err, err)
	}
}
