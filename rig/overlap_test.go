package rig_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"looprig/fsstore"
	"looprig/rig"
	"looprig/rig/storage/memstore"
)

// realTemp is t.TempDir with its symlinks resolved, so canonical paths can
// be compared with it.
func realTemp(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mkdirs(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func symlinkAt(t *testing.T, target, name string) string {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
	return name
}

func openFS(t *testing.T, dir string) *fsstore.Store {
	t.Helper()
	st, err := fsstore.Open(dir)
	if err != nil {
		t.Fatalf("fsstore.Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// A profile whose exclusive or shared root is the store's directory,
// contains it or lies inside it is refused by Define with
// *rig.PersistenceOverlapError naming both canonical paths, however the
// paths are spelled (symlinks, "..", parts not made yet); a sibling layout
// is accepted.
func TestDefineRefusesRootOverlappingStore(t *testing.T) {
	type layout struct {
		st                  *fsstore.Store // the store, when build opened it
		store, root         string         // as given
		wantRoot, wantStore string         // canonical; "" when accepted
		rel                 string
	}
	cases := []struct {
		name  string
		build func(t *testing.T, b string) layout
	}{
		{"root is the store", func(t *testing.T, b string) layout {
			s := filepath.Join(b, "store")
			return layout{store: s, root: s, wantRoot: s, wantStore: s, rel: rig.OverlapSame}
		}},
		{"root contains the store", func(t *testing.T, b string) layout {
			p := mkdirs(t, filepath.Join(b, "proj"))
			s := filepath.Join(p, ".looprig")
			return layout{store: s, root: p, wantRoot: p, wantStore: s, rel: rig.OverlapRootContains}
		}},
		{"root is a parent far up", func(t *testing.T, b string) layout {
			s := filepath.Join(b, "a", "b", "c", "store")
			return layout{store: s, root: b, wantRoot: b, wantStore: s, rel: rig.OverlapRootContains}
		}},
		{"root inside the store", func(t *testing.T, b string) layout {
			s := filepath.Join(b, "store")
			st := openFS(t, s)
			r := mkdirs(t, filepath.Join(s, "workspaces", "mine"))
			return layout{st: st, store: s, root: r, wantRoot: r, wantStore: s, rel: rig.OverlapStoreContains}
		}},
		{"root inside the store, not made yet", func(t *testing.T, b string) layout {
			s := filepath.Join(b, "store")
			r := filepath.Join(s, "later", "on")
			return layout{store: s, root: r, wantRoot: r, wantStore: s, rel: rig.OverlapStoreContains}
		}},
		{"symlinked root contains the store", func(t *testing.T, b string) layout {
			p := mkdirs(t, filepath.Join(b, "proj"))
			s := filepath.Join(p, "state")
			link := symlinkAt(t, p, filepath.Join(b, "link"))
			return layout{store: s, root: link, wantRoot: p, wantStore: s, rel: rig.OverlapRootContains}
		}},
		{"relative symlink to the store as root", func(t *testing.T, b string) layout {
			s := filepath.Join(b, "store")
			st := openFS(t, s)
			link := symlinkAt(t, "store", filepath.Join(b, "ws"))
			return layout{st: st, store: s, root: link, wantRoot: s, wantStore: s, rel: rig.OverlapSame}
		}},
		{"root through a symlink into the store, not made yet", func(t *testing.T, b string) layout {
			s := filepath.Join(b, "store")
			st := openFS(t, s)
			link := symlinkAt(t, filepath.Join(s, "kv"), filepath.Join(b, "ws"))
			r := filepath.Join(link, "new", "dir")
			return layout{st: st, store: s, root: r, wantRoot: filepath.Join(s, "kv", "new", "dir"), wantStore: s, rel: rig.OverlapStoreContains}
		}},
		{"dangling symlink root pointing into the store", func(t *testing.T, b string) layout {
			s := filepath.Join(b, "store")
			st := openFS(t, s)
			link := symlinkAt(t, filepath.Join(s, "future"), filepath.Join(b, "ws"))
			return layout{st: st, store: s, root: link, wantRoot: filepath.Join(s, "future"), wantStore: s, rel: rig.OverlapStoreContains}
		}},
		{"symlink chain with .. after a symlink in its target", func(t *testing.T, b string) layout {
			s := filepath.Join(b, "store")
			st := openFS(t, s)
			deep := mkdirs(t, filepath.Join(s, "workspaces", "deep"))
			// hop -> up -> elsewhere/x/.., and elsewhere/x -> store/workspaces/deep:
			// spelled as a sibling of the store, but physically store/workspaces.
			x := symlinkAt(t, deep, filepath.Join(mkdirs(t, filepath.Join(b, "elsewhere")), "x"))
			symlinkAt(t, x+"/..", filepath.Join(b, "up"))
			hop := symlinkAt(t, "up", filepath.Join(b, "hop"))
			return layout{st: st, store: s, root: hop, wantRoot: filepath.Join(s, "workspaces"), wantStore: s, rel: rig.OverlapStoreContains}
		}},
		{"symlink with .. in its target leading out of the store", func(t *testing.T, b string) layout {
			s := filepath.Join(b, "store")
			st := openFS(t, s)
			out := mkdirs(t, filepath.Join(b, "outside", "inner"))
			// up -> store/kv/x/.., and store/kv/x -> outside/inner: spelled
			// inside the store, but physically outside.
			x := symlinkAt(t, out, filepath.Join(s, "kv", "x"))
			up := symlinkAt(t, x+"/..", filepath.Join(b, "up"))
			return layout{st: st, store: s, root: up}
		}},
		{"root with .. contains the store", func(t *testing.T, b string) layout {
			p := mkdirs(t, filepath.Join(b, "proj"))
			mkdirs(t, filepath.Join(p, "sub"))
			s := filepath.Join(p, ".looprig")
			return layout{store: s, root: p + "/sub/..", wantRoot: p, wantStore: s, rel: rig.OverlapRootContains}
		}},
		{"store given with .. and root contains it", func(t *testing.T, b string) layout {
			p := mkdirs(t, filepath.Join(b, "proj"))
			mkdirs(t, filepath.Join(b, "other"))
			return layout{store: b + "/other/../proj/.looprig", root: p, wantRoot: p, wantStore: filepath.Join(p, ".looprig"), rel: rig.OverlapRootContains}
		}},
		{"store given through a symlink, root contains its target", func(t *testing.T, b string) layout {
			p := mkdirs(t, filepath.Join(b, "proj"))
			s := mkdirs(t, filepath.Join(p, ".looprig"))
			link := symlinkAt(t, s, filepath.Join(b, "storelink"))
			return layout{store: link, root: p, wantRoot: p, wantStore: s, rel: rig.OverlapRootContains}
		}},
		{"siblings", func(t *testing.T, b string) layout {
			return layout{store: filepath.Join(b, "store"), root: mkdirs(t, filepath.Join(b, "root"))}
		}},
		{"sibling whose name extends the store's", func(t *testing.T, b string) layout {
			return layout{store: filepath.Join(b, "store"), root: mkdirs(t, filepath.Join(b, "store2"))}
		}},
		{"sibling whose name the store's extends", func(t *testing.T, b string) layout {
			return layout{store: filepath.Join(b, "proj-state"), root: mkdirs(t, filepath.Join(b, "proj"))}
		}},
		{"symlink from the root into a sibling of the store", func(t *testing.T, b string) layout {
			r := mkdirs(t, filepath.Join(b, "root"))
			symlinkAt(t, filepath.Join(b, "store"), filepath.Join(r, "to-store")) // a link inside the root is not the root
			return layout{store: filepath.Join(b, "store"), root: r}
		}},
	}
	for _, pl := range []rig.Placement{rig.PlacementExclusive, rig.PlacementShared} {
		for _, c := range cases {
			t.Run(string(pl)+"/"+c.name, func(t *testing.T) {
				l := c.build(t, realTemp(t))
				st := l.st
				if st == nil {
					st = openFS(t, l.store)
				}
				p := rig.Profile{Name: "p", Engine: "shell", Placement: pl, Root: l.root}
				r, err := rig.Define(rig.WithStore(st), rig.WithProfile(p))
				if l.wantRoot == "" {
					if err != nil {
						t.Fatalf("Define with root %s and store %s (siblings) = %v, want a rig", l.root, l.store, err)
					}
					if r.Profile().Root != l.root {
						t.Fatalf("profile root %q, want %q", r.Profile().Root, l.root)
					}
					return
				}
				if r != nil || err == nil {
					t.Fatalf("Define with root %s and store %s = a rig, want *rig.PersistenceOverlapError", l.root, l.store)
				}
				var ov *rig.PersistenceOverlapError
				if !errors.As(err, &ov) {
					t.Fatalf("Define = %v (%T), want *rig.PersistenceOverlapError", err, err)
				}
				want := rig.PersistenceOverlapError{Profile: "p", Placement: pl, Relation: l.rel,
					Root: l.wantRoot, Store: l.wantStore, RootGiven: l.root, StoreGiven: st.LocalDir()}
				if *ov != want {
					t.Fatalf("PersistenceOverlapError\n got %+v\nwant %+v", *ov, want)
				}
				msg := err.Error()
				for _, s := range []string{l.wantRoot, l.wantStore, `profile "p"`} {
					if !strings.Contains(msg, s) {
						t.Errorf("message %q does not name %s", msg, s)
					}
				}
			})
		}
	}
}

// Session placement is never refused, though its workspaces live inside
// the store by design; a store with no local directory refuses nothing.
func TestDefineOverlapExemptions(t *testing.T) {
	b := realTemp(t)
	st := openFS(t, filepath.Join(b, "store"))
	p := rig.Profile{Name: "s", Engine: "shell", Placement: rig.PlacementSession, Root: st.LocalDir()}
	if _, err := rig.Define(rig.WithStore(st), rig.WithProfile(p), rig.WithWorkspaces(st.WorkspacesDir())); err != nil {
		t.Fatalf("session placement with workspaces in the store: %v", err)
	}
	for _, pl := range []rig.Placement{rig.PlacementExclusive, rig.PlacementShared} {
		// Not "/": that is refused on any store (CheckSensibleRoot).
		p := rig.Profile{Name: "m", Engine: "shell", Placement: pl, Root: st.LocalDir()}
		if _, err := rig.Define(rig.WithStore(memstore.New()), rig.WithProfile(p)); err != nil {
			t.Fatalf("%s root %s on a memstore: %v", pl, st.LocalDir(), err)
		}
	}
	if err := rig.CheckPersistenceOverlap(rig.Profile{Name: "x", Placement: rig.PlacementShared, Root: "/"}, ""); err != nil {
		t.Fatalf("CheckPersistenceOverlap with no store directory = %v", err)
	}
}

// A refused profile creates nothing: the refusal comes before any session
// exists.
func TestOverlapRefusedBeforeAnything(t *testing.T) {
	b := realTemp(t)
	st := openFS(t, filepath.Join(b, "store"))
	p := rig.Profile{Name: "p", Engine: "shell", Placement: rig.PlacementExclusive, Root: b}
	if _, err := rig.Define(rig.WithStore(st), rig.WithProfile(p)); err == nil {
		t.Fatal("Define accepted a root containing the store")
	}
	keys, err := st.Keys(t.Context(), "")
	if err != nil || len(keys) != 0 {
		t.Fatalf("store keys after the refusal: %v, %v", keys, err)
	}
}
