package logfile

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"looprig/fsstore/internal/fsutil"
	"looprig/rig/storage"
)

// refresh brings the cached state in line with the file the path names
// now. The caller holds the token. The usual case costs one lstat.
func (l *Log) refresh(ctx context.Context) error {
	for {
		var st unix.Stat_t
		err := unix.Lstat(l.path, &st)
		if errors.Is(err, unix.ENOENT) {
			l.drop()
			return nil
		}
		if err != nil {
			return &os.PathError{Op: "lstat", Path: l.path, Err: err}
		}
		if l.f == nil || uint64(st.Dev) != l.dev || uint64(st.Ino) != l.ino {
			l.drop()
			if err := l.openExisting(); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				return err
			}
			continue // look again, now with our own inode
		}
		if st.Size == l.end {
			return nil
		}
		// Another writer moved the end: catch up under the lock, so we
		// never mistake a write in progress for a torn tail.
		if err := l.lockCtx(ctx); err != nil {
			return err
		}
		same, err := l.sameFile()
		if err == nil && same {
			err = l.catchUp()
		}
		l.unlockFile()
		if err != nil || same {
			return err
		}
		l.drop()
	}
}

// openExisting opens the file at path for reading and writing, without
// creating it or following a symlink, and resets the cached state. A file
// that cannot be opened for writing (a read-only store: a read-only file
// system, a file or directory without write permission) is opened for
// reading only, and l.readOnly says so: reading it needs no more, and a
// write reopens it (openWritable) and fails with
// *storage.NotWritableError.
func (l *Log) openExisting() error {
	f, err := os.OpenFile(l.path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	readOnly := false
	if err != nil && cannotWrite(err) {
		f, err = os.OpenFile(l.path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		readOnly = true
	}
	if err != nil {
		return err
	}
	if err := l.adopt(f); err != nil {
		f.Close()
		return err
	}
	l.readOnly = readOnly
	l.dirSynced = false
	return nil
}

// openWritable replaces a file opened for reading only with the same file
// opened for writing too: a write needs it. It fails with
// *storage.NotWritableError when that is still refused.
func (l *Log) openWritable() error {
	l.drop()
	f, err := os.OpenFile(l.path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if cannotWrite(err) {
			return &storage.NotWritableError{Name: l.name, Path: l.path, Err: err}
		}
		return err
	}
	if err := l.adopt(f); err != nil {
		f.Close()
		return err
	}
	l.dirSynced = false
	return nil
}

// cannotWrite reports whether err refuses a write: a read-only file
// system, or no permission.
func cannotWrite(err error) bool {
	return errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission)
}

// create makes the file (exclusively), syncs the directory, and adopts it.
func (l *Log) create() error {
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if err := l.adopt(f); err != nil {
		f.Close()
		return err
	}
	if err := fsutil.SyncDir(l.dir); err != nil {
		l.drop()
		return err
	}
	l.dirSynced = true
	return nil
}

func (l *Log) adopt(f *os.File) error {
	fd := int(f.Fd())
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: l.path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return &os.PathError{Op: "open", Path: l.path, Err: errors.New("not a regular file")}
	}
	l.f, l.fd = f, fd
	l.dev, l.ino = uint64(st.Dev), uint64(st.Ino)
	l.reset()
	return nil
}

// reset forgets the cached contents (not the file).
func (l *Log) reset() {
	l.end, l.tip = 0, 0
	l.index = l.index[:0]
}

// drop closes the file and forgets the cached state.
func (l *Log) drop() {
	if l.f != nil {
		l.f.Close()
	}
	l.f, l.fd = nil, -1
	l.dev, l.ino = 0, 0
	l.dirSynced = false
	l.readOnly = false
	l.reset()
}

// sameFile reports whether the path still names the open file.
func (l *Log) sameFile() (bool, error) {
	var st unix.Stat_t
	err := unix.Lstat(l.path, &st)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, &os.PathError{Op: "lstat", Path: l.path, Err: err}
	}
	return uint64(st.Dev) == l.dev && uint64(st.Ino) == l.ino, nil
}
