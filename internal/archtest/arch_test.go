// Package archtest pins the direction of imports between looprig's
// packages (docs/ARCHITECTURE.md, section "Packages"): tui → rig →
// rig/{hub,journal,event} → rig/storage; fsstore → rig/storage only;
// nothing under rig/ imports tui, fsstore, host or a charm package; host
// (the per-session server) imports the runtime only. It also pins
// what the presenters (cli, tui) may use of the runtime's internals
// (TestPresentersUseRig), and that following a session and folding its
// events live in rig alone (TestFollowingLivesInRig).
package archtest

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "looprig"

// packages returns every package directory of the module, relative to its
// root, with the imports of its non-test files.
func packages(t *testing.T) map[string][]string {
	t.Helper()
	root := moduleRoot(t)
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
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

// moduleRoot returns the absolute directory of the module.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	return root
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
				if isLocal && strings.HasPrefix(local, "rig/storage/") {
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
			// explain classifies the runtime's errors; it is no runtime
			// itself and knows nothing of a presenter.
			if dir == "rig/explain" && !std && !slices.Contains([]string{"rig", "rig/hub", "rig/storage", "rig/journal", "rig/engine"}, local) {
				t.Errorf("%s imports %s: rig/explain imports rig, rig/hub, rig/storage, rig/journal and rig/engine only", dir, imp)
			}
			// host serves one session on a socket: it is the runtime's
			// edge, not a presenter, and knows no backend and no UI.
			if dir == "host" && !std && !slices.Contains([]string{"rig", "rig/hub", "rig/event", "rig/journal", "rig/storage", "rig/explain", "internal/peercred"}, local) &&
				imp != "golang.org/x/sys/unix" {
				t.Errorf("%s imports %s: host imports rig, rig/hub, rig/event, rig/journal, rig/storage, rig/explain, internal/peercred and golang.org/x/sys/unix only", dir, imp)
			}
			if isLocal && under(local, "host") && under(dir, "rig") {
				t.Errorf("%s imports %s: nothing under rig/ imports host", dir, imp)
			}
			// procgroup finds and signals processes: the standard library and
			// the system calls only.
			if dir == "rig/procgroup" && !std && imp != "golang.org/x/sys/unix" {
				t.Errorf("%s imports %s: rig/procgroup imports the standard library and golang.org/x/sys/unix only", dir, imp)
			}
			if dir == "rig/journal" && !std && imp != module+"/rig/event" && imp != module+"/rig/storage" {
				t.Errorf("%s imports %s: rig/journal imports the standard library, rig/event and rig/storage only", dir, imp)
			}
		}
	}
}

// presenters are the packages that show sessions to people. They reach the
// runtime through rig's operations only.
var presenters = []string{"cli", "tui"}

// internals are what a presenter must not touch, per runtime package: the
// names the runtime gives its ledgers, keys and leases (rig owns that
// grammar), and the journal's readers and writer (rig.ReadRecords,
// rig.ReadEvents, rig.FollowRecords and rig.BreakLease wrap them).
var internals = map[string][]string{
	module + "/rig/storage": {"SessionName", "CatalogKey", "RootLeaseName"},
	module + "/rig/journal": {"NewReplayer", "NewEventReplayer", "Open"},
}

// contractTypes are interfaces every storage.Store implements: asserting
// a store to one of them is dead code that hides the optional-store era's
// fallbacks.
var contractTypes = map[string][]string{
	module + "/rig/storage": {"Breaker", "LeaseProber", "ChildLister"},
}

// TestPresentersUseRig pins the rule that the presenters (cli, tui) call
// rig, not the runtime's internals: in their
// non-test files they do not build ledger, key or lease names
// (storage.SessionName, storage.CatalogKey, storage.RootLeaseName), open
// journal readers or writers (journal.NewReplayer,
// journal.NewEventReplayer, journal.Open), nor type-assert a value to an
// interface that is part of the store contract (storage.Breaker,
// storage.LeaseProber, storage.ChildLister). Why: each of those is a
// decision the runtime owns — how a session is named in the store, that a
// break fences the journal before releasing the lease, what a store can
// do — and every presenter that makes it itself can make it differently
// (the CLI once fenced the journal after a break and the TUI did not). rig
// offers the operations instead (BreakLease, ProbeSession, JournalTip,
// SessionExists, ReadRecords, ReadEvents, FollowRecords, ProfileFor,
// SessionOfLease), and explain classifies the runtime's errors. There are
// no exceptions. Tests may still use the internals to set up and inspect
// stores.
func TestPresentersUseRig(t *testing.T) {
	root := moduleRoot(t)
	for _, pkg := range presenters {
		found, lines := internalUses(t, filepath.Join(root, pkg))
		for _, use := range found {
			t.Errorf("%s/%s: a presenter uses the runtime's internals; call rig instead (see TestPresentersUseRig)", pkg, lines[use])
		}
	}
}

// internalUses parses the non-test Go files of dir and returns each
// forbidden use once, as "file.go: what", sorted, with the first line of
// each for messages.
func internalUses(t *testing.T, dir string) ([]string, map[string]string) {
	t.Helper()
	fset := token.NewFileSet()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	lines := map[string]string{}
	note := func(file string, pos token.Pos, what string) {
		use := file + ": " + what
		if _, ok := lines[use]; !ok {
			found = append(found, use)
			lines[use] = fmt.Sprintf("%s:%d: %s", file, fset.Position(pos).Line, what)
		}
	}
	parsed := 0
	for _, ent := range ents {
		name := ent.Name()
		if ent.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		parsed++
		// The local names of the runtime packages in this file.
		local := map[string]string{} // local name -> import path
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if _, ok := internals[path]; !ok {
				if _, ok := contractTypes[path]; !ok {
					continue
				}
			}
			n := path[strings.LastIndexByte(path, '/')+1:]
			if imp.Name != nil {
				n = imp.Name.Name
			}
			if n == "." {
				note(name, imp.Pos(), "dot import of "+path)
				continue
			}
			local[n] = path
		}
		// sel returns "pkg.Name" when e is a selector on one of those
		// packages naming one of names.
		sel := func(e ast.Expr, names map[string][]string) (string, bool) {
			se, ok := e.(*ast.SelectorExpr)
			if !ok {
				return "", false
			}
			id, ok := se.X.(*ast.Ident)
			if !ok {
				return "", false
			}
			path, ok := local[id.Name]
			if !ok || !slices.Contains(names[path], se.Sel.Name) {
				return "", false
			}
			return path[strings.LastIndexByte(path, '/')+1:] + "." + se.Sel.Name, true
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if what, ok := sel(n, internals); ok {
					note(name, n.Pos(), what)
				}
			case *ast.TypeAssertExpr:
				if what, ok := sel(n.Type, contractTypes); ok {
					note(name, n.Pos(), "type assertion to "+what)
				}
			case *ast.TypeSwitchStmt:
				for _, c := range n.Body.List {
					for _, e := range c.(*ast.CaseClause).List {
						if what, ok := sel(e, contractTypes); ok {
							note(name, e.Pos(), "type switch case "+what)
						}
					}
				}
			}
			return true
		})
	}
	if parsed == 0 {
		t.Fatalf("no Go files in %s: the scan is broken", dir)
	}
	slices.Sort(found)
	return found, lines
}

// followers are the packages outside rig that show or serve a session's
// events.
var followers = []string{"cli", "tui", "host"}

// TestFollowingLivesInRig pins the rule of docs/ARCHITECTURE.md,
// "Following a session": every presenter follows a session with
// rig.Follow, which owns the merge of a journal and a live stream, the
// recovery of a stream that fell behind, and delivering each event once;
// and folds events into a session's state with rig.State and output with
// rig.Transcript. In their non-test files, cli, tui and host therefore do
// not import rig/hub (a hub subscription needs its Filter), do not
// subscribe to a host's stream themselves (Client.Subscribe, host.Stream,
// host.StreamLostError: rig.Follow reads the host as a rig.Feed), do not
// summarize turn ends (rig.TurnEndOf is State's), and keep no event other
// than envelopes (the messages that carry them) and drift changes in
// their types: holding a GateOpened or a map of turn ends is folding.
// Copies of those rules disagreed before: a TUI opened during fast output
// showed one line missing and one twice, and `restore --hold` resubscribed
// without replaying what it missed.
func TestFollowingLivesInRig(t *testing.T) {
	root := moduleRoot(t)
	for _, pkg := range followers {
		dir := filepath.Join(root, pkg)
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		parsed := 0
		for _, ent := range ents {
			name := ent.Name()
			if ent.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			parsed++
			for _, msg := range followingViolations(pkg, f) {
				t.Errorf("%s/%s:%d: %s (see TestFollowingLivesInRig)", pkg, name, fset.Position(msg.pos).Line, msg.what)
			}
		}
		if parsed == 0 {
			t.Fatalf("no Go files in %s: the scan is broken", pkg)
		}
	}
}

type violation struct {
	pos  token.Pos
	what string
}

// followingViolations returns what file f of package pkg does that
// TestFollowingLivesInRig forbids.
func followingViolations(pkg string, f *ast.File) []violation {
	var out []violation
	local := map[string]string{} // local name -> import path, of this module's packages
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if path == module+"/rig/hub" {
			out = append(out, violation{imp.Pos(), "imports rig/hub: follow with rig.Follow"})
		}
		n := path[strings.LastIndexByte(path, '/')+1:]
		if imp.Name != nil {
			n = imp.Name.Name
		}
		local[n] = path
	}
	is := func(e ast.Expr, path, name string) bool {
		se, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		id, ok := se.X.(*ast.Ident)
		return ok && local[id.Name] == path && se.Sel.Name == name
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			switch {
			case pkg != "host" && (is(n, module+"/host", "Stream") || is(n, module+"/host", "StreamLostError")):
				out = append(out, violation{n.Pos(), "uses host." + n.Sel.Name + ": follow the host with rig.Follow"})
			case is(n, module+"/rig", "TurnEndOf"):
				out = append(out, violation{n.Pos(), "summarizes turn ends: fold with rig.State"})
			}
		case *ast.CallExpr:
			if se, ok := n.Fun.(*ast.SelectorExpr); ok && se.Sel.Name == "Subscribe" && pkg != "host" {
				out = append(out, violation{n.Pos(), "calls Subscribe: follow with rig.Follow"})
			}
		case *ast.StructType:
			if pkg == "host" {
				return true // a server: its session holds the state
			}
			for _, field := range n.Fields.List {
				ast.Inspect(field.Type, func(m ast.Node) bool {
					se, ok := m.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					if id, ok := se.X.(*ast.Ident); ok && local[id.Name] == module+"/rig/event" && se.Sel.Name != "Envelope" && se.Sel.Name != "Change" {
						out = append(out, violation{field.Pos(), "keeps an event." + se.Sel.Name + " in a type: fold with rig.State"})
					}
					return true
				})
			}
		}
		return true
	})
	return out
}
