package explain_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// causes are the error types that do not explain themselves because a
// restore's or a creation's explanation reads them as its cause (their
// facts are the failed stage's).
var causes = []string{
	"rig.TurnRunningError", "rig.WorkspaceDivergedError", "rig.WorkspaceRootBusyError", "rig.SeedError",
}

// unexplained are the runtime's error types that do not explain
// themselves (an error of only these is TypeError: presenters show its
// message), each with what it is. Giving one a kind is giving it an
// Explanation method (fault.Explainer) and moving it out of this list.
var unexplained = map[string]string{
	"rig.TranscriptError":          "a stored transcript could not be put where the agent looks for it",
	"rig.TranscriptManifestError":  "a stored transcript's manifest cannot be read",
	"rig.FellBehindError":          "a FeedReader's subscription buffer was full",
	"rig.HandingOffError":          "a turn refused while the session is handed over",
	"rig.HandOffCalledOffError":    "the holder called a hand-over off",
	"rig.TurnNotFoundError":        "no turn of that index or id",
	"rig.TurnNotCheckpointedError": "no checkpoint follows the turn",
	"rig.ProcessRecordError":       "a session's process record cannot be read",
	"storage.BlobNotFoundError":    "an absent blob",
	"storage.ConflictError":        "a failed compare-and-swap",
	"storage.InvalidNameError":     "a name that breaks the name grammar",
	"storage.NotFoundError":        "an absent KV key",
	"storage.PayloadTooLargeError": "a payload over MaxPayload",
	"journal.AppendError":          "the ledger refused or failed an append",
	"journal.InvalidRecordError":   "a record the journal refuses to write",
	"hub.SubscriptionLossError":    "a subscription that could not keep up",
	"engine.AgentFailedError":      "the agent ended its turn with an error of its own",
	"engine.AgentNotFoundError":    "the agent's program is not installed",
	"engine.NoConversationError":   "an agent turn without a conversation id",
	"engine.InputTimeoutError":     "an engine's input timeout (rig.InputTimeoutError is the session's)",
	"engine.GateDeniedError":       "a gate was denied; nothing ran",
	"engine.ShellError":            "a path cannot run turns",
	"checkpoint.TooLargeError":     "a workspace over a checkpoint's size bound",
	"storage.NotWritableError":     "a store that cannot be written, read through the error that wraps it (lease_failed, a failed append)",
	"checkpoint.ManifestError":     "a checkpoint manifest that is not valid",
	"checkpoint.MaterializeError":  "a file of a checkpoint that could not be written",
	"event.EncodeError":            "an event the codec refuses to encode (rig/event imports only the standard library)",
	"event.EphemeralError":         "an ephemeral event given to be persisted",
	"event.DecodeError":            "input the event codec does not fully understand",
	"event.EnvelopeDecodeError":    "a line that is not an event envelope",
}

// runtimeDirs are the runtime's packages whose error types are checked.
var runtimeDirs = []string{"..", "../storage", "../journal", "../hub", "../engine", "../checkpoint", "../event"}

// errorTypes returns the exported error struct types (named ...Error) of
// the runtime's packages, and which of them have an Explanation method
// (fault.Explainer: the compiler checks its signature where rig/explain
// finds it), as "pkg.Name".
func errorTypes(t *testing.T) (types []string, explained map[string]bool) {
	t.Helper()
	explained = map[string]bool{}
	for _, dir := range runtimeDirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			src, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.GenDecl:
					if d.Tok != token.TYPE {
						continue
					}
					for _, sp := range d.Specs {
						ts := sp.(*ast.TypeSpec)
						if _, isStruct := ts.Type.(*ast.StructType); isStruct && ts.Name.IsExported() && strings.HasSuffix(ts.Name.Name, "Error") {
							types = append(types, f.Name.Name+"."+ts.Name.Name)
						}
					}
				case *ast.FuncDecl:
					if d.Recv == nil || d.Name.Name != "Explanation" || len(d.Recv.List) != 1 {
						continue
					}
					recv := d.Recv.List[0].Type
					if star, ok := recv.(*ast.StarExpr); ok {
						recv = star.X
					}
					if id, ok := recv.(*ast.Ident); ok {
						explained[f.Name.Name+"."+id.Name] = true
					}
				}
			}
		}
	}
	sort.Strings(types)
	return types, explained
}

// Every error type of the runtime's packages explains itself
// (fault.Explainer), is read as a cause, or is listed as unexplained
// (with why): a new error type explains itself, or its author says why
// not.
func TestEveryRuntimeErrorIsExplainedOrListed(t *testing.T) {
	types, explained := errorTypes(t)
	known := map[string]string{}
	for n := range explained {
		known[n] = "explained"
	}
	for _, c := range causes {
		if known[c] != "" {
			t.Errorf("%s is listed as a cause but explains itself", c)
		}
		known[c] = "cause"
	}
	for n := range unexplained {
		if known[n] != "" {
			t.Errorf("%s is listed as unexplained but is %s", n, known[n])
		}
		known[n] = "unexplained"
	}
	found := map[string]bool{}
	for _, n := range types {
		found[n] = true
		if known[n] == "" {
			t.Errorf("%s: it has no Explanation method (fault.Explainer) and it is not listed as a cause or as unexplained", n)
		}
	}
	for n, how := range known {
		if !found[n] && how != "explained" {
			t.Errorf("%s (%s) is no error type of the runtime's packages", n, how)
		}
	}
}
