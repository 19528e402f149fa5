package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"looprig/internal/testexec"
)

// `looprig run ID` with no input: a session whose profile runs an agent's
// own interface opens it with an empty prompt box (no prompt on its
// command line); any other session is told its input is missing, a usage
// error, before anything is restored or started.
func TestRunWithoutInput(t *testing.T) {
	h := newHarness(t)
	agent := filepath.Join(t.TempDir(), "agent")
	testexec.WriteExecutable(t, agent, "#!/bin/sh\necho \"agent args: $*\"\n")
	h.writeConfig("[profiles.iagent]\nengine = \"claude\"\nagent_command = \"" + agent + "\"\nagent_interactive = true\n")

	shell := strings.TrimSpace(h.must(0, "new", "--scratch").stdout)
	before := len(h.log(shell))
	for _, args := range [][]string{{"run", shell}, {"run", shell, "--"}, {"run", shell, "--", " "}} {
		r := h.run(args...)
		if r.code != 2 || !strings.Contains(r.stderr, "missing input") {
			t.Fatalf("%v in a shell session: exit %d, stderr %q; want 2 and missing input", args, r.code, r.stderr)
		}
	}
	if n := len(h.log(shell)); n != before {
		t.Fatalf("the refused runs wrote to the journal: %d records, %d before", n, before)
	}

	v := decode[struct {
		ID string `json:"id"`
	}](t, h.must(0, "new", "--rig", "iagent", "--scratch", "--json").stdout)
	r := h.run("run", v.ID)
	if !strings.Contains(r.stdout, "agent args: --settings ") {
		t.Fatalf("run %s with no input: exit %d, stdout %q, stderr %q; want the agent started", v.ID, r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, " -- ") {
		t.Fatalf("the agent was given a prompt: %q", r.stdout)
	}
}
