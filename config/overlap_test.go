package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"looprig/rig"
)

// CheckStore refuses a profile whose root overlaps the store's directory
// with a *Error naming the file, the line of root and the field, wrapping
// the *rig.PersistenceOverlapError; profiles are reported in file order,
// and a configuration whose roots are siblings of the store passes.
func TestCheckStore(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"proj/sub", "elsewhere"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(base, "proj"), filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(base, "proj", "state")
	path := filepath.Join(base, "config.toml")
	doc := `default_profile = "fine"

[profiles.fine]
placement = "exclusive"
root = "elsewhere"

[profiles.zz-first]          # sorts last by name, comes first in the file
placement = "shared"
gate_policy = []
root = "link/sub/.."         # a symlink and a "..": the project, which holds the store

[profiles.aa-second]
placement = "exclusive"
root = "proj/state/inside"
`
	c, err := Parse(path, []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	err = c.CheckStore(store)
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("CheckStore = %v (%T), want *config.Error", err, err)
	}
	if ce.File != path || ce.Line != 10 || ce.Field != "profiles.zz-first.root" {
		t.Fatalf("Error{File %q, Line %d, Field %q}, want {%q, 10, profiles.zz-first.root}", ce.File, ce.Line, ce.Field, path)
	}
	var ov *rig.PersistenceOverlapError
	if !errors.As(err, &ov) {
		t.Fatalf("CheckStore = %v: errors.As does not reach *rig.PersistenceOverlapError", err)
	}
	proj := filepath.Join(base, "proj")
	if ov.Profile != "zz-first" || ov.Root != proj || ov.Store != store || ov.Relation != rig.OverlapRootContains {
		t.Fatalf("PersistenceOverlapError %+v, want profile zz-first, root %s contains store %s", *ov, proj, store)
	}
	msg := err.Error()
	for _, s := range []string{path + ":10:", "profiles.zz-first.root", proj, store} {
		if !strings.Contains(msg, s) {
			t.Errorf("message %q does not name %s", msg, s)
		}
	}

	// The store elsewhere: the second overlapping profile no longer
	// overlaps, nor does the first.
	if err := c.CheckStore(filepath.Join(base, "state")); err != nil {
		t.Fatalf("CheckStore with the store a sibling of every root = %v", err)
	}
	// The same store spelled with "..".
	err = c.CheckStore(filepath.Join(base, "proj", "state", "inside") + "/..")
	if !errors.As(err, &ce) || !errors.As(err, &ov) || ce.Line != 10 || ov.Store != store {
		t.Fatalf("CheckStore with the store spelled with \"..\" = %v", err)
	}
	if err := c.CheckStore(""); err != nil {
		t.Fatalf("CheckStore(\"\") = %v", err)
	}
	if err := Builtin().CheckStore(store); err != nil {
		t.Fatalf("the built-in configuration: %v", err)
	}
}

// Only the overlapping profile's root line is reported, also for a root
// inside the store and for a root written with a dotted key.
func TestCheckStoreLines(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(base, "store")
	path := filepath.Join(base, "c.toml")
	doc := `[profiles.ok]
placement = "shared"
root = "elsewhere"

[profiles]
in.placement = "exclusive"
in.root = "store/workspaces/mine"
`
	c, err := Parse(path, []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	err = c.CheckStore(store)
	var ce *Error
	var ov *rig.PersistenceOverlapError
	if !errors.As(err, &ce) || !errors.As(err, &ov) {
		t.Fatalf("CheckStore = %v, want *Error wrapping *rig.PersistenceOverlapError", err)
	}
	if ce.Line != 7 || ce.Field != "profiles.in.root" || ov.Relation != rig.OverlapStoreContains {
		t.Fatalf("Error{Line %d, Field %q}, relation %s; want line 7, profiles.in.root, %s", ce.Line, ce.Field, ov.Relation, rig.OverlapStoreContains)
	}
}
