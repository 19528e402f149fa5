package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readIn is the content of dir/rel, "<none>" when it is not there.
func readIn(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if os.IsNotExist(err) {
		return "<none>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// revert as a user tries it, in a project directory: through the
// session's host (the last turn; the revert reverted; an earlier turn;
// --json), refused while a turn runs and for the first turn (no
// checkpoint before it), then in this process once the host is stopped.
func TestRevertThroughHostAndInProcess(t *testing.T) {
	h := newHarness(t)
	repo := filepath.Join(h.cwd, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "Makefile"), []byte("test:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id, ws := h.newHere(repo, "--detach")
	h.stopWhenDone(id)
	h.must(0, "run", id, "--", "printf 'one\\n' > a.txt")
	h.must(0, "run", id, "--", "printf 'two\\n' > a.txt && rm Makefile && printf 'b\\n' > b.txt")
	h.must(0, "run", id, "--", "printf 'three\\n' > a.txt && printf 'c\\n' > c.txt")

	// The last turn, in the host.
	r := h.must(0, "revert", id)
	if !strings.Contains(r.stdout, "workspace reverted to before turn 2: 1 file changed, 1 removed") {
		t.Errorf("revert of the last turn said:\n%s%s", r.stdout, r.stderr)
	}
	if a, c := readIn(t, ws, "a.txt"), readIn(t, ws, "c.txt"); a != "two\n" || c != "<none>" {
		t.Errorf("after the revert of turn 2: a.txt %q, c.txt %q", a, c)
	}
	// The revert reverted.
	r = h.must(0, "revert", id)
	if !strings.Contains(r.stdout, "revert of turn 2 undone") {
		t.Errorf("the revert of the revert said:\n%s%s", r.stdout, r.stderr)
	}
	if a, c := readIn(t, ws, "a.txt"), readIn(t, ws, "c.txt"); a != "three\n" || c != "c\n" {
		t.Errorf("after the revert of the revert: a.txt %q, c.txt %q", a, c)
	}
	// An earlier turn, --json.
	js := decode[struct {
		Turn     int    `json:"turn"`
		Undo     bool   `json:"undo"`
		Manifest string `json:"manifest"`
		Changed  int    `json:"changed"`
		Removed  int    `json:"removed"`
		Agent    bool   `json:"agent"`
	}](t, h.must(0, "revert", id, "--turn", "1", "--json").stdout)
	if js.Turn != 1 || js.Undo || len(js.Manifest) != 64 || js.Changed != 2 || js.Removed != 2 || js.Agent {
		t.Errorf("revert --turn 1 --json: %+v; want a.txt and Makefile written, b.txt and c.txt removed", js)
	}
	if a, m, b := readIn(t, ws, "a.txt"), readIn(t, ws, "Makefile"), readIn(t, ws, "b.txt"); a != "one\n" || m != "test:\n" || b != "<none>" {
		t.Errorf("after the revert of turn 1: a.txt %q, Makefile %q, b.txt %q", a, m, b)
	}
	// Turn 0 has no checkpoint before it: the project as it was when the
	// session was made is not in the store.
	if r := h.run("revert", id, "--turn", "0"); r.code == 0 || !strings.Contains(r.stderr, "not known exactly") {
		t.Errorf("revert --turn 0: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := h.run("revert", id, "--turn", "0", "--json"); r.code == 0 || !strings.Contains(r.stdout, `"kind":"no_checkpoint_before"`) {
		t.Errorf("revert --turn 0 --json: exit %d\n%s", r.code, r.stdout)
	}

	// A running turn refuses it.
	h.submit(id, "sleep 30")
	if r := h.run("revert", id); r.code == 0 || !strings.Contains(r.stderr, "still running") {
		t.Errorf("revert while a turn runs: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.dialHost(id).Interrupt(ctx); err != nil {
		t.Fatal(err)
	}
	if a := readIn(t, ws, "a.txt"); a != "one\n" {
		t.Errorf("a refused revert changed a.txt: %q", a)
	}

	// No host: restored in this process, reverted, shut down; an edit
	// made by hand meanwhile is checkpointed before the revert writes.
	h.must(0, "stop", id)
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = h.must(0, "revert", id, "--turn", "2")
	if !strings.Contains(r.stdout, "workspace reverted to before turn 2") {
		t.Errorf("revert in process said:\n%s%s", r.stdout, r.stderr)
	}
	if a, b := readIn(t, ws, "a.txt"), readIn(t, ws, "b.txt"); a != "two\n" || b != "b\n" {
		t.Errorf("after the revert in process: a.txt %q, b.txt %q", a, b)
	}
	if row := h.row(id); row.State == "live" {
		t.Errorf("the session is %s after a revert in process", row.State)
	}
	// The hand edit was checkpointed first: undoing the revert brings it back.
	h.must(0, "revert", id)
	if a := readIn(t, ws, "a.txt"); a != "by hand\n" {
		t.Errorf("the undo of the revert in process: a.txt %q, want the edit made by hand", a)
	}
	var reverts int
	for _, rec := range h.log(id) {
		if rec.Type == "WorkspaceReverted" {
			reverts++
		}
	}
	if reverts != 5 {
		t.Errorf("the journal records %d reverts, want 5", reverts)
	}
}
