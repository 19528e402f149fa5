package cli_test

// End-to-end tests of the refusal of a workspace root that is not a
// project directory (rig.UnsafeRootError): the real binary.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const unsafeRootHint = "cd into a project directory first (or give --root ~/src/myproject), or use --scratch for a private directory in the store"

// new --root / (and $HOME itself) exits 1 saying why, with the hint; the
// JSON error is typed; nothing is created.
func TestNewUnsafeRootRefused(t *testing.T) {
	h := newHarness(t)
	if err := os.MkdirAll(h.home, 0o700); err != nil {
		t.Fatal(err)
	}
	r := h.must(1, "new", "--placement", "exclusive", "--root", "/")
	for _, want := range []string{"workspace root / is the filesystem root", "exclusive placement refused", unsafeRootHint} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("new --root /: stderr lacks %q:\n%s", want, r.stderr)
		}
	}

	home := realPath(t, h.home)
	for _, c := range []struct{ placement, root, reason, canonical string }{
		{"exclusive", "/", "filesystem_root", "/"},
		{"shared", h.home, "home", home},
		{"exclusive", h.home + "/.", "home", home},
	} {
		r := h.must(1, "new", "--placement", c.placement, "--root", c.root, "--json")
		var got struct {
			Error struct {
				Type      string `json:"type"`
				Kind      string `json:"kind"`
				Reason    string `json:"reason"`
				Root      string `json:"root"`
				RootGiven string `json:"root_given"`
				Placement string `json:"placement"`
				Hint      string `json:"hint"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("new --root %s --json: %v:\n%s", c.root, err, r.stdout)
		}
		e := got.Error
		if e.Type != "UnsafeRootError" || e.Kind != "unsafe_root" || e.Reason != c.reason || e.Root != c.canonical ||
			e.RootGiven != filepath.Clean(c.root) || e.Placement != c.placement || e.Hint != unsafeRootHint {
			t.Errorf("new --placement %s --root %s --json:\n%s", c.placement, c.root, r.stdout)
		}
	}
	if rows := decode[[]sessionRow](t, h.must(0, "ls", "--json").stdout); len(rows) != 0 {
		t.Errorf("refused creations left sessions: %+v", rows)
	}
	if entries, _ := os.ReadDir(h.home); len(entries) != 0 {
		t.Errorf("refused creation wrote into $HOME: %v", entries)
	}
}
