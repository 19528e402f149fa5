package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// take is all or nothing: a take whose restore here would be refused
// (here, the placement moved to another root: drift the default refuses)
// refuses before the holder is asked, and the session stays live where it
// is, with no HandedOff in its journal. take takes restore's flags: with
// --accept-drift the same take hands it over, and its turns run in the
// root given.
func TestTakeRefusesBeforeAskingWhatItCannotRestore(t *testing.T) {
	a, b := twoHomesOnNATS(t)
	id, pid := a.detached()
	a.must(0, "run", id, "--", "echo before")
	root := t.TempDir()

	r := b.run("take", id, "--placement", "exclusive", "--root", root, "--timeout", "20s")
	if r.code == 0 || !strings.Contains(r.stderr, "stays with pid") || !strings.Contains(r.stderr, "nothing was asked or written") || !strings.Contains(r.stderr, "placement") {
		t.Fatalf("take whose restore drifts: exit %d\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "asked pid") {
		t.Errorf("the holder was asked before the take knew it could restore:\n%s", r.stderr)
	}
	if row := a.row(id); row.State != "live" || row.Holder == nil || row.Holder.PID != pid {
		t.Fatalf("after a refused take the session is %+v; want live in host %d", row, pid)
	}
	for _, rec := range a.log(id) {
		if rec.Type == "HandedOff" || rec.Type == "SessionStopped" || rec.Type == "RestoreErrored" {
			t.Errorf("the journal has %s after a take that refused before asking", rec.Type)
		}
	}

	r = b.must(0, "take", id, "--placement", "exclusive", "--root", root, "--accept-drift", "--timeout", "20s")
	if !strings.Contains(r.stdout, "took session "+id[:8]) {
		t.Errorf("take with --accept-drift:\n%s%s", r.stdout, r.stderr)
	}
	canon, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(b.must(0, "run", id, "--", "pwd && touch here").stdout); got != canon {
		t.Errorf("a turn after the take runs in %q, want the root given, %s", got, canon)
	}
	if _, err := os.Stat(filepath.Join(root, "here")); err != nil {
		t.Errorf("the turn's file is not in the root given: %v", err)
	}
}

// A restore that is refused leaves the session marked in 'ls' with why,
// until a restore succeeds.
func TestLsShowsAFailedRestore(t *testing.T) {
	h := newHarness(t)
	id, pid := h.detached()
	h.must(0, "stop", id)
	waitExit(t, pid)
	if r := h.run("restore", id, "--placement", "exclusive", "--root", t.TempDir()); r.code == 0 {
		t.Fatalf("restore with drift not accepted succeeded:\n%s", r.stdout)
	}
	if out := h.must(0, "ls").stdout; !strings.Contains(out, id[:8]+" idle: its last restore failed (config_rejected)") {
		t.Errorf("ls after a refused restore:\n%s", out)
	}
	h.must(0, "restore", "--detach", id)
	if out := h.must(0, "ls").stdout; strings.Contains(out, "its last restore failed") {
		t.Errorf("ls after a restore that succeeded:\n%s", out)
	}
}
