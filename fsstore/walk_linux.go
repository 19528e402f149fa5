package fsstore

import (
	"bytes"
	"io/fs"
	"unsafe"

	"golang.org/x/sys/unix"
)

// readDir reads the entries of the open directory fd (path, relative path
// rel) with getdents64 into w.buf: files that keep accepts are collected,
// subdirectory names returned.
func (w *walker) readDir(fd int, path, rel string) (subdirs []string, err error) {
	buf := w.buf
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "getdents", Path: path, Err: err}
		}
		if n <= 0 {
			return subdirs, nil
		}
		for off := 0; off < n; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8,
			// name (NUL-terminated).
			reclen := int(*(*uint16)(unsafe.Pointer(&buf[off+16])))
			typ := buf[off+18]
			nameb := buf[off+19 : off+reclen]
			if i := bytes.IndexByte(nameb, 0); i >= 0 {
				nameb = nameb[:i]
			}
			off += reclen
			if sub, ok := w.entry(fd, rel, nameb, typ); ok {
				subdirs = append(subdirs, sub)
			}
		}
	}
}
