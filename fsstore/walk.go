package fsstore

import (
	"errors"
	"io/fs"
	"path/filepath"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// walkFiles returns the paths (relative to dir, slash-separated) of the
// entries under dir that are not directories and whose base name keep
// accepts, in no particular order, without following symbolic links nor
// entering a directory whose name begins with a dot (the store's own, as
// the leases' bells: no name's segment begins with one); a
// directory that vanishes during the walk is skipped and a missing dir is
// empty. It is filepath.WalkDir reduced to what Keys needs, on the system
// calls directly (openat, getdents64 on Linux, close per directory; no
// sorting, no per-entry allocation), and it walks the subdirectories of a
// wide directory on several goroutines: the catalog has one directory per
// session.
func walkFiles(dir string, keep func(base string) bool) ([]string, error) {
	fd, err := openDirAt(unix.AT_FDCWD, dir)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	w := &walker{keep: keep, buf: make([]byte, 32<<10)}
	defer unix.Close(fd)
	subdirs, err := w.readDir(fd, dir, "")
	if err != nil {
		return nil, err
	}
	const wide = 64
	if len(subdirs) < wide {
		for _, name := range subdirs {
			if err := w.walkSub(fd, dir, "", name); err != nil {
				return nil, err
			}
		}
		return w.out, nil
	}
	workers := make([]*walker, 4)
	errs := make([]error, len(workers))
	var next atomic.Int64
	var wg sync.WaitGroup
	for i := range workers {
		workers[i] = &walker{keep: keep, buf: make([]byte, 32<<10)}
		wg.Go(func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= len(subdirs) || errs[i] != nil {
					return
				}
				errs[i] = workers[i].walkSub(fd, dir, "", subdirs[k])
			}
		})
	}
	wg.Wait()
	for i, sw := range workers {
		if errs[i] != nil {
			return nil, errs[i]
		}
		w.out = append(w.out, sw.out...)
	}
	return w.out, nil
}

// walker walks directories sequentially, collecting file paths.
type walker struct {
	keep func(base string) bool
	buf  []byte
	out  []string
}

func openDirAt(parent int, name string) (int, error) {
	for {
		fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// walkSub walks the subdirectory name of the open directory parent (whose
// path is path and relative path rel).
func (w *walker) walkSub(parent int, path, rel, name string) error {
	sub := filepath.Join(path, name)
	fd, err := openDirAt(parent, name)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return nil // vanished or replaced during the walk
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: sub, Err: err}
	}
	defer unix.Close(fd)
	srel := name
	if rel != "" {
		srel = rel + "/" + name
	}
	subdirs, err := w.readDir(fd, sub, srel)
	if err != nil {
		return err
	}
	for _, n := range subdirs {
		if err := w.walkSub(fd, sub, srel, n); err != nil {
			return err
		}
	}
	return nil
}

// entry files the entry name (whose d_type is typ) of the open directory
// fd, walked as relative path rel: a directory is returned (to be walked),
// a file that keep accepts is collected.
func (w *walker) entry(fd int, rel string, nameb []byte, typ uint8) (subdir string, isDir bool) {
	if len(nameb) == 0 || string(nameb) == "." || string(nameb) == ".." {
		return "", false
	}
	if typ == unix.DT_UNKNOWN {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, string(nameb), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return "", false // vanished
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			typ = unix.DT_DIR
		}
	}
	if typ == unix.DT_DIR {
		if nameb[0] == '.' {
			return "", false // the store's own, not a name's
		}
		return string(nameb), true
	}
	if !w.keep(string(nameb)) {
		return "", false
	}
	if rel == "" {
		w.out = append(w.out, string(nameb))
	} else {
		w.out = append(w.out, rel+"/"+string(nameb))
	}
	return "", false
}
