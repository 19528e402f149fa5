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
	"sync"
	"sync/atomic"
	"syscall"

	"looprig/rig/storage"
)

// implicitDirMode is the mode of the directories a manifest implies (those
// that hold something), and of the materialized root.
const implicitDirMode fs.FileMode = 0o755

// Materialize writes the checkpoint whose manifest is blob manifestDigest
// as a new directory dir, which must not exist (else an error wrapping
// fs.ErrExist). It builds the tree in a temporary sibling directory (mode
// 0700 while it is built): directories as real directories, then every
// file read from its blob to the end (so verified; a missing or damaged
// blob fails with *MaterializeError naming the file), created without
// following symlinks, given its mode and fsynced, then the symlinks, each
// target checked again to stay inside. It then renames the temporary
// directory to dir, never replacing one that appeared meanwhile. On any
// failure the temporary directory is removed and dir is not created.
//
// progress, when not nil, is called with the bytes of file content
// written so far and the total, from one goroutine at a time.
func Materialize(ctx context.Context, blobs storage.BlobStore, manifestDigest storage.Digest, dir string, progress func(done, total int64)) (err error) {
	m, err := Load(ctx, blobs, manifestDigest)
	if err != nil {
		return err
	}
	dir = filepath.Clean(dir)
	if _, err := os.Lstat(dir); err == nil {
		return fmt.Errorf("checkpoint: materialize into %s: %w", dir, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checkpoint: materialize: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".materialize-")
	if err != nil {
		return fmt.Errorf("checkpoint: materialize: %w", err)
	}
	defer func() {
		if err != nil {
			removeTree(tmp)
		}
	}()
	b := &builder{root: tmp, dirs: make(map[string]fs.FileMode)}
	if err := b.mkdirs(m); err != nil {
		return err
	}
	if err := b.writeFiles(ctx, blobs, m, progress); err != nil {
		return err
	}
	if err := b.symlinks(m); err != nil {
		return err
	}
	if err := b.finishDirs(); err != nil {
		return err
	}
	if err := renameNoReplace(tmp, dir); err != nil {
		return fmt.Errorf("checkpoint: materialize: rename into %s: %w", dir, err)
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		// dir is there and complete; only its durability is in doubt.
		return fmt.Errorf("checkpoint: materialize: %w", errors.Join(err, removeTreeErr(dir)))
	}
	return nil
}

// builder creates a tree under root.
type builder struct {
	root string
	dirs map[string]fs.FileMode // every directory created, relative, and its final mode
}

func (b *builder) abs(rel string) string { return filepath.Join(b.root, filepath.FromSlash(rel)) }

// mkdirs creates every directory the manifest names or implies, one
// element at a time with Mkdir (which never follows a symlink at its last
// element, and no symlink exists yet).
func (b *builder) mkdirs(m *Manifest) error {
	for i := range m.Entries {
		e := &m.Entries[i]
		if r := checkPath(e.Path); r != "" {
			return fmt.Errorf("checkpoint: materialize %q: %s", e.Path, r)
		}
		for j := 0; j < len(e.Path); j++ {
			if e.Path[j] == '/' {
				if err := b.mkdir(e.Path[:j], implicitDirMode); err != nil {
					return err
				}
			}
		}
		if e.Kind == Dir {
			if err := b.mkdir(e.Path, e.Mode); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *builder) mkdir(rel string, mode fs.FileMode) error {
	if _, ok := b.dirs[rel]; ok {
		return nil
	}
	if err := os.Mkdir(b.abs(rel), 0o700); err != nil {
		return fmt.Errorf("checkpoint: materialize: %w", err)
	}
	b.dirs[rel] = mode
	return nil
}

// writeFiles writes the regular files, a few at once.
func (b *builder) writeFiles(ctx context.Context, blobs storage.BlobStore, m *Manifest, progress func(done, total int64)) error {
	var files []int
	for i := range m.Entries {
		if m.Entries[i].Kind == File {
			files = append(files, i)
		}
	}
	total := m.Size()
	var (
		done    atomic.Int64
		next    atomic.Int64
		mu      sync.Mutex // serializes progress and guards first
		first   error
		wg      sync.WaitGroup
		workers = min(4, len(files))
	)
	report := func(n int64) {
		d := done.Add(n)
		if progress != nil {
			mu.Lock()
			progress(d, total)
			mu.Unlock()
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256<<10)
			for {
				k := int(next.Add(1)) - 1
				if k >= len(files) || ctx.Err() != nil {
					return
				}
				e := &m.Entries[files[k]]
				if err := b.writeFile(ctx, blobs, e, buf, report); err != nil {
					mu.Lock()
					if first == nil {
						first = &MaterializeError{Path: e.Path, Digest: e.Digest, Err: err}
						cancel()
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("checkpoint: materialize: %w", err)
	}
	return nil
}

// writeFile creates e (exclusively, not following a symlink), copies its
// blob into it to the blob's verified end, sets its mode and syncs it.
func (b *builder) writeFile(ctx context.Context, blobs storage.BlobStore, e *Entry, buf []byte, report func(int64)) error {
	rc, err := blobs.GetBlob(ctx, e.Digest)
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := os.OpenFile(b.abs(e.Path), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	n, err := io.CopyBuffer(&progressWriter{w: f, report: report}, struct{ io.Reader }{rc}, buf)
	if err == nil && n != e.Size {
		err = fmt.Errorf("blob holds %d bytes, the manifest says %d", n, e.Size)
	}
	if err == nil {
		err = f.Chmod(e.Mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

type progressWriter struct {
	w      io.Writer
	report func(int64)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.report(int64(n))
	return n, err
}

// symlinks creates the symlinks, last, so that no file or directory is
// ever created through one.
func (b *builder) symlinks(m *Manifest) error {
	for i := range m.Entries {
		e := &m.Entries[i]
		if e.Kind != Symlink {
			continue
		}
		if r := checkTarget(e.Path, e.Target); r != "" {
			return fmt.Errorf("checkpoint: materialize %q -> %q: %s", e.Path, e.Target, r)
		}
		if _, ok := b.dirs[path.Dir(e.Path)]; !ok && path.Dir(e.Path) != "." {
			return fmt.Errorf("checkpoint: materialize %q: parent not created", e.Path)
		}
		if err := os.Symlink(e.Target, b.abs(e.Path)); err != nil {
			return fmt.Errorf("checkpoint: materialize: %w", err)
		}
	}
	return nil
}

// finishDirs syncs every directory, then gives each its mode, deepest
// first (a read-only directory must be filled before it is made so).
func (b *builder) finishDirs() error {
	rels := make([]string, 0, len(b.dirs))
	for rel := range b.dirs {
		rels = append(rels, rel)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(rels)))
	for _, rel := range rels {
		if err := syncDir(b.abs(rel)); err != nil {
			return fmt.Errorf("checkpoint: materialize: %w", err)
		}
	}
	if err := syncDir(b.root); err != nil {
		return fmt.Errorf("checkpoint: materialize: %w", err)
	}
	for _, rel := range rels {
		if err := os.Chmod(b.abs(rel), b.dirs[rel]); err != nil {
			return fmt.Errorf("checkpoint: materialize: %w", err)
		}
	}
	if err := os.Chmod(b.root, implicitDirMode); err != nil {
		return fmt.Errorf("checkpoint: materialize: %w", err)
	}
	return nil
}

func syncDir(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// removeTree removes a tree this package built, first making its
// directories writable (a checkpoint may hold read-only ones).
func removeTree(root string) { _ = removeTreeErr(root) }

func removeTreeErr(root string) error {
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700) // before WalkDir reads it
		}
		return nil
	})
	return os.RemoveAll(root)
}
