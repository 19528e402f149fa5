package rig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinks bounds how many symlinks canonicalPath follows, as the kernel's
// ELOOP limit does.
const maxLinks = 40

// CheckPersistenceOverlap refuses a profile whose exclusive or shared root
// overlaps store, the directory a store keeps its files in on this
// machine: the root equals it, contains it or lies inside it. A turn runs
// anything in its root, so such a root lets one turn delete every
// session's journal and lease. Session placement and an empty store are
// never refused. The refusal is a *PersistenceOverlapError; an error
// canonicalizing either path is returned wrapped.
//
// Both paths are compared canonical: absolute, cleaned (a ".." is taken
// the way the rig takes it when it places a workspace) and free of
// symlinks; the part of a path that does not exist yet is appended to its
// longest existing prefix. Directories that are the same on disk under two
// names (a bind mount) are caught by comparing the existing ancestors of
// each path with the other by device and inode.
func CheckPersistenceOverlap(p Profile, store string) error {
	if store == "" || p.Placement == PlacementSession || p.Root == "" {
		return nil
	}
	root, err := canonicalPath(p.Root)
	if err != nil {
		return fmt.Errorf("profile %q: workspace root %s: %w", p.Name, p.Root, err)
	}
	st, err := canonicalPath(store)
	if err != nil {
		return fmt.Errorf("profile %q: store directory %s: %w", p.Name, store, err)
	}
	rel := overlapOf(root, st)
	if rel == "" {
		return nil
	}
	return &PersistenceOverlapError{
		Profile: p.Name, Placement: p.Placement, Relation: rel,
		Root: root, Store: st, RootGiven: p.Root, StoreGiven: store,
	}
}

// Relations of a workspace root to a store directory that overlap.
const (
	OverlapSame          = "same"                // the root is the store directory
	OverlapRootContains  = "root_contains_store" // the store is inside the root
	OverlapStoreContains = "store_contains_root" // the root is inside the store
)

// overlapOf returns how the canonical paths root and store overlap, or ""
// when they do not.
func overlapOf(root, store string) string {
	switch {
	case root == store:
		return OverlapSame
	case within(root, store):
		return OverlapRootContains
	case within(store, root):
		return OverlapStoreContains
	}
	// Two names of one directory (a bind mount): compare on disk.
	rootFI, rootErr := os.Stat(root)
	storeFI, storeErr := os.Stat(store)
	if rootErr == nil && storeErr == nil && os.SameFile(rootFI, storeFI) {
		return OverlapSame
	}
	if rootErr == nil && hasAncestor(store, rootFI) {
		return OverlapRootContains
	}
	if storeErr == nil && hasAncestor(root, storeFI) {
		return OverlapStoreContains
	}
	return ""
}

// within reports whether the canonical path child lies strictly inside the
// canonical directory parent.
func within(parent, child string) bool {
	if parent == child {
		return false
	}
	if parent == string(filepath.Separator) {
		return true
	}
	return strings.HasPrefix(child, parent+string(filepath.Separator))
}

// hasAncestor reports whether a proper ancestor of the canonical path p
// is the directory dir, by device and inode.
func hasAncestor(p string, dir fs.FileInfo) bool {
	for {
		parent := filepath.Dir(p)
		if parent == p {
			return false
		}
		p = parent
		if fi, err := os.Stat(p); err == nil && os.SameFile(fi, dir) {
			return true
		}
	}
}

// canonicalPath is the absolute, cleaned, symlink-free form of p, as
// canonicalRoot gives for an existing path. The part of p that does not
// exist (yet) is kept as written, after the canonical form of its longest
// existing prefix; a symlink whose target does not exist is followed all
// the same, so the path names what it will name once the target is made.
func canonicalPath(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return resolve(abs, 0)
}

// resolve walks the absolute, clean path abs from the top, replacing each
// symlink by its target (a ".." in a target going up from the directory
// the link is in, as the kernel does). links counts the symlinks followed
// so far.
func resolve(abs string, links int) (string, error) {
	parts := strings.Split(abs, string(filepath.Separator))
	done := string(filepath.Separator)
	for i, part := range parts {
		switch part {
		case "", ".":
			continue
		case "..":
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, part)
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			done = next // not there (yet): as written
			continue
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink == 0:
			done = next
			continue
		}
		if links >= maxLinks {
			return "", &fs.PathError{Op: "resolve", Path: abs, Err: syscall.ELOOP}
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = done + string(filepath.Separator) + target
		}
		rest := strings.Join(parts[i+1:], string(filepath.Separator))
		if rest != "" {
			target += string(filepath.Separator) + rest
		}
		return resolve(target, links+1)
	}
	return done, nil
}
