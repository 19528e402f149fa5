package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxFileSize bounds a configuration file. Real ones are a few hundred
// bytes; a bigger one (or /dev/zero behind --config) is refused before it
// is read in full.
const MaxFileSize = 1 << 20

// readFile reads the configuration file at path: a regular file (a FIFO or
// a device is refused without blocking on it) of at most MaxFileSize
// bytes. Its errors are *fs.PathError.
func readFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("not a regular file (%s)", fi.Mode().Type())}
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, &fs.PathError{Op: "read", Path: path, Err: errors.New("larger than 1 MiB; this is not a looprig configuration file")}
	}
	return b, nil
}
