package fsstore

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// readDir reads the entries of the open directory fd (path, relative path
// rel): files that keep accepts are collected, subdirectory names returned.
//
// Darwin has no public getdents: golang.org/x/sys emulates it by reopening
// the directory and skipping the entries already returned, which can skip
// or repeat entries when the directory changes between calls. The os
// package reads a duplicate of fd through one readdir stream instead, and
// resolves an unknown d_type with lstat itself.
func (w *walker) readDir(fd int, path, rel string) (subdirs []string, err error) {
	var dup int
	for {
		dup, err = unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "dup", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(dup), path)
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		typ := uint8(unix.DT_REG) // not a directory: a file, a link, a socket...
		if e.IsDir() {
			typ = unix.DT_DIR
		}
		if sub, ok := w.entry(fd, rel, []byte(e.Name()), typ); ok {
			subdirs = append(subdirs, sub)
		}
	}
	return subdirs, nil
}
