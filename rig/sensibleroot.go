package rig

import (
	"fmt"
	"os"
	"path/filepath"
)

// Reasons an UnsafeRootError gives.
const (
	UnsafeRootFilesystem = "filesystem_root" // the root is "/"
	UnsafeRootHome       = "home"            // the root is the user's home directory itself
)

// CheckSensibleRoot refuses a profile whose exclusive or shared root is
// not a project directory: the filesystem root "/" or the user's home
// directory itself (os.UserHomeDir; a directory inside it is fine). Its
// turns would run, and its checkpoints would copy, everything there. Both
// are compared canonical (canonicalPath: absolute, cleaned, symlinks
// resolved) and, when they exist, by device and inode. Session placement
// and an empty root are never refused. The refusal is an *UnsafeRootError;
// a root that cannot be canonicalized is returned wrapped.
//
// A root that overlaps the store is refused separately, by
// CheckPersistenceOverlap; Define runs both.
func CheckSensibleRoot(p Profile) error {
	if p.Placement == PlacementSession || p.Root == "" {
		return nil
	}
	root, err := canonicalPath(p.Root)
	if err != nil {
		return fmt.Errorf("profile %q: workspace root %s: %w", p.Name, p.Root, err)
	}
	refuse := func(reason string) error {
		return &UnsafeRootError{Profile: p.Name, Placement: p.Placement, Root: root, RootGiven: p.Root, Reason: reason}
	}
	if sameDir(root, string(filepath.Separator)) {
		return refuse(UnsafeRootFilesystem)
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		if h, err := canonicalPath(home); err == nil && sameDir(root, h) {
			return refuse(UnsafeRootHome)
		}
	}
	return nil
}

// sameDir reports whether the canonical paths a and b name one directory:
// equal, or (two names of it, a bind mount) the same on disk.
func sameDir(a, b string) bool {
	if a == b {
		return true
	}
	afi, aerr := os.Stat(a)
	bfi, berr := os.Stat(b)
	return aerr == nil && berr == nil && os.SameFile(afi, bfi)
}
