package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"looprig/config"
	"looprig/rig/fault"
)

// The README's list of JSON errors names every type and kind a command
// can print, as the code has them: every rig/fault Type and Kind (what
// the runtime and the hosts classify), and the CLI's own, read from
// describe's source (errors.go) and from the outcomes wait gives up with;
// and it names no type that is none of these.
func TestREADMEListsEveryErrorType(t *testing.T) {
	section := readmeErrors(t)
	types, kinds := cliErrorNames(t)
	for _, typ := range fault.Types() {
		types = append(types, typ.String())
	}
	for _, k := range fault.Kinds() {
		kinds = append(kinds, k.String())
	}
	for _, name := range types {
		if !strings.Contains(section, "`"+name+"`") {
			t.Errorf("the README's list of JSON errors lacks the type `%s`", name)
		}
	}
	for _, name := range kinds {
		if !strings.Contains(section, "`"+name+"`") {
			t.Errorf("the README's list of JSON errors lacks the kind `%s`", name)
		}
	}
	causes := causeTypes(t)
	for _, m := range regexp.MustCompile("`([A-Z][A-Za-z]*Error)`").FindAllStringSubmatch(section, -1) {
		if !slices.Contains(types, m[1]) && !slices.Contains(causes, m[1]) {
			t.Errorf("the README lists `%s`, which no command prints", m[1])
		}
	}
}

// readmeErrors is the README's list of JSON errors: from "Errors, on
// stdout" to the next section.
func readmeErrors(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "- Errors, on stdout:")
	if !ok {
		t.Fatal(`the README has no "- Errors, on stdout:" list`)
	}
	section, _, _ := strings.Cut(rest, "\n## ")
	return section
}

// cliErrorNames reads the types and kinds the CLI gives its own errors:
// the typ and kind of describe's described{...} literals and the kinds it
// assigns (errors.go), and the outcomes a WaitError is given, its kind
// (x.Outcome = "..." of an x := &WaitError{...}).
func cliErrorNames(t *testing.T) (types, kinds []string) {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	str := func(e ast.Expr) (string, bool) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(lit.Value)
		return s, err == nil
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			// The variables of this declaration made by x := &WaitError{...}.
			waitErrors := map[string]bool{}
			ast.Inspect(decl, func(n ast.Node) bool {
				if a, ok := n.(*ast.AssignStmt); ok && a.Tok == token.DEFINE && len(a.Lhs) == 1 && len(a.Rhs) == 1 {
					if u, ok := a.Rhs[0].(*ast.UnaryExpr); ok && u.Op == token.AND {
						if c, ok := u.X.(*ast.CompositeLit); ok {
							if id, ok := c.Type.(*ast.Ident); ok && id.Name == "WaitError" {
								waitErrors[a.Lhs[0].(*ast.Ident).Name] = true
							}
						}
					}
				}
				return true
			})
			ast.Inspect(decl, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CompositeLit:
					if id, ok := n.Type.(*ast.Ident); !ok || id.Name != "described" {
						return true
					}
					for _, el := range n.Elts {
						kv, ok := el.(*ast.KeyValueExpr)
						if !ok {
							continue
						}
						key, _ := kv.Key.(*ast.Ident)
						if s, ok := str(kv.Value); ok && key != nil && key.Name == "typ" {
							types = append(types, s)
						} else if ok && key != nil && key.Name == "kind" {
							kinds = append(kinds, s)
						}
					}
				case *ast.AssignStmt:
					for i, lhs := range n.Lhs {
						if i >= len(n.Rhs) {
							break
						}
						s, ok := str(n.Rhs[i])
						switch l := lhs.(type) {
						case *ast.Ident:
							if ok && l.Name == "kind" && name == "errors.go" {
								kinds = append(kinds, s)
							}
						case *ast.SelectorExpr:
							if x, isID := l.X.(*ast.Ident); ok && isID && l.Sel.Name == "Outcome" && waitErrors[x.Name] {
								kinds = append(kinds, s)
							}
						}
					}
				}
				return true
			})
		}
	}
	// What the reading must find, or it found nothing.
	for _, want := range []string{"UsageError", "ConfigError", "StoreError", "WaitError", "NotHostedError"} {
		if !slices.Contains(types, want) {
			t.Fatalf("read the types %v from the CLI's source: %s is not among them", types, want)
		}
	}
	for _, want := range []string{"usage", "unsafe_store", "permission_denied", "timeout", "crashed", "not_live"} {
		if !slices.Contains(kinds, want) {
			t.Fatalf("read the kinds %v from the CLI's source: %s is not among them", kinds, want)
		}
	}
	return types, kinds
}

// causeTypes are the cause_type values a restore's failure explains
// itself with (rig/explanations.go).
func causeTypes(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "rig", "explanations.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`Add\("cause_type", "([A-Za-z]+)"\)`).FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	if !slices.Contains(out, "WorkspaceRootBusyError") {
		t.Fatalf("read the cause types %v from rig/explanations.go: WorkspaceRootBusyError is not among them", out)
	}
	return out
}

// The README's configuration section names every key the configuration
// file accepts (config.TopLevelKeys, config.ProfileKeys), and its example
// of an unknown key's error lists the profile keys as the code does.
func TestREADMEListsEveryConfigKey(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n## Configuration\n")
	if !ok {
		t.Fatal(`the README has no "## Configuration" section`)
	}
	section, _, _ := strings.Cut(rest, "\n## ")
	for _, k := range append(config.TopLevelKeys(), config.ProfileKeys()...) {
		if !strings.Contains(section, "`"+k+"`") && !strings.Contains(section, "["+k+".") {
			t.Errorf("the README's configuration section does not name the key `%s`", k)
		}
	}
	want := "(known keys: " + strings.Join(config.ProfileKeys(), ", ") + ")"
	m := regexp.MustCompile(`\(known keys: [^)]*\)`).FindString(strings.Join(strings.Fields(section), " "))
	if m != want {
		t.Errorf("the README's example of an unknown key's error lists %q, the code %q", m, want)
	}
}
