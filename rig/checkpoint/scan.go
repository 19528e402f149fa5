package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"looprig/rig/storage"
)

// Options tune Take (and Differences, which walks a directory the same way).
type Options struct {
	// Exclude holds gitignore-style patterns (see Ignore) applied after
	// the root's .looprigignore, so they win over it. Nothing is
	// excluded by default.
	Exclude []string
	// Index is the previous Take's Result.Index, or nil: files whose stat
	// data it holds unchanged are not read.
	Index *Index
	// MaxBytes, when > 0, bounds the total size of the regular files:
	// more fails Take with *TooLargeError before anything but file
	// contents is stored (and before any is when the walk already shows
	// it).
	MaxBytes int64
	// Parallel is how many files are read at once (default 4).
	Parallel int
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

// maxIgnoreFileBytes bounds the .looprigignore read.
const maxIgnoreFileBytes = 1 << 20

// scan is one walk of a workspace.
type scan struct {
	root    string
	ignore  *Ignore
	entries []Entry
	files   []int   // indexes in entries of the regular files
	stamps  []stamp // per entries index (files only)
	skipped []Skipped
	total   int64
}

// loadIgnore compiles the root's .looprigignore (if it is a regular file)
// followed by extra.
func loadIgnore(root string, extra []string) (*Ignore, error) {
	ig := &Ignore{}
	p := filepath.Join(root, IgnoreFile)
	if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		b, err := io.ReadAll(io.LimitReader(f, maxIgnoreFileBytes+1))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("checkpoint: read %s: %w", p, err)
		}
		if len(b) > maxIgnoreFileBytes {
			return nil, fmt.Errorf("checkpoint: %s is larger than %d bytes", p, maxIgnoreFileBytes)
		}
		if err := ig.add(strings.Split(string(b), "\n"), IgnoreFile); err != nil {
			return nil, err
		}
	}
	if err := ig.add(extra, "Options.Exclude"); err != nil {
		return nil, err
	}
	return ig, nil
}

// walk lists root without following symlinks and without reading files.
func walk(ctx context.Context, root string, exclude []string) (*scan, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("checkpoint: %s is not a directory", root)
	}
	ig, err := loadIgnore(root, exclude)
	if err != nil {
		return nil, err
	}
	s := &scan{root: root, ignore: ig}
	if _, err := s.walkDir(ctx, ""); err != nil {
		return nil, err
	}
	s.sort()
	return s, nil
}

// sort orders the entries by path (the walk gives "a/b" before "a.txt"),
// keeping files and stamps in step.
func (s *scan) sort() {
	for len(s.stamps) < len(s.entries) {
		s.stamps = append(s.stamps, stamp{})
	}
	order := make([]int, len(s.entries))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return s.entries[order[a]].Path < s.entries[order[b]].Path })
	entries := make([]Entry, len(order))
	stamps := make([]stamp, len(order))
	s.files = s.files[:0]
	for i, j := range order {
		entries[i], stamps[i] = s.entries[j], s.stamps[j]
		if entries[i].Kind == File {
			s.files = append(s.files, i)
		}
	}
	s.entries, s.stamps = entries, stamps
}

// walkDir adds the entries below directory rel ("" for the root) and
// reports whether it kept any.
func (s *scan) walkDir(ctx context.Context, rel string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("checkpoint: walk: %w", err)
	}
	des, err := os.ReadDir(filepath.Join(s.root, filepath.FromSlash(rel)))
	if err != nil {
		return false, fmt.Errorf("checkpoint: walk: %w", err)
	}
	kept := false
	for _, de := range des {
		p := path.Join(rel, de.Name())
		typ := de.Type()
		if s.ignore.Match(p, typ.IsDir()) {
			continue
		}
		abs := filepath.Join(s.root, filepath.FromSlash(p))
		switch {
		case typ.IsDir():
			inner, err := s.walkDir(ctx, p)
			if err != nil {
				return false, err
			}
			if !inner {
				fi, err := os.Lstat(abs)
				if err != nil {
					return false, fmt.Errorf("checkpoint: walk: %w", err)
				}
				s.entries = append(s.entries, Entry{Path: p, Kind: Dir, Mode: fi.Mode().Perm()})
			}
			kept = true
		case typ&fs.ModeSymlink != 0:
			target, err := os.Readlink(abs)
			if err != nil {
				return false, fmt.Errorf("checkpoint: walk: %w", err)
			}
			if r := checkTarget(p, target); r != "" {
				s.skipped = append(s.skipped, Skipped{Path: p, Reason: SkipOutsideSymlink, Detail: target + ": " + r})
				continue
			}
			s.entries = append(s.entries, Entry{Path: p, Kind: Symlink, Target: target})
			kept = true
		case typ.IsRegular():
			fi, err := os.Lstat(abs)
			if err != nil {
				return false, fmt.Errorf("checkpoint: walk: %w", err)
			}
			if !fi.Mode().IsRegular() { // replaced since ReadDir
				s.skipped = append(s.skipped, Skipped{Path: p, Reason: SkipChanged, Detail: fi.Mode().Type().String()})
				continue
			}
			st := stampOf(fi)
			s.files = append(s.files, len(s.entries))
			s.entries = append(s.entries, Entry{Path: p, Kind: File, Mode: fi.Mode().Perm(), Size: st.size})
			for len(s.stamps) < len(s.entries) {
				s.stamps = append(s.stamps, stamp{})
			}
			s.stamps[len(s.entries)-1] = st
			s.total += st.size
			kept = true
		default:
			s.skipped = append(s.skipped, Skipped{Path: p, Reason: SkipSpecial, Detail: typ.String()})
		}
	}
	return kept, nil
}

// digester turns an open file into a digest: PutBlob for Take, a local
// hash for Differences. It returns the digest and the bytes it read.
type digester func(ctx context.Context, r io.Reader) (storage.Digest, int64, error)

// digestFiles fills the digest of every regular file: from ix when its
// stat data match, else by reading it with dig, parallel at once. Files
// that change while read, twice, or vanish are dropped from the entries
// and added to skipped. It returns the bytes read.
func (s *scan) digestFiles(ctx context.Context, ix *Index, dig digester, parallel int) (int64, error) {
	var todo []int
	for _, i := range s.files {
		if d, ok := ix.lookup(s.entries[i].Path, s.stamps[i]); ok {
			s.entries[i].Digest = d
		} else {
			todo = append(todo, i)
		}
	}
	if parallel <= 0 {
		parallel = 4
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		read     atomic.Int64
		next     atomic.Int64
		mu       sync.Mutex
		firstErr error
		drop     = make(map[int]Skipped)
		wg       sync.WaitGroup
	)
	for w := 0; w < min(parallel, len(todo)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1)) - 1
				if k >= len(todo) || ctx.Err() != nil {
					return
				}
				i := todo[k]
				skip, err := s.readFile(ctx, i, dig, &read)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
					cancel()
				}
				if skip != nil {
					drop[i] = *skip
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return read.Load(), firstErr
	}
	if err := ctx.Err(); err != nil {
		return read.Load(), fmt.Errorf("checkpoint: %w", err)
	}
	if len(drop) > 0 {
		kept := s.entries[:0]
		var files []int
		stamps := s.stamps[:0]
		for i, e := range s.entries {
			if sk, ok := drop[i]; ok {
				s.skipped = append(s.skipped, sk)
				s.total -= e.Size
				continue
			}
			if e.Kind == File {
				files = append(files, len(kept))
			}
			kept = append(kept, e)
			stamps = append(stamps, s.stamps[i])
		}
		s.entries, s.files, s.stamps = kept, files, stamps
	}
	return read.Load(), nil
}

// readFile digests entries[i], re-stating the open file after reading it:
// when its size, mtime, ctime or inode moved meanwhile, it tries once
// more, then gives up on the file (SkipChanged) rather than keep content
// that may be torn. It updates the entry's size and mode and its stamp.
func (s *scan) readFile(ctx context.Context, i int, dig digester, read *atomic.Int64) (*Skipped, error) {
	e := &s.entries[i]
	abs := filepath.Join(s.root, filepath.FromSlash(e.Path))
	for try := 0; try < 2; try++ {
		f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if errors.Is(err, fs.ErrNotExist) {
			return &Skipped{Path: e.Path, Reason: SkipVanished}, nil
		}
		if errors.Is(err, syscall.ELOOP) { // became a symlink
			return &Skipped{Path: e.Path, Reason: SkipChanged, Detail: "became a symlink"}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		before, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		if !before.Mode().IsRegular() {
			f.Close()
			return &Skipped{Path: e.Path, Reason: SkipChanged, Detail: before.Mode().Type().String()}, nil
		}
		d, n, err := dig(ctx, f)
		read.Add(n)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("checkpoint: read %s: %w", e.Path, err)
		}
		after, err := f.Stat()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		b, a := stampOf(before), stampOf(after)
		if b.sameContent(a) && n == a.size {
			e.Digest, e.Size, e.Mode = d, a.size, after.Mode().Perm()
			s.stamps[i] = a
			return nil, nil
		}
	}
	return &Skipped{Path: e.Path, Reason: SkipChanged}, nil
}

// newIndex returns the index of the scanned files, without those modified
// within racyWindow of start.
func (s *scan) newIndex(start time.Time) *Index {
	ix := &Index{Version: indexVersion, Files: make(map[string]IndexEntry, len(s.files))}
	limit := start.Add(-racyWindow).UnixNano()
	for _, i := range s.files {
		st := s.stamps[i]
		if st.mtimeNs < limit {
			ix.Files[s.entries[i].Path] = st.entry(s.entries[i].Digest)
		}
	}
	return ix
}
