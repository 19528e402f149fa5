// Package smallfile reads small files a user names or keeps beside
// looprig's own (the configuration file, theme files, the theme choice)
// without trusting what is there: only a regular file is read, never more
// than a bound, and a FIFO or a device is refused without opening it for a
// blocking read, so a command never hangs or exhausts memory on one.
package smallfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// NotRegularError refuses a path that is not a regular file.
type NotRegularError struct {
	Mode fs.FileMode // the file's type bits
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("not a regular file (%s)", e.Mode.Type())
}

// TooLargeError refuses a file larger than the bound.
type TooLargeError struct {
	Max int64
}

func (e *TooLargeError) Error() string { return "larger than " + size(e.Max) }

func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Read returns the contents of the regular file at path (symbolic links
// followed), of at most max bytes. Its errors are *fs.PathError: the
// open's or the read's, or one wrapping *NotRegularError or
// *TooLargeError. A FIFO or a device is refused before it is opened, and
// opened without blocking should it replace the file in between; nothing
// past max+1 bytes is read.
func Read(path string, max int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: &NotRegularError{Mode: fi.Mode()}}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: &NotRegularError{Mode: fi.Mode()}}
	}
	if fi.Size() > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: &TooLargeError{Max: max}}
	}
	b, err := readUpTo(f, min(fi.Size(), max), max+1)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if int64(len(b)) > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: &TooLargeError{Max: max}}
	}
	return b, nil
}

// readUpTo reads r to its end or limit bytes, whichever comes first,
// starting with room for hint bytes (the file's size, which may change).
func readUpTo(r io.Reader, hint, limit int64) ([]byte, error) {
	b := make([]byte, 0, min(hint+1, limit))
	for int64(len(b)) < limit {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow
			b = b[:len(b):min(int64(cap(b)), limit)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return b, nil
}
