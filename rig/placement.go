package rig

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"looprig/rig/storage"
)

// workspace is a resolved placement: the directory turns run in and, for
// exclusive placement, the root lease guarding it.
type workspace struct {
	placement Placement
	dir       string // where turns run
	root      string // canonical root ("" for session placement)
	lease     storage.Lease
}

// resolveRoot canonicalizes the profile's root. The root must exist.
func (r *Rig) resolveRoot() (string, error) {
	if r.profile.Placement == PlacementSession {
		return "", nil
	}
	root, err := canonicalRoot(r.profile.Root)
	if err != nil {
		return "", fmt.Errorf("workspace root %s: %w", r.profile.Root, err)
	}
	fi, err := os.Stat(root)
	if err != nil {
		return "", fmt.Errorf("workspace root %s: %w", root, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("workspace root %s is not a directory", root)
	}
	return root, nil
}

// liveRoot is the root the live profile names, canonical (also when it,
// or what a link names, does not exist), for manifests.
func (r *Rig) liveRoot() string {
	if r.profile.Placement == PlacementSession {
		return ""
	}
	if root, err := canonicalRoot(r.profile.Root); err == nil {
		return root
	}
	// Gone, or a link to what is gone: the path it will name again once
	// made, as it was recorded.
	if root, err := canonicalPath(r.profile.Root); err == nil {
		return root
	}
	abs, err := filepath.Abs(r.profile.Root)
	if err != nil {
		return r.profile.Root
	}
	return abs
}

// rootLeaseName names the lease of an exclusive root.
func rootLeaseName(canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return storage.RootLeaseName(hex.EncodeToString(sum[:]))
}

// placeWorkspace materializes the workspace of session id: for session
// placement its directory (created 0700), for exclusive placement the root
// lease (a held root is *WorkspaceRootBusyError; held, when not nil, is that
// lease taken already), for shared nothing. The caller releases ws.lease on
// any later failure.
func (r *Rig) placeWorkspace(ctx context.Context, id string, held storage.Lease) (*workspace, error) {
	ws := &workspace{placement: r.profile.Placement}
	switch r.profile.Placement {
	case PlacementSession:
		ws.dir = filepath.Join(r.workspaces, id)
		if err := os.MkdirAll(ws.dir, 0o700); err != nil {
			return nil, fmt.Errorf("create workspace: %w", err)
		}
		return ws, nil
	}
	root, err := r.resolveRoot()
	if err != nil {
		return nil, err
	}
	ws.dir, ws.root = root, root
	if r.profile.Placement == PlacementShared {
		return ws, nil
	}
	if held != nil {
		ws.lease = held
		return ws, nil
	}
	l, err := r.acquireRoot(ctx, root)
	if err != nil {
		return nil, err
	}
	ws.lease = l
	return ws, nil
}

// acquireRoot takes the lease of the exclusive root whose canonical path
// is root (which need not exist yet): a held root is
// *WorkspaceRootBusyError.
func (r *Rig) acquireRoot(ctx context.Context, root string) (storage.Lease, error) {
	l, err := r.acquire(ctx, rootLeaseName(root))
	if err != nil {
		var held *storage.LeaseHeldError
		if errors.As(err, &held) {
			return nil, &WorkspaceRootBusyError{Root: root, HolderEpoch: held.HolderEpoch, Cause: err}
		}
		return nil, fmt.Errorf("workspace root %s: %w", root, err)
	}
	return l, nil
}

// copySeed copies the tree at seed into dir, which must be empty. Regular
// files, directories and symlinks that stay inside the seed are copied;
// anything else — an absolute symlink, one that escapes the seed, a device,
// a FIFO, a socket — refuses the whole seed before anything is copied.
func copySeed(seed, dir string) error {
	src, err := filepath.Abs(seed)
	if err != nil {
		return &SeedError{Path: seed, Reason: err.Error()}
	}
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return &SeedError{Path: seed, Reason: err.Error()}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("seed: workspace %s: %w", dir, err)
	}
	if len(entries) > 0 {
		return &SeedError{Path: seed, Reason: "workspace " + dir + " is not empty"}
	}
	// First pass: check everything, so a refused seed copies nothing.
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return checkSeedEntry(src, path, d)
	})
	if err != nil {
		var se *SeedError
		if errors.As(err, &se) {
			return err
		}
		return &SeedError{Path: seed, Reason: err.Error()}
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil || rel == "." {
			return err
		}
		target := filepath.Join(dir, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(target, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		default:
			return copyFile(path, target, info.Mode().Perm()|0o600)
		}
	})
}

func checkSeedEntry(root, path string, d fs.DirEntry) error {
	rel, _ := filepath.Rel(root, path)
	switch t := d.Type(); {
	case t.IsDir(), t.IsRegular():
		return nil
	case t&fs.ModeSymlink != 0:
		link, err := os.Readlink(path)
		if err != nil {
			return err
		}
		if filepath.IsAbs(link) {
			return &SeedError{Path: rel, Reason: "absolute symlink to " + link}
		}
		resolved := filepath.Join(filepath.Dir(path), link)
		if r, err := filepath.Rel(root, resolved); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return &SeedError{Path: rel, Reason: "symlink escapes the seed: " + link}
		}
		if !linkStaysInside(root, filepath.Dir(rel), link) { // ".." after a symlink (seedcheck.go)
			return &SeedError{Path: rel, Reason: "symlink escapes the seed through another symlink: " + link}
		}
		return nil
	default:
		return &SeedError{Path: rel, Reason: "not a regular file, directory or symlink (" + t.String() + ")"}
	}
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
