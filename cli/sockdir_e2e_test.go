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
	// Typed in --json, with the directory and the fix.
	for _, args := range [][]string{{"new", "--detach", "--json"}, {"restore", "--detach", "--json", crashed}} {
		r := h.run(args...)
		e := decode[struct {
			Error struct {
				Type string `json:"type"`
				Kind string `json:"kind"`
				Path string `json:"path"`
				Fix  string `json:"fix"`
				Hint string `json:"hint"`
			} `json:"error"`
		}](t, r.stdout)
		if r.code == 0 || e.Error.Type != "UnsafeSocketDirError" || e.Error.Kind != "unsafe_socket_dir" || e.Error.Path != top ||
			!strings.Contains(e.Error.Fix, "chmod 700") || e.Error.Hint != e.Error.Fix {
			t.Errorf("%v with an unusable socket directory: exit %d, %s", args, r.code, r.stdout)
		}
	}
	rows := h.ls()
	if len(rows) != 1 || rows[0].ID != crashed || rows[0].State != "crashed" {
		t.Fatalf("ls after the failed starts: %+v, want only the crashed session, still crashed", rows)
	}
	if after := len(h.log(crashed)); after != before {
		t.Fatalf("the crashed session's journal went from %d to %d records", before, after)
	}
}
