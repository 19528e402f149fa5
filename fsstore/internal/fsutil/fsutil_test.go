package fsutil

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"looprig/fsstore/internal/seam"
)

// WriteFileAtomic makes the new contents durable before they replace the
// old ones, and the replacement before it returns: the temp file is
// fsynced, then renamed over the file, then the directory is fsynced (the
// seams see each sync: removing one, or the rename moving before the temp
// file's, fails this test). Epoch files and KV values are written so.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	var passed []seam.Point
	restore := seam.Set(func(p seam.Point, at string) error {
		switch {
		case p == seam.Fsync && at == dir:
		case p == seam.Fsync:
			if filepath.Dir(at) != dir || !strings.HasPrefix(filepath.Base(at), ".f.tmp-") {
				t.Errorf("fsync of %s, want the temp file beside %s", at, path)
			}
		case at != path:
			t.Errorf("seam %s at %s, want %s", p, at, path)
		}
		passed = append(passed, p)
		return nil
	})
	defer restore()
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)

	seams := Seams{TempWritten: seam.KVTempWritten, Renamed: seam.KVRenamed}
	for _, data := range []string{"one", "two, longer"} {
		if err := WriteFileAtomic(path, []byte(data), 0o640, -1, seams); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != data {
			t.Fatalf("read %q, %v; want %q", got, err, data)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640 whatever the umask", fi.Mode().Perm())
	}
	once := []seam.Point{seam.Fsync, seams.TempWritten, seams.Renamed, seam.Fsync}
	if want := append(slices.Clone(once), once...); !slices.Equal(passed, want) {
		t.Errorf("seams %v, want %v", passed, want)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("directory holds %v (%v), want only the file", entries, err)
	}
}

func TestWriteFileAtomicDirFD(t *testing.T) {
	dir := t.TempDir()
	fd, err := Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	path := filepath.Join(dir, "f")
	if err := WriteFileAtomic(path, []byte("x"), 0o600, fd, Seams{}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "x" {
		t.Fatalf("read %q, %v", got, err)
	}
}

// A failed write leaves no temp file and the old contents in place.
func TestWriteFileAtomicFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := WriteFileAtomic(path, []byte("old"), 0o600, -1, Seams{}); err != nil {
		t.Fatal(err)
	}
	// A directory in the way makes the rename fail.
	blocked := filepath.Join(dir, "d")
	if err := os.MkdirAll(filepath.Join(blocked, "child"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(blocked, []byte("new"), 0o600, -1, Seams{}); err == nil {
		t.Fatal("rename over a non-empty directory succeeded")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"d", "f"}) {
		t.Errorf("directory holds %v, want [d f] (no temp file left)", names)
	}
	if err := WriteFileAtomic(filepath.Join(dir, "missing", "f"), nil, 0o600, -1, Seams{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("write into a missing directory: %v, want ErrNotExist", err)
	}
}

func TestSyncDir(t *testing.T) {
	dir := t.TempDir()
	if err := SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	var pe *fs.PathError
	if err := SyncDir(filepath.Join(dir, "missing")); !errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("SyncDir of a missing directory: %v, want a PathError matching ErrNotExist", err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(file); !errors.Is(err, unix.ENOTDIR) {
		t.Errorf("SyncDir of a file: %v, want ENOTDIR", err)
	}
}
