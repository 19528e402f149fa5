package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"golang.org/x/sys/unix"

	"looprig/rig/storage"
)

// Options tune Take (and Differences, which walks a directory the same way).
type Options struct {
	// Exclude holds gitignore-style patterns applied after the built-in
	// and the workspace's own rules (see Filter), so they win over them.
	Exclude []string
	// Include holds gitignore-style patterns that take back what any
	// other rule left out.
	Include []string
	// Index is the previous Take's Result.Index, or nil: files whose stat
	// data it holds unchanged are not read, directories whose entries are
	// all unchanged are not encoded again.
	Index *Index
	// IndexTrusted says the caller knows Index.Manifest is a checkpoint
	// its journal records, so that every blob the index names is
	// referenced and no sweep deletes it. Otherwise every pack the index
	// would have Take reuse is first confirmed present, and renewed
	// (storage.BlobStore.TouchBlob) so that a sweep spares it until the
	// new checkpoint is journaled; a pack that is gone is not reused.
	IndexTrusted bool
	// MaxBytes, when > 0, bounds the total size of the regular files:
	// more fails Take with *TooLargeError before anything is stored.
	MaxBytes int64
	// Parallel is how many files are read at once (default 4).
	Parallel int
	// Progress, when not nil, is called now and then while files are
	// read and stored (from one goroutine at a time), and once at the end.
	Progress func(Progress)
}

// Progress is how far a Take is.
type Progress struct {
	Files, FilesDone int   // regular files in the workspace; done so far
	Bytes, BytesDone int64 // their bytes; done so far (including those the index vouched for)
}

// SkipReason says why a path was left out of a checkpoint.
type SkipReason string

// The reasons a path is skipped.
const (
	SkipOutsideSymlink SkipReason = "symlink leads outside the workspace"
	SkipSpecial        SkipReason = "not a regular file, directory or symlink"
	SkipChanged        SkipReason = "changed while being read, twice"
	SkipVanished       SkipReason = "removed while being read"
)

// Skipped is a path left out of a checkpoint; a caller journals it.
type Skipped struct {
	Path   string
	Reason SkipReason
	Detail string // the symlink's target, the file's type, ...
}

// ExcludedPath is a path a rule left out of a checkpoint (see Filter):
// its name is recorded, its content never read or stored.
type ExcludedPath struct {
	Path   string
	IsDir  bool
	Reason ExcludeReason // the rule's kind ("" when read back from a checkpoint)
}

// scan is one walk of a workspace: a tree of directories, each with its
// entries sorted by name.
type scan struct {
	root     string
	filter   *Filter
	top      *dirNode
	dirs     []*dirNode // children before parents
	files    []*fileNode
	skipped  []Skipped
	excluded []ExcludedPath
	total    int64
}

type dirNode struct {
	rel      string
	mode     fs.FileMode
	entries  []scanEntry
	excluded []ExcludedPath // left out here (moved to the scan by collect)
	skipped  []Skipped
	sig      storage.Digest
	tree     treeRef
	reused   bool // its tree is the index's
	stamped  bool // sig computed
}

type scanEntry struct {
	name     string
	kind     Kind
	excluded bool
	file     *fileNode // File
	dir      *dirNode  // Dir
	target   string    // Symlink
}

type fileNode struct {
	rel    string
	st     stamp
	digest storage.Digest
	chunks []chunkLoc
	hit    bool     // the index vouched for it
	skip   *Skipped // left out after all
}

// walk lists root without following symlinks and without reading files.
// Directories are read through descriptors (openat, fstatat: no path is
// resolved twice, no symbolic link is followed below root), a few at once.
func walk(ctx context.Context, root string, opts Options) (*scan, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("checkpoint: %s is not a directory", root)
	}
	f, err := NewFilter(root, FilterOptions{Exclude: opts.Exclude, Include: opts.Include})
	if err != nil {
		return nil, err
	}
	rootFD, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: walk: %w", &fs.PathError{Op: "open", Path: root, Err: err})
	}
	w := &walker{ctx: ctx, root: root, filter: f, sem: make(chan struct{}, walkParallel)}
	top := &dirNode{rel: "", mode: fi.Mode().Perm()}
	w.wg.Add(1)
	w.dir(rootFD, top)
	w.wg.Wait()
	if w.err != nil {
		return nil, w.err
	}
	s := &scan{root: root, filter: f, top: top}
	s.collect(top)
	return s, nil
}

// walkParallel is how many directories a walk reads at once besides the
// one it is in.
const walkParallel = 4

// walker is one walk: directories read by as many goroutines as sem
// allows, the first error kept.
type walker struct {
	ctx    context.Context
	root   string
	filter *Filter
	fmu    sync.Mutex // serializes the filter
	sem    chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
}

func (w *walker) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
}

func (w *walker) failed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err != nil
}

// dir reads the directory open as fd (which it closes) into d: its
// entries sorted by name, subdirectories walked in goroutines of their
// own while sem has room, else in this one.
func (w *walker) dir(fd int, d *dirNode) {
	defer w.wg.Done()
	f := os.NewFile(uintptr(fd), filepath.Join(w.root, filepath.FromSlash(d.rel)))
	defer f.Close()
	if err := w.ctx.Err(); err != nil {
		w.fail(fmt.Errorf("checkpoint: walk: %w", err))
		return
	}
	if w.failed() {
		return
	}
	w.fmu.Lock()
	err := w.filter.Enter(d.rel)
	w.fmu.Unlock()
	if err != nil {
		w.fail(err)
		return
	}
	names, err := f.Readdirnames(-1)
	if err != nil {
		w.fail(fmt.Errorf("checkpoint: walk: %w", err))
		return
	}
	sort.Strings(names)
	d.entries = make([]scanEntry, 0, len(names))
	var st unix.Stat_t
	for _, name := range names {
		p := name
		if d.rel != "" {
			p = d.rel + "/" + name
		}
		if err := fstatat(fd, name, &st); err != nil {
			if err == unix.ENOENT {
				continue // removed since it was listed
			}
			w.fail(fmt.Errorf("checkpoint: walk: %w", &fs.PathError{Op: "lstat", Path: filepath.Join(f.Name(), name), Err: err}))
			return
		}
		typ := st.Mode & unix.S_IFMT
		w.fmu.Lock()
		excluded, why := w.filter.Excluded(p, typ == unix.S_IFDIR)
		w.fmu.Unlock()
		if excluded {
			k := File
			if typ == unix.S_IFDIR {
				k = Dir
			}
			d.entries = append(d.entries, scanEntry{name: name, kind: k, excluded: true})
			d.excluded = append(d.excluded, ExcludedPath{Path: p, IsDir: k == Dir, Reason: why})
			continue
		}
		switch typ {
		case unix.S_IFDIR:
			sub := &dirNode{rel: p, mode: fs.FileMode(st.Mode & 0o777)}
			cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				if err == unix.ENOENT || err == unix.ELOOP || err == unix.ENOTDIR { // replaced since
					d.skipped = append(d.skipped, Skipped{Path: p, Reason: SkipChanged, Detail: "no longer a directory"})
					continue
				}
				w.fail(fmt.Errorf("checkpoint: walk: %w", &fs.PathError{Op: "open", Path: filepath.Join(f.Name(), name), Err: err}))
				return
			}
			d.entries = append(d.entries, scanEntry{name: name, kind: Dir, dir: sub})
			w.wg.Add(1)
			select {
			case w.sem <- struct{}{}:
				go func() {
					defer func() { <-w.sem }()
					w.dir(cfd, sub)
				}()
			default:
				w.dir(cfd, sub)
			}
		case unix.S_IFLNK:
			target, err := readlinkat(fd, name)
			if err != nil {
				w.fail(fmt.Errorf("checkpoint: walk: %w", &fs.PathError{Op: "readlink", Path: filepath.Join(f.Name(), name), Err: err}))
				return
			}
			if r := checkTarget(p, target); r != "" {
				d.skipped = append(d.skipped, Skipped{Path: p, Reason: SkipOutsideSymlink, Detail: target + ": " + r})
				continue
			}
			d.entries = append(d.entries, scanEntry{name: name, kind: Symlink, target: target})
		case unix.S_IFREG:
			fn := &fileNode{rel: p, st: stampOfStat(&st)}
			d.entries = append(d.entries, scanEntry{name: name, kind: File, file: fn})
		default:
			d.skipped = append(d.skipped, Skipped{Path: p, Reason: SkipSpecial, Detail: modeOfStat(&st).Type().String()})
		}
	}
}

// collect fills s from the tree below d: its directories children first,
// its files, what was left out and skipped, in path order.
func (s *scan) collect(d *dirNode) {
	s.excluded = append(s.excluded, d.excluded...)
	s.skipped = append(s.skipped, d.skipped...)
	for i := range d.entries {
		e := &d.entries[i]
		switch {
		case e.excluded:
		case e.kind == Dir:
			s.collect(e.dir)
		case e.kind == File:
			s.files = append(s.files, e.file)
			s.total += e.file.st.size
		}
	}
	d.excluded, d.skipped = nil, nil
	s.dirs = append(s.dirs, d)
}

// fstatat is lstat of name in the open directory dir, retried on EINTR.
func fstatat(dir int, name string, st *unix.Stat_t) error {
	for {
		if err := unix.Fstatat(dir, name, st, unix.AT_SYMLINK_NOFOLLOW); err != unix.EINTR {
			return err
		}
	}
}

// readlinkat reads the target of the symbolic link name in dir.
func readlinkat(dir int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dir, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// signature computes d.sig from what the walk saw (and what reading the
// files found), and whether d's tree can be the index's: every file below
// it vouched for by the index, every subdirectory reused, the signature
// the index's. Subdirectories are signed first (s.dirs order).
func (d *dirNode) signature(ix *Index) (reusable bool) {
	h := sha256.New()
	var b []byte
	b = binary.AppendUvarint(b, uint64(d.mode))
	clean := true
	for i := range d.entries {
		e := &d.entries[i]
		if e.kind == File && !e.excluded && e.file.skip != nil {
			clean = false
			continue
		}
		b = append(b, byte(e.kind))
		if e.excluded {
			b = append(b, 'x')
		}
		b = appendString(b, e.name)
		switch {
		case e.excluded:
		case e.kind == File:
			st := e.file.st
			b = binary.AppendVarint(b, st.size)
			b = binary.AppendUvarint(b, uint64(st.mode))
			b = binary.AppendVarint(b, st.mtimeNs)
			b = binary.AppendVarint(b, st.ctimeNs)
			b = binary.AppendUvarint(b, st.ino)
			clean = clean && e.file.hit
		case e.kind == Symlink:
			b = appendString(b, e.target)
		case e.kind == Dir:
			b = append(b, e.dir.sig[:]...)
			clean = clean && e.dir.reused
		}
		if len(b) > 4096 {
			h.Write(b)
			b = b[:0]
		}
	}
	h.Write(b)
	h.Sum(d.sig[:0])
	d.stamped = true
	if !clean || ix == nil {
		return false
	}
	old, ok := ix.Dirs[d.rel]
	return ok && old.Sig == d.sig
}
