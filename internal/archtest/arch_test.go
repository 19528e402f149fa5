// Package archtest pins the shape of looprig's packages
// (docs/ARCHITECTURE.md, section "Packages"). Each rule is stated once:
//
//   - the import rules, one table (importRules): who may import what,
//     checked on the imports of every non-test Go file of every package
//     and subpackage, whatever its build constraints (every GOOS's files,
//     tagged files too: the files are parsed, not built);
//   - what the presenters (cli, tui) may use of the runtime's internals
//     (TestPresentersUseRig);
//   - that following a session and folding its events live in rig alone
//     (TestFollowingLivesInRig).
//
// TestRulesFailWhenBroken breaks each rule once and wants that rule, and
// no other, to report it.
package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "looprig"

// goFile is one parsed non-test Go file of the module.
type goFile struct {
	pkg  string // its package directory, relative to the module root ("" for the root)
	name string // its file name
	fset *token.FileSet
	f    *ast.File
}

// moduleFiles parses every non-test Go file of the module, build
// constraints ignored, skipping testdata, hidden directories and nested
// modules (internal/termquiet is a module of its own). mode is a parser
// mode (parser.ImportsOnly for the imports).
func moduleFiles(t *testing.T, mode parser.Mode) []goFile {
	t.Helper()
	root := moduleRoot(t)
	var out []goFile
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); path != root && err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, mode|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		if rel == "." {
			rel = ""
		}
		out = append(out, goFile{pkg: filepath.ToSlash(rel), name: name, fset: fset, f: f})
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

// importRule is one rule of who may import what. Paths name this module's
// packages relative to the module ("rig/event") and others in full
// ("golang.org/x/sys/unix"); a path ending in "/..." is that package and
// every package under it.
type importRule struct {
	name string
	// from are the packages the rule governs (with "/...": and their
	// subpackages), except those in except.
	from   []string
	except []string
	// only, when set, are the only packages they may import besides the
	// standard library (stdOnly: the standard library alone).
	only    []string
	stdOnly bool
	// deny are packages they may not import.
	deny []string
	// why says why, in failures.
	why string
	// breaks is an import that breaks the rule ({importer, imported}, both
	// as in an import statement's path, the importer relative to the
	// module): TestRulesFailWhenBroken wants this rule, and no other, to
	// refuse it.
	breaks [2]string
}

// importRules are every rule on imports, each once. The standard library
// is always allowed.
var importRules = []importRule{
	{name: "rig-below", from: []string{"rig/..."},
		deny:   []string{"cli/...", "tui/...", "host/...", "config/...", "themes/...", "fsstore/...", "natsstore/...", "github.com/charmbracelet/..."},
		why:    "the runtime knows no presenter, host, configuration file, theme, backend or UI library",
		breaks: [2]string{"rig", "looprig/host"}},
	{name: "fault-leaf", from: []string{"rig/fault/..."}, stdOnly: true,
		why:    "rig/fault is the vocabulary every error explains itself in: every package that defines an error imports it, so it imports nothing of looprig's",
		breaks: [2]string{"rig/fault", "looprig/rig/storage"}},
	{name: "storage-leaf", from: []string{"rig/storage/..."}, only: []string{"rig/storage/...", "rig/fault"},
		why:    "rig/storage is the contract every backend implements: a leaf (rig/fault: its errors explain themselves)",
		breaks: [2]string{"rig/storage/memstore", "looprig/rig/event"}},
	{name: "event-std", from: []string{"rig/event/..."}, stdOnly: true,
		why:    "the event codec is the durable format: no code that could change an encoding under it",
		breaks: [2]string{"rig/event", "github.com/google/uuid"}},
	{name: "journal", from: []string{"rig/journal/..."}, only: []string{"rig/event", "rig/storage", "rig/fault"},
		why:    "the journal layer imports only the event codec and storage (and rig/fault: its errors explain themselves)",
		breaks: [2]string{"rig/journal", "looprig/rig/hub"}},
	{name: "hub", from: []string{"rig/hub/..."}, only: []string{"rig/event", "rig/journal", "rig/storage", "rig/fault"},
		why:    "the hub sits on the journal layer",
		breaks: [2]string{"rig/hub", "looprig/rig"}},
	{name: "explain", from: []string{"rig/explain/..."}, only: []string{"rig/fault", "rig/event", "rig/storage"},
		why:    "explain finds the explanation each error carries (rig/fault) and reads its typed facts; it knows no error type of the runtime's, nor a presenter (rig/event, rig/storage: a drift's changes and a lease's holder are typed facts)",
		breaks: [2]string{"rig/explain", "looprig/rig"}},
	{name: "procgroup", from: []string{"rig/procgroup/..."}, only: []string{"golang.org/x/sys/unix"},
		why:    "procgroup finds and signals processes: the standard library and the system calls only",
		breaks: [2]string{"rig/procgroup", "looprig/rig/storage"}},
	{name: "engine", from: []string{"rig/engine/..."},
		only: []string{"golang.org/x/sys/unix", "github.com/creack/pty", "github.com/google/uuid", "mvdan.cc/sh/v3/syntax", "internal/textsafe", "internal/peercred", "rig/fault"},
		why: "engines run turns: the system, a pty, uuids (agent conversation ids), the shell parser that splits an agent's Bash command " +
			"into the simple commands its allow rules must each match (bash_allow.go), and looprig's leaves textsafe, peercred and rig/fault",
		breaks: [2]string{"rig/engine", "looprig/rig/event"}},
	{name: "fsstore", from: []string{"fsstore/..."}, only: []string{"rig/storage", "fsstore/...", "golang.org/x/sys/unix", "github.com/gofrs/flock", "internal/procstart"},
		why:    "a backend implements rig/storage: it imports that package alone of the runtime (and the leaf internal/procstart: a holder's start)",
		breaks: [2]string{"fsstore", "looprig/rig"}},
	{name: "natsstore", from: []string{"natsstore/..."}, only: []string{"rig/storage", "natsstore/...", "github.com/nats-io/...", "internal/procstart"},
		why:    "a backend implements rig/storage: it imports that package alone of the runtime (and the leaf internal/procstart: a holder's start)",
		breaks: [2]string{"natsstore", "looprig/rig"}},
	{name: "host", from: []string{"host/..."},
		only: []string{"host/...", "rig", "rig/event", "rig/journal", "rig/storage", "rig/explain", "rig/fault", "internal/peercred", "internal/procstart", "golang.org/x/sys/unix"},
		why: "host serves one session on a socket: the runtime's edge, not a presenter; it knows no backend and no UI, " +
			"and follows with rig.Follow, not rig/hub",
		breaks: [2]string{"host", "looprig/rig/hub"}},
	{name: "presenters-follow-with-rig", from: []string{"cli/...", "tui/..."}, deny: []string{"rig/hub/..."},
		why:    "a presenter follows a session with rig.Follow (see TestFollowingLivesInRig); a hub subscription needs its filter",
		breaks: [2]string{"tui", "looprig/rig/hub"}},
	{name: "presenters-read-with-rig", from: []string{"cli/...", "tui/..."}, deny: []string{"rig/journal/..."},
		why:    "a presenter reads a session's records through rig (rig.ReadRecords, rig.FollowRecords: rig.Record), never the journal's own types",
		breaks: [2]string{"cli", "looprig/rig/journal"}},
	{name: "tui-no-backend", from: []string{"tui/..."}, deny: []string{"cli/...", "fsstore/...", "natsstore/..."},
		why:    "the CLI chooses the backend and hands the TUI a store; the TUI is below the CLI",
		breaks: [2]string{"tui", "looprig/fsstore"}},
	{name: "config", from: []string{"config/..."},
		only:   []string{"rig", "rig/checkpoint", "rig/engine", "internal/...", "github.com/BurntSushi/toml"},
		why:    "the configuration file defines rigs: it knows the runtime's options, no presenter, host, theme or backend",
		breaks: [2]string{"config", "looprig/themes"}},
	{name: "themes", from: []string{"themes/..."}, only: []string{"internal/...", "github.com/BurntSushi/toml"},
		why:    "themes are colours read from files: looprig's leaves only",
		breaks: [2]string{"themes", "looprig/rig"}},
	{name: "search", from: []string{"search/..."},
		only: []string{"rig", "rig/event", "rig/storage", "internal/termrender", "github.com/google/uuid", "go.etcd.io/bbolt/...", "github.com/klauspost/compress/zstd"},
		why: "the search index is derived from the journals, read with rig's public read API (rig.ReadRecords, rig.Transcript): " +
			"no journal internals, backend, presenter or UI; bbolt holds it, zstd its blocks",
		breaks: [2]string{"search", "looprig/rig/journal"}},
	{name: "gitwt-std", from: []string{"internal/gitwt/..."}, stdOnly: true,
		why:    "a session's worktree is the user's git's work: gitwt runs git (os/exec) and parses its output with the standard library, nothing else",
		breaks: [2]string{"internal/gitwt", "github.com/google/uuid"}},
	{name: "internal-leaves", from: []string{"internal/..."},
		// The benchmark suite is no helper: its one non-test file is the
		// search corpus, shared with internal/benchmarks/engines (a module
		// of its own, which cannot import a test file).
		except: []string{"internal/benchmarks"},
		deny:   []string{"cli/...", "tui/...", "host/...", "rig/...", "config/...", "themes/...", "fsstore/...", "natsstore/..."},
		why:    "the internal helpers are leaves (their tests, which may, are not checked)",
		breaks: [2]string{"internal/textsafe", "looprig/rig/event"}},
}

// matches reports whether path (module-relative for this module's
// packages) is one of pats.
func matches(path string, pats []string) bool {
	for _, p := range pats {
		if dir, ok := strings.CutSuffix(p, "/..."); ok {
			if under(path, dir) {
				return true
			}
		} else if path == p {
			return true
		}
	}
	return false
}

// refuses returns why r refuses the import imp (its path as written) by
// package pkg (module-relative), "" when it does not.
func (r importRule) refuses(pkg, imp string) string {
	if !matches(pkg, r.from) || matches(pkg, r.except) {
		return ""
	}
	local, isLocal := strings.CutPrefix(imp, module+"/")
	if imp == module {
		local, isLocal = "", true
	}
	std := !isLocal && !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".")
	switch {
	case std:
		return ""
	case r.stdOnly:
		return "imports the standard library only"
	case r.only != nil && !matches(local, r.only) && (isLocal || !matches(imp, r.only)):
		return "imports " + strings.Join(r.only, ", ") + " only (and the standard library)"
	case matches(local, r.deny) && isLocal || !isLocal && matches(imp, r.deny):
		return "may not import " + imp
	}
	return ""
}

// TestImportRules checks every import of every non-test file of the
// module, whatever its GOOS or build tags, against every rule.
func TestImportRules(t *testing.T) {
	files := moduleFiles(t, parser.ImportsOnly)
	pkgs := map[string]bool{}
	for _, gf := range files {
		pkgs[gf.pkg] = true
	}
	// The walk sees the packages built for other systems and tags too.
	for _, want := range []string{"rig", "rig/storage/memstore", "cli", "tui", "host", "fsstore/internal/lease", "natsstore/embedded", "internal/peercred"} {
		if !pkgs[want] {
			t.Fatalf("the walk found no package %s: it is broken", want)
		}
	}
	for _, file := range []string{"internal/peercred/peercred_bsd.go", "rig/procgroup/proc_other.go", "cli/testhooks_e2e.go"} {
		if !slices.ContainsFunc(files, func(gf goFile) bool { return gf.pkg+"/"+gf.name == file }) {
			t.Fatalf("the walk skipped %s (a file of another GOOS or tag): it is broken", file)
		}
	}
	for _, r := range importRules {
		for _, gf := range files {
			for _, is := range gf.f.Imports {
				imp, _ := strconv.Unquote(is.Path.Value)
				if msg := r.refuses(gf.pkg, imp); msg != "" {
					t.Errorf("%s/%s:%d: %s imports %s: rule %s: %s %s (%s)", gf.pkg, gf.name, gf.fset.Position(is.Pos()).Line,
						gf.pkg, imp, r.name, strings.Join(r.from, ", "), msg, r.why)
				}
			}
		}
	}
}

// TestRulesFailWhenBroken breaks each import rule once (its breaks) and
// wants that rule, and no other, to refuse it: every rule is stated once,
// and bites.
func TestRulesFailWhenBroken(t *testing.T) {
	names := map[string]bool{}
	for _, r := range importRules {
		if names[r.name] {
			t.Errorf("two rules named %s", r.name)
		}
		names[r.name] = true
		var by []string
		for _, o := range importRules {
			if o.refuses(r.breaks[0], r.breaks[1]) != "" {
				by = append(by, o.name)
			}
		}
		if !slices.Equal(by, []string{r.name}) {
			t.Errorf("%s importing %s is refused by %v, want by rule %s alone", r.breaks[0], r.breaks[1], by, r.name)
		}
		// A subpackage of what the rule governs is governed too.
		sub := r.breaks[0] + "/sub"
		if r.refuses(sub, r.breaks[1]) == "" {
			t.Errorf("rule %s does not govern %s, a subpackage of %s", r.name, sub, r.breaks[0])
		}
	}
	// Each AST rule bites on a file that breaks it once.
	for _, c := range astBreaks {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "broken.go", c.src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []violation
		switch c.rule {
		case "presenters-use-rig":
			got = internalUses(f)
		case "following-lives-in-rig":
			got = followingViolations(c.pkg, f)
		default:
			t.Fatalf("%s: unknown rule %s", c.name, c.rule)
		}
		if len(got) != 1 || !strings.Contains(got[0].what, c.want) {
			t.Errorf("%s (%s in %s): found %v, want one violation saying %q", c.name, c.rule, c.pkg, got, c.want)
		}
	}
}

// astBreaks are files that break the rules of TestPresentersUseRig and
// TestFollowingLivesInRig once each.
var astBreaks = []struct {
	name, rule, pkg, src, want string
}{
	{"SessionName", "presenters-use-rig", "cli", `package cli
import "looprig/rig/storage"
var _ = storage.SessionName("x")`, "storage.SessionName"},
	{"renamed journal", "presenters-use-rig", "tui", `package tui
import j "looprig/rig/journal"
var _ = j.NewReplayer`, "journal.NewReplayer"},
	{"dot import", "presenters-use-rig", "tui", `package tui
import . "looprig/rig/journal"`, "dot import"},
	{"contract assertion", "presenters-use-rig", "cli", `package cli
import "looprig/rig/storage"
func f(s any) { _, _ = s.(storage.Breaker) }`, "type assertion to storage.Breaker"},
	{"contract type switch", "presenters-use-rig", "cli", `package cli
import "looprig/rig/storage"
func f(s any) { switch s.(type) { case storage.ChildLister: } }`, "type switch case storage.ChildLister"},
	{"host stream", "following-lives-in-rig", "tui", `package tui
import "looprig/host"
var _ host.Stream`, "host.Stream"},
	{"turn ends", "following-lives-in-rig", "cli", `package cli
import "looprig/rig"
var _ = rig.TurnEndOf`, "summarizes turn ends"},
	{"subscribe", "following-lives-in-rig", "cli", `package cli
func f(c interface{ Subscribe() }) { c.Subscribe() }`, "calls Subscribe"},
	{"event in a type", "following-lives-in-rig", "tui", `package tui
import "looprig/rig/event"
type m struct{ g event.GateOpened }`, "keeps an event.GateOpened"},
}

// filesOf returns the parsed non-test files of the packages pkgs and their
// subpackages.
func filesOf(t *testing.T, pkgs []string) []goFile {
	t.Helper()
	var out []goFile
	for _, gf := range moduleFiles(t, 0) {
		if matches(gf.pkg, pkgs) {
			out = append(out, gf)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no Go files in %v: the scan is broken", pkgs)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pkg+"/"+out[i].name < out[j].pkg+"/"+out[j].name })
	return out
}

// presenters are the packages that show sessions to people. They reach the
// runtime through rig's operations only.
var presenters = []string{"cli/...", "tui/..."}

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
// SessionExists, ReadRecords, ReadEvents, FollowRecords, ProfileFor),
// and the runtime's errors explain themselves (rig/fault, rig/explain).
// There are no exceptions. Tests may still use the internals to set up and inspect
// stores.
func TestPresentersUseRig(t *testing.T) {
	for _, gf := range filesOf(t, presenters) {
		for _, v := range internalUses(gf.f) {
			t.Errorf("%s/%s:%d: %s: a presenter uses the runtime's internals; call rig instead (see TestPresentersUseRig)",
				gf.pkg, gf.name, gf.fset.Position(v.pos).Line, v.what)
		}
	}
}

// internalUses returns each forbidden use of f once (the first of each).
func internalUses(f *ast.File) []violation {
	var found []violation
	seen := map[string]bool{}
	note := func(pos token.Pos, what string) {
		if !seen[what] {
			seen[what] = true
			found = append(found, violation{pos, what})
		}
	}
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
			note(imp.Pos(), "dot import of "+path)
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
				note(n.Pos(), what)
			}
		case *ast.TypeAssertExpr:
			if what, ok := sel(n.Type, contractTypes); ok {
				note(n.Pos(), "type assertion to "+what)
			}
		case *ast.TypeSwitchStmt:
			for _, c := range n.Body.List {
				for _, e := range c.(*ast.CaseClause).List {
					if what, ok := sel(e, contractTypes); ok {
						note(e.Pos(), "type switch case "+what)
					}
				}
			}
		}
		return true
	})
	return found
}

// followers are the packages outside rig that show or serve a session's
// events.
var followers = []string{"cli/...", "tui/...", "host/..."}

// TestFollowingLivesInRig pins the rule of docs/ARCHITECTURE.md,
// "Following a session": every presenter follows a session with
// rig.Follow, which owns the merge of a journal and a live stream, the
// recovery of a stream that fell behind, and delivering each event once;
// and folds events into a session's state with rig.State and output with
// rig.Transcript. In their non-test files, cli, tui and host (and their
// subpackages) therefore do not import rig/hub (an import rule: host's,
// and presenters-follow-with-rig), do not
// subscribe to a host's stream themselves (Client.Subscribe, host.Stream,
// host.StreamLostError: rig.Follow reads the host as a rig.Feed), do not
// summarize turn ends (rig.TurnEndOf is State's), and keep no event other
// than envelopes (the messages that carry them) and drift changes in
// their types: holding a GateOpened or a map of turn ends is folding.
// Copies of those rules disagreed before: a TUI opened during fast output
// showed one line missing and one twice, and `restore --hold` resubscribed
// without replaying what it missed.
func TestFollowingLivesInRig(t *testing.T) {
	for _, gf := range filesOf(t, followers) {
		for _, v := range followingViolations(gf.pkg, gf.f) {
			t.Errorf("%s/%s:%d: %s (see TestFollowingLivesInRig)", gf.pkg, gf.name, gf.fset.Position(v.pos).Line, v.what)
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
			case !under(pkg, "host") && (is(n, module+"/host", "Stream") || is(n, module+"/host", "StreamLostError")):
				out = append(out, violation{n.Pos(), "uses host." + n.Sel.Name + ": follow the host with rig.Follow"})
			case is(n, module+"/rig", "TurnEndOf"):
				out = append(out, violation{n.Pos(), "summarizes turn ends: fold with rig.State"})
			}
		case *ast.CallExpr:
			if se, ok := n.Fun.(*ast.SelectorExpr); ok && se.Sel.Name == "Subscribe" && !under(pkg, "host") {
				out = append(out, violation{n.Pos(), "calls Subscribe: follow with rig.Follow"})
			}
		case *ast.StructType:
			if under(pkg, "host") {
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
