// Package fsutil holds the file system helpers that fsstore and its
// internal packages share: system calls retried on EINTR, the syncs that
// make data durable (Fsync, DataSync: fsync and fdatasync on Linux,
// fcntl F_FULLFSYNC on Darwin; see sync.go), the fsync of a directory, and
// the atomic replacement of a small file.
package fsutil

import (
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"looprig/fsstore/internal/seam"
)

// Open is open(2) retried on EINTR. It returns the raw errno.
func Open(path string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Open(path, flags, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// SyncDir syncs the directory dir (Fsync), which makes the entries
// created, renamed or removed in it durable. Errors are *fs.PathError.
func SyncDir(dir string) error {
	fd, err := Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	return Fsync(fd, dir)
}

// Seams names the test seams (see package seam) that WriteFileAtomic
// passes: TempWritten once the temp file is written and synced, Renamed
// once it has replaced the file and before the directory is synced.
type Seams struct {
	TempWritten, Renamed seam.Point
}

// WriteFileAtomic replaces the file at path with data: it writes a temp
// file in the same directory (named ".<base>.tmp-*", mode perm exactly,
// whatever the umask), syncs it (Fsync), renames it over path and syncs the
// directory. A reader sees the old contents or the new, never a mix, and
// once it returns nil the new contents survive a crash. On failure before
// the rename the temp file is removed and path is untouched.
//
// dirFD, if >= 0, is an open descriptor of path's directory used for the
// final fsync; with -1 the directory is opened for it.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode, dirFD int, seams Seams) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	defer func() {
		if tmp != nil {
			tmp.Close()
			os.Remove(tmpName)
		}
	}()
	if err := tmp.Chmod(perm); err != nil { // undo any umask
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := SyncFile(tmp); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	tmp = nil
	seam.At(seams.TempWritten, path) // test seam: crash before the rename
	if err := os.Rename(tmpName, path); err != nil {
		os.Remove(tmpName)
		return err
	}
	seam.At(seams.Renamed, path) // test seam: crash before the directory fsync
	if dirFD >= 0 {
		return Fsync(dirFD, dir)
	}
	return SyncDir(dir)
}
