// Package archtest pins the direction of imports between looprig's
// packages (DESIGN.md section 2): tui → rig → rig/{hub,journal,event} →
// rig/storage; fsstore → rig/storage only; nothing under rig/ imports tui,
// fsstore or a charm package.
package archtest

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const module = "looprig"

// packages returns every package directory of the module, relative to its
// root, with the imports of its non-test files.
func packages(t *testing.T) map[string][]string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	out := map[string][]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(root, path)
		out[filepath.ToSlash(rel)] = pkg.Imports
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

func TestImportDirection(t *testing.T) {
	pkgs := packages(t)
	if len(pkgs) < 8 {
		t.Fatalf("found only %d packages; the walk is broken", len(pkgs))
	}
	for dir, imports := range pkgs {
		for _, imp := range imports {
			local := strings.TrimPrefix(imp, module+"/")
			isLocal := local != imp
			switch {
			case under(dir, "rig"):
				if isLocal && (under(local, "tui") || under(local, "fsstore") || under(local, "themes")) {
					t.Errorf("%s imports %s: nothing under rig/ may import tui, themes or fsstore", dir, imp)
				}
				if strings.HasPrefix(imp, "github.com/charmbracelet/") {
					t.Errorf("%s imports %s: nothing under rig/ may import a charm package", dir, imp)
				}
			case under(dir, "fsstore"):
				if isLocal && !under(local, "rig/storage") && !under(local, "fsstore") {
					t.Errorf("%s imports %s: fsstore may import only rig/storage", dir, imp)
				}
				if isLocal && under(local, "rig/storage/") {
					t.Errorf("%s imports %s: fsstore may import only rig/storage itself", dir, imp)
				}
			}
			if under(dir, "rig/storage") && isLocal && !under(local, "rig/storage") {
				t.Errorf("%s imports %s: rig/storage is a leaf", dir, imp)
			}
			if (under(dir, "rig/event") || under(dir, "rig/journal") || under(dir, "rig/hub")) && isLocal &&
				!under(local, "rig/storage") && !under(local, "rig/event") && !under(local, "rig/journal") {
				t.Errorf("%s imports %s: the journal layer imports only event and storage", dir, imp)
			}
			// The codecs are the durable format: the standard library only
			// (and the event codec for the journal), no third-party code
			// that could change an encoding under them.
			std := !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") && !isLocal
			if dir == "rig/event" && !std {
				t.Errorf("%s imports %s: rig/event imports the standard library only", dir, imp)
			}
			if dir == "rig/journal" && !std && imp != module+"/rig/event" && imp != module+"/rig/storage" {
				t.Errorf("%s imports %s: rig/journal imports the standard library, rig/event and rig/storage only", dir, imp)
			}
		}
	}
}
