package fsutil

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// The decision behind Darwin's F_FULLFSYNC fallback, driven with fake
// system calls so that it runs on any platform.
func TestFullSyncFallback(t *testing.T) {
	for _, tt := range []struct {
		name      string
		noFull    bool    // the platform has no full sync (Linux)
		full      []error // successive results of the full sync
		plain     []error // successive results of the plain sync
		wantCalls []string
		wantOp    string // "" for success
		wantErr   error
	}{
		{name: "full works", full: []error{nil}, wantCalls: []string{"full"}},
		{name: "full interrupted", full: []error{unix.EINTR, nil}, wantCalls: []string{"full", "full"}},
		{name: "ENOTSUP falls back", full: []error{unix.ENOTSUP}, plain: []error{nil}, wantCalls: []string{"full", "plain"}},
		{name: "EOPNOTSUPP falls back", full: []error{unix.EOPNOTSUPP}, plain: []error{nil}, wantCalls: []string{"full", "plain"}},
		{name: "EINVAL falls back", full: []error{unix.EINVAL}, plain: []error{unix.EINTR, nil}, wantCalls: []string{"full", "plain", "plain"}},
		{name: "fallback fails", full: []error{unix.ENOTSUP}, plain: []error{unix.EIO}, wantCalls: []string{"full", "plain"}, wantOp: "plainsync", wantErr: unix.EIO},
		{name: "EIO is no reason to fall back", full: []error{unix.EIO}, wantCalls: []string{"full"}, wantOp: "fullsync", wantErr: unix.EIO},
		{name: "ENOSPC is no reason to fall back", full: []error{unix.ENOSPC}, wantCalls: []string{"full"}, wantOp: "fullsync", wantErr: unix.ENOSPC},
		{name: "no full sync", noFull: true, plain: []error{nil}, wantCalls: []string{"plain"}},
		{name: "no full sync, plain fails", noFull: true, plain: []error{unix.EIO}, wantCalls: []string{"plain"}, wantOp: "plainsync", wantErr: unix.EIO},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var calls []string
			next := func(what string, results *[]error) func(int) error {
				return func(fd int) error {
					if fd != 7 {
						t.Errorf("%s on fd %d, want 7", what, fd)
					}
					calls = append(calls, what)
					if len(*results) == 0 {
						t.Fatalf("unexpected %s call", what)
					}
					err := (*results)[0]
					*results = (*results)[1:]
					return err
				}
			}
			full := syncCall{name: "fullsync", call: next("full", &tt.full)}
			if tt.noFull {
				full = syncCall{}
			}
			err := fullSync(7, "/some/file", full, "plainsync", next("plain", &tt.plain))
			if !slices.Equal(calls, tt.wantCalls) {
				t.Errorf("calls %v, want %v", calls, tt.wantCalls)
			}
			if tt.wantOp == "" {
				if err != nil {
					t.Fatalf("err %v, want nil", err)
				}
				return
			}
			var pe *fs.PathError
			if !errors.As(err, &pe) || pe.Op != tt.wantOp || pe.Path != "/some/file" || !errors.Is(err, tt.wantErr) {
				t.Fatalf("err %#v, want a PathError %s /some/file: %v", err, tt.wantOp, tt.wantErr)
			}
		})
	}
}

func TestFallBackToFsync(t *testing.T) {
	for _, err := range []error{unix.ENOTSUP, unix.EOPNOTSUPP, unix.EINVAL} {
		if !FallBackToFsync(err) {
			t.Errorf("%v: no fallback", err)
		}
	}
	for _, err := range []error{nil, unix.EIO, unix.ENOSPC, unix.EBADF, unix.EINTR, unix.EDQUOT, unix.EROFS} {
		if FallBackToFsync(err) {
			t.Errorf("%v: fallback", err)
		}
	}
}

// The real calls of this platform, on a real file.
func TestSyncCalls(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("data"); err != nil {
		t.Fatal(err)
	}
	fd := int(f.Fd())
	if err := Fsync(fd, path); err != nil {
		t.Fatal(err)
	}
	if err := DataSync(fd, path); err != nil {
		t.Fatal(err)
	}
	if err := SyncFile(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// A closed descriptor: EBADF, reported, never a silent fallback.
	for _, sync := range []func(int, string) error{Fsync, DataSync} {
		var pe *fs.PathError
		if err := sync(fd, path); !errors.As(err, &pe) || pe.Path != path || !errors.Is(err, unix.EBADF) {
			t.Fatalf("sync of a closed descriptor: %v, want EBADF naming %s", err, path)
		}
	}
	if err := SyncFile(f); err == nil {
		t.Fatal("SyncFile of a closed file succeeded")
	}
}
