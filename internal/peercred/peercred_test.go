package peercred

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// UID reads the uid of the other end of a connection from the kernel
// (SO_PEERCRED on Linux, LOCAL_PEERCRED on Darwin), from either side.
func TestUIDOwnConnection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	for side, c := range map[string]*net.UnixConn{"server": server, "client": client} {
		uid, err := UID(c)
		if err != nil {
			t.Fatalf("%s: UID: %v", side, err)
		}
		if uid != os.Geteuid() {
			t.Fatalf("%s: UID = %d, want %d", side, uid, os.Geteuid())
		}
	}
}
