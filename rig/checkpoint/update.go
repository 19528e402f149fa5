package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"looprig/rig/storage"
)

// Update brings directory dir, whose content is have (a Scan of it, or a
// checkpoint it is known to match), to checkpoint want, writing only what
// differs: files whose content or kind differ are written from want's
// chunks (each verified) into a temporary file beside them and renamed
// over; files and links want does not have are removed, and so are the
// directories that empty out and that want does not have; modes are
// set. Entries a rule left out (secrets, ignored files) are not in either
// manifest and are never touched. No path is written through a symbolic
// link: every directory on the way is checked to be a real one.
//
// It returns the changes it applied (as Diff from have to want, without
// patches). A failure leaves what it wrote so far; a later Update from a
// new Scan finishes the job.
func Update(ctx context.Context, blobs storage.BlobStore, have, want *Manifest, dir string) ([]FileChange, error) {
	changes := compareManifests(have, want)
	u := &updater{dir: dir, want: want}
	// Removals first (deepest first), so that a path freed by one can be
	// taken by an addition.
	order := make([]int, len(changes))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return changes[order[a]].Path > changes[order[b]].Path })
	for _, i := range order {
		c := &changes[i]
		if c.Kind == Removed || c.Kind == TypeChanged {
			if err := u.remove(c.Path, c.OldKind); err != nil {
				return nil, err
			}
		}
	}
	for i := range changes {
		c := &changes[i]
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("checkpoint: update %s: %w", dir, err)
		}
		if c.Kind == Removed {
			continue
		}
		e, _ := want.Lookup(c.Path)
		var err error
		switch {
		case c.Kind == ModeChanged:
			err = u.chmod(c.Path, e.Mode)
		case e.Kind == File:
			err = u.writeFile(ctx, blobs, &e)
		case e.Kind == Symlink:
			err = u.symlink(c.Path, e.Target, c.Kind == Modified)
		case e.Kind == Dir:
			err = u.mkdirAll(c.Path, e.Mode)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := u.pruneDirs(have); err != nil {
		return nil, err
	}
	return changes, nil
}

// updater writes below dir.
type updater struct {
	dir  string
	want *Manifest
}

func (u *updater) abs(rel string) string { return filepath.Join(u.dir, filepath.FromSlash(rel)) }

func (u *updater) fail(op, rel string, err error) error {
	return fmt.Errorf("checkpoint: update %s: %s %s: %w", u.dir, op, rel, err)
}

// realDir checks that every directory from the root to rel (a directory
// path, "" for the root) is a real directory, creating the missing ones
// with the mode want gives them.
func (u *updater) realDir(rel string) error {
	if rel == "" || rel == "." {
		return nil
	}
	elems := strings.Split(rel, "/")
	for i := range elems {
		p := strings.Join(elems[:i+1], "/")
		fi, err := os.Lstat(u.abs(p))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			mode := implicitDirMode
			if m, ok := u.want.Dirs[p]; ok {
				mode = m
			}
			if err := os.Mkdir(u.abs(p), 0o700); err != nil {
				return u.fail("create directory", p, err)
			}
			if err := os.Chmod(u.abs(p), mode); err != nil {
				return u.fail("chmod", p, err)
			}
		case err != nil:
			return u.fail("stat", p, err)
		case !fi.IsDir():
			return u.fail("write below", p, errors.New("not a directory (a symbolic link or a file)"))
		}
	}
	return nil
}

// remove removes the entry at rel (a file, a link, or an empty directory
// when kind is Dir).
func (u *updater) remove(rel string, kind Kind) error {
	if err := u.realDir(path.Dir(rel)); err != nil {
		return err
	}
	var err error
	if kind == Dir {
		err = syscall.Rmdir(u.abs(rel))
	} else {
		err = syscall.Unlink(u.abs(rel))
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return u.fail("remove", rel, err)
	}
	return nil
}

// writeFile writes file e from its chunks into a temporary file beside
// it, then renames it into place.
func (u *updater) writeFile(ctx context.Context, blobs storage.BlobStore, e *Entry) error {
	parent := path.Dir(e.Path)
	if err := u.realDir(parent); err != nil {
		return err
	}
	tmp := u.abs(path.Join(parent, "."+path.Base(e.Path)+".looprig-"+strconv.FormatUint(rand.Uint64(), 36)))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return u.fail("create", e.Path, err)
	}
	rc := openContent(ctx, blobs, e)
	_, err = io.Copy(f, rc)
	rc.Close()
	if err == nil {
		err = f.Chmod(e.Mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = u.clearDir(e.Path)
	}
	if err == nil {
		err = os.Rename(tmp, u.abs(e.Path))
	}
	if err != nil {
		os.Remove(tmp)
		return u.fail("write", e.Path, err)
	}
	return nil
}

func (u *updater) symlink(rel, target string, replace bool) error {
	if err := u.realDir(path.Dir(rel)); err != nil {
		return err
	}
	if r := checkTarget(rel, target); r != "" {
		return u.fail("link", rel, errors.New(r))
	}
	if replace {
		if err := syscall.Unlink(u.abs(rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return u.fail("remove", rel, err)
		}
	}
	if err := u.clearDir(rel); err != nil {
		return u.fail("link", rel, err)
	}
	if err := os.Symlink(target, u.abs(rel)); err != nil {
		return u.fail("link", rel, err)
	}
	return nil
}

// clearDir removes the directory at rel, if there is one and it is empty:
// what was a directory in have (implied by its entries, removed before) is
// a file or a link in want.
func (u *updater) clearDir(rel string) error {
	fi, err := os.Lstat(u.abs(rel))
	if err != nil || !fi.IsDir() {
		return nil
	}
	return syscall.Rmdir(u.abs(rel))
}

func (u *updater) chmod(rel string, mode fs.FileMode) error {
	if err := u.realDir(path.Dir(rel)); err != nil {
		return err
	}
	fi, err := os.Lstat(u.abs(rel))
	if err != nil {
		return u.fail("stat", rel, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return u.fail("chmod", rel, errors.New("a symbolic link"))
	}
	if err := os.Chmod(u.abs(rel), mode); err != nil {
		return u.fail("chmod", rel, err)
	}
	return nil
}

func (u *updater) mkdirAll(rel string, mode fs.FileMode) error {
	if err := u.realDir(rel); err != nil {
		return err
	}
	return u.chmod(rel, mode)
}

// pruneDirs removes the directories of have that want has not (neither
// named nor implied) and that are empty now, deepest first.
func (u *updater) pruneDirs(have *Manifest) error {
	wanted := map[string]bool{}
	for p := range u.want.Dirs {
		wanted[p] = true
	}
	for _, e := range u.want.Entries {
		for p := path.Dir(e.Path); p != "."; p = path.Dir(p) {
			wanted[p] = true
		}
	}
	var dirs []string
	seen := map[string]bool{}
	for _, e := range have.Entries {
		for p := path.Dir(e.Path); p != "." && !seen[p]; p = path.Dir(p) {
			seen[p] = true
			if !wanted[p] {
				dirs = append(dirs, p)
			}
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, p := range dirs {
		if err := u.realDir(path.Dir(p)); err != nil {
			return err
		}
		// Only an empty one: one that holds what a rule left out stays.
		if err := syscall.Rmdir(u.abs(p)); err != nil && !errors.Is(err, fs.ErrNotExist) &&
			!errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) && !errors.Is(err, syscall.ENOTDIR) {
			return u.fail("remove directory", p, err)
		}
	}
	return nil
}

// IndexAfterUpdate is ix, the index of directory dir before Update
// brought it to want (changes, what Update returned), as an index of dir
// after it naming checkpoint d: the files Update wrote are recorded with
// their stat data now and want's content, marked Racy (the next Take reads
// them again, but knows their chunks are stored: it stores nothing more of
// them); the ones it removed are dropped. ix is not modified.
func IndexAfterUpdate(ix *Index, dir string, want *Manifest, d storage.Digest, changes []FileChange) (*Index, error) {
	next := &Index{Manifest: d, Files: make(map[string]IndexEntry, len(want.Entries)), Dirs: map[string]IndexDir{}}
	if ix != nil {
		maps.Copy(next.Files, ix.Files)
		maps.Copy(next.Dirs, ix.Dirs)
	}
	for _, c := range changes {
		delete(next.Files, c.Path)
		e, ok := want.Lookup(c.Path)
		if !ok || e.Kind != File {
			continue
		}
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(c.Path)))
		if err != nil {
			return nil, fmt.Errorf("checkpoint: index after update: %w", err)
		}
		ie := stampOf(fi).entry(e.Digest, e.Chunks)
		ie.Racy = true
		next.Files[c.Path] = ie
	}
	return next, nil
}
