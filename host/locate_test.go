package host

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// ServingPID names the process listening on a session's socket from the
// kernel's word, even when that process never accepts; a socket nobody
// listens on any more, or none, is ErrNotHosted.
func TestServingPID(t *testing.T) {
	dir := privateDir(t)
	const id = "0b5e7a1c-93a0-4d5e-8f00-6b1d2c3e4f50"
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, id+".sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	pid, err := ServingPID(wctx(t), dir, id)
	if err != nil || pid != os.Getpid() {
		t.Fatalf("ServingPID = %d, %v; want this process, %d", pid, err, os.Getpid())
	}
	ln.Close() // the socket file stays, as a killed host's does
	if _, err := os.Lstat(filepath.Join(dir, id+".sock")); err != nil {
		t.Fatal(err)
	}
	if pid, err := ServingPID(wctx(t), dir, id); !errors.Is(err, ErrNotHosted) {
		t.Errorf("a socket nobody listens on: ServingPID = %d, %v; want ErrNotHosted", pid, err)
	}
	if pid, err := ServingPID(wctx(t), dir, "a1b2c3d4-0000-4000-8000-000000000000"); !errors.Is(err, ErrNotHosted) {
		t.Errorf("no socket: ServingPID = %d, %v; want ErrNotHosted", pid, err)
	}
}
