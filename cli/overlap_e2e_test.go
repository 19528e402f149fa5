package cli_test

// End-to-end tests of the refusal of a workspace root that overlaps the
// store (rig.PersistenceOverlapError): the real binary, real directories.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type overlapShape struct {
	Error struct {
		Type       string `json:"type"`
		Kind       string `json:"kind"`
		Message    string `json:"message"`
		Profile    string `json:"profile"`
		Placement  string `json:"placement"`
		Relation   string `json:"relation"`
		Root       string `json:"root"`
		Store      string `json:"store"`
		RootGiven  string `json:"root_given"`
		StoreGiven string `json:"store_given"`
		File       string `json:"file"`
		Line       int    `json:"line"`
		Field      string `json:"field"`
		Hint       string `json:"hint"`
	} `json:"error"`
}

const overlapHint = "move the store (--store DIR / $LOOPRIG_STORE) or the root so neither contains the other"

// writeConfig writes a configuration file with one profile p of the given
// placement and root (root on line 5) and returns its path.
func writeConfig(t *testing.T, dir, placement, root string) string {
	t.Helper()
	path := filepath.Join(dir, "config.toml")
	doc := fmt.Sprintf("# test\ndefault_profile = \"p\"\n[profiles.p]\nplacement = %q\nroot = %q\n", placement, root)
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A profile whose root contains the store, is the store, or lies inside
// it: new (and every other command: it is a mistake in the file) exits 1
// with the typed JSON error naming both canonical paths and the file and
// line of root, and a message for people naming the same; a sibling root
// works.
func TestOverlapRefusedFromConfig(t *testing.T) {
	h := newHarness(t)
	base := realPath(t, filepath.Dir(h.store))
	h.store = filepath.Join(base, "proj", "store")
	proj := filepath.Join(base, "proj")
	if err := os.MkdirAll(filepath.Join(proj, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(proj, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	h.must(0, "ls") // the store exists

	cases := []struct {
		name, placement, root string
		wantRoot, rel         string
	}{
		{"root contains the store", "exclusive", proj, proj, "root_contains_store"},
		{"symlinked root with ..", "shared", filepath.Join(base, "link") + "/sub/..", proj, "root_contains_store"},
		{"root is the store", "shared", h.store, h.store, "same"},
		{"root inside the store", "exclusive", filepath.Join(h.store, "workspaces", "mine"), filepath.Join(h.store, "workspaces", "mine"), "store_contains_root"},
	}
	for _, c := range cases {
		cfg := writeConfig(t, t.TempDir(), c.placement, c.root)
		r := h.must(1, "--config", cfg, "new", "--rig", "p", "--json")
		e := decode[overlapShape](t, r.stdout).Error
		if e.Type != "PersistenceOverlapError" || e.Kind != "persistence_overlap" || e.Profile != "p" ||
			e.Placement != c.placement || e.Relation != c.rel || e.Root != c.wantRoot || e.Store != h.store ||
			e.RootGiven != filepath.Clean(c.root) || e.File != cfg || e.Line != 5 || e.Field != "profiles.p.root" || !strings.HasPrefix(e.Hint, overlapHint) {
			t.Errorf("%s: new --json:\n%s", c.name, r.stdout)
		}
		r = h.must(1, "--config", cfg, "new", "--rig", "p")
		for _, s := range []string{cfg + ":5:", "profiles.p.root", c.wantRoot, h.store, "hint: " + overlapHint} {
			if !strings.Contains(r.stderr, s) {
				t.Errorf("%s: new says\n%s\nwithout %q", c.name, r.stderr, s)
			}
		}
		if r.stdout != "" {
			t.Errorf("%s: new printed %q on stdout", c.name, r.stdout)
		}
		if r := h.must(1, "--config", cfg, "ls", "--json"); decode[overlapShape](t, r.stdout).Error.Kind != "persistence_overlap" {
			t.Errorf("%s: ls --json:\n%s", c.name, r.stdout)
		}
	}
	if rows := h.ls(); len(rows) != 0 {
		t.Fatalf("sessions after the refusals: %+v", rows)
	}

	// A sibling of the store is fine.
	sibling := filepath.Join(base, "sibling")
	if err := os.Mkdir(sibling, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, t.TempDir(), "exclusive", sibling)
	r := h.must(0, "--config", cfg, "new", "--json")
	if ws := decode[struct {
		Workspace string `json:"workspace"`
	}](t, r.stdout).Workspace; ws != sibling {
		t.Fatalf("new with a sibling root: workspace %q, want %q", ws, sibling)
	}
}

// --placement/--root overrides are refused by rig.Define itself: new,
// restore and run of an existing session with a root holding the store.
func TestOverlapRefusedFromFlags(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	parent := realPath(t, filepath.Dir(h.store))
	store := realPath(t, h.store)
	for _, args := range [][]string{
		{"new", "--placement", "shared", "--root", parent, "--json"},
		{"restore", id, "--placement", "exclusive", "--root", store, "--json"},
	} {
		r := h.must(1, args...)
		e := decode[overlapShape](t, r.stdout).Error
		if e.Kind != "persistence_overlap" || e.Root == "" || e.Store != store || e.File != "" || e.Line != 0 || !strings.HasPrefix(e.Hint, overlapHint) {
			t.Errorf("%v:\n%s", args, r.stdout)
		}
	}
	r := h.must(125, "run", id, "--placement", "shared", "--root", parent, "--", "rm", "-rf", h.store)
	for _, s := range []string{parent, store, "hint: " + overlapHint} {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("run says\n%s\nwithout %q", r.stderr, s)
		}
	}
	if _, err := os.Stat(filepath.Join(h.store, "FORMAT")); err != nil {
		t.Fatalf("the store after the refused run: %v", err)
	}
	if row := h.row(id); row.State != "idle" || row.Epoch != 1 {
		t.Fatalf("the session after the refusals: %+v", row)
	}
}

// On a NATS store the local directory (workspaces, tui.log) is what a root
// must not overlap: from the file (with its line) and from --root.
func TestOverlapRefusedNATS(t *testing.T) {
	h := newNATSHarness(t)
	h.must(0, "ls") // makes the local directory
	state := filepath.Join(h.home, "state")
	cfg := writeConfig(t, t.TempDir(), "shared", state)
	r := h.must(1, "--config", cfg, "new", "--json")
	e := decode[overlapShape](t, r.stdout).Error
	local := filepath.Join(realPath(t, state), "looprig", "nats",
		strings.NewReplacer(":", "_", "/", "_").Replace(strings.TrimPrefix(h.store, "nats://")))
	if e.Kind != "persistence_overlap" || e.Store != local || e.Line != 5 || e.Relation != "root_contains_store" {
		t.Fatalf("new on a NATS store with a root holding %s:\n%s", local, r.stdout)
	}
	r = h.must(1, "new", "--placement", "exclusive", "--root", filepath.Join(local, "workspaces"), "--json")
	if e := decode[overlapShape](t, r.stdout).Error; e.Kind != "persistence_overlap" || e.Store != local || e.Relation != "store_contains_root" {
		t.Fatalf("new --root inside the local directory of a NATS store:\n%s", r.stdout)
	}
	h.must(0, "new", "--placement", "shared", "--root", t.TempDir())
}
