package rigtest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"looprig/rig"
	"looprig/rig/storage"
)

// localDirStore is a store whose LocalDir is dir, whatever the backend
// keeps: the store directory a root may not overlap.
type localDirStore struct {
	storage.Store
	dir string
}

func (s localDirStore) LocalDir() string { return s.dir }

// A workspace root that is not a project directory is refused by Define,
// after its symlinks are resolved, before anything is taken or written:
// "/" and the home directory itself (*rig.UnsafeRootError), the store's
// directory, a directory inside it and one that contains it
// (*rig.PersistenceOverlapError), for exclusive and shared placement. A
// directory inside the home directory is a sensible root.
func testUnsafeRootsRefused(t *testing.T, e *env) {
	home := canonical(t, t.TempDir())
	t.Setenv("HOME", home)
	links := t.TempDir()
	link := func(name, target string) string {
		p := filepath.Join(links, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	parent := canonical(t, t.TempDir())
	storeDir := filepath.Join(parent, "store")
	inside := filepath.Join(storeDir, "sessions-here")
	for _, d := range []string{inside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	store := localDirStore{Store: e.fs, dir: storeDir}

	for _, c := range []struct {
		name      string
		root      string
		placement rig.Placement
		reason    string // UnsafeRootError's, or "" for an overlap
		relation  string // PersistenceOverlapError's
		canonical string
	}{
		{"filesystem root", "/", rig.PlacementExclusive, rig.UnsafeRootFilesystem, "", "/"},
		{"filesystem root, shared", "/", rig.PlacementShared, rig.UnsafeRootFilesystem, "", "/"},
		{"filesystem root through a symlink", link("slash", "/"), rig.PlacementExclusive, rig.UnsafeRootFilesystem, "", "/"},
		{"filesystem root through ..", filepath.Join(parent, "..", "..", "..", "..", "..", "..", "..", ".."), rig.PlacementExclusive, rig.UnsafeRootFilesystem, "", "/"},
		{"home", home, rig.PlacementExclusive, rig.UnsafeRootHome, "", home},
		{"home, shared", home, rig.PlacementShared, rig.UnsafeRootHome, "", home},
		{"home through a symlink", link("home", home), rig.PlacementExclusive, rig.UnsafeRootHome, "", home},
		{"home with a trailing slash", home + "/", rig.PlacementExclusive, rig.UnsafeRootHome, "", home},
		{"store directory", storeDir, rig.PlacementExclusive, "", rig.OverlapSame, storeDir},
		{"store directory through a symlink", link("store", storeDir), rig.PlacementShared, "", rig.OverlapSame, storeDir},
		{"inside the store", inside, rig.PlacementExclusive, "", rig.OverlapStoreContains, inside},
		{"containing the store", parent, rig.PlacementExclusive, "", rig.OverlapRootContains, parent},
	} {
		p := rig.Profile{Name: "unsafe", Engine: "shell", Placement: c.placement, Root: c.root}
		r, err := rig.Define(append(baseOptions(store, e.ws), rig.WithProfile(p))...)
		if err == nil {
			if s, err := r.NewSession(t.Context()); err == nil {
				shutdownAtCleanup(t, s)
			}
			t.Errorf("%s: root %s accepted, want it refused", c.name, c.root)
			continue
		}
		if c.reason != "" {
			var u *rig.UnsafeRootError
			if !errors.As(err, &u) {
				t.Errorf("%s: %v (%T), want *rig.UnsafeRootError", c.name, err, err)
				continue
			}
			if u.Reason != c.reason || u.Root != c.canonical || u.RootGiven != c.root || u.Placement != c.placement {
				t.Errorf("%s: %+v, want reason %s, root %s given as %s", c.name, u, c.reason, c.canonical, c.root)
			}
			continue
		}
		var o *rig.PersistenceOverlapError
		if !errors.As(err, &o) {
			t.Errorf("%s: %v (%T), want *rig.PersistenceOverlapError", c.name, err, err)
			continue
		}
		if o.Relation != c.relation || o.Root != c.canonical || o.Store != storeDir {
			t.Errorf("%s: %+v, want relation %s, root %s, store %s", c.name, o, c.relation, c.canonical, storeDir)
		}
	}
	// Refused, nothing was taken or written: no lease, no journal, and the
	// roots are as they were.
	if names := e.fs.names(""); len(names) != 0 {
		t.Errorf("refused roots touched the store: %v", names)
	}
	for _, d := range []string{home, storeDir, inside} {
		if entries, _ := os.ReadDir(d); d != storeDir && len(entries) != 0 || d == storeDir && len(entries) != 1 {
			t.Errorf("refused root %s was written to: %v", d, entries)
		}
	}

	// A project directory inside the home directory is fine.
	project := filepath.Join(home, "src", "project")
	if err := os.MkdirAll(project, 0o700); err != nil {
		t.Fatal(err)
	}
	s := e.newSession(e.define(rig.WithProfile(exclusiveProfile(project))))
	if s.Workspace() != project {
		t.Errorf("session in %s runs in %s", project, s.Workspace())
	}
}
