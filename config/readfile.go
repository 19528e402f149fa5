package config

import (
	"errors"
	"fmt"
	"io/fs"

	"looprig/internal/smallfile"
)

// MaxFileSize bounds a configuration file. Real ones are a few hundred
// bytes; a bigger one (or /dev/zero behind --config) is refused before it
// is read in full.
const MaxFileSize = 1 << 20

// readFile reads the configuration file at path: a regular file (a FIFO or
// a device is refused without blocking on it) of at most MaxFileSize
// bytes. Its errors are *fs.PathError.
func readFile(path string) ([]byte, error) {
	b, err := smallfile.Read(path, MaxFileSize)
	var big *smallfile.TooLargeError
	if errors.As(err, &big) {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w; this is not a looprig configuration file", big)}
	}
	return b, err
}
