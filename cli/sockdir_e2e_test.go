package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// An unusable socket directory is found before anything is created or
// restored: new --detach leaves no session behind, however often it is
// retried, and restore --detach of a crashed session writes nothing to
// its journal; both name the directory and how to fix it.
func TestUnusableSocketDirLeavesNothing(t *testing.T) {
	h := newHarness(t)
	// A crashed session, made while the directory is fine.
	crashed, pid := h.detached()
	h.submit(crashed, "sleep 30")
	h.waitLog(crashed, "TurnStarted")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExit(t, pid)
	before := len(h.log(crashed))

	// The socket directory's parent, looprig's own level of
	// $XDG_RUNTIME_DIR, made group-writable.
	top := filepath.Join(h.runtime, "looprig")
	if err := os.Chmod(top, 0o770); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r := h.run("new", "--detach")
		if r.code == 0 || !strings.Contains(r.stderr, top) || !strings.Contains(r.stderr, "chmod 700") {
			t.Fatalf("new --detach with an unusable socket directory: exit %d, stderr %s", r.code, r.stderr)
		}
	}
	r := h.run("restore", "--detach", crashed)
	if r.code == 0 || !strings.Contains(r.stderr, top) {
		t.Fatalf("restore --detach with an unusable socket directory: exit %d, stderr %s", r.code, r.stderr)
	}
	rows := h.ls()
	if len(rows) != 1 || rows[0].ID != crashed || rows[0].State != "crashed" {
		t.Fatalf("ls after the failed starts: %+v, want only the crashed session, still crashed", rows)
	}
	if after := len(h.log(crashed)); after != before {
		t.Fatalf("the crashed session's journal went from %d to %d records", before, after)
	}
}
