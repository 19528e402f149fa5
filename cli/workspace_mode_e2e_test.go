package cli_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// A session's private workspace (session placement: a directory in the
// store) is 0700 after a restore brings it back from its checkpoint, as
// when it was made; what is inside keeps its modes, and an exclusive root
// the user owns keeps its own.
func TestRestoredWorkspaceModes(t *testing.T) {
	h := newHarness(t)
	mode := func(p string) fs.FileMode {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}

	id, _, ws := h.detachedIn()
	h.must(0, "run", id, "--", "mkdir -m 750 sub && printf 'a\\n' > sub/a.txt && chmod 640 sub/a.txt")
	// Its checkpoint records the root's mode: one a turn opened up (as a
	// checkpoint of another machine's, or of a project directory a fork
	// came from, may have) is not what the store makes.
	h.must(0, "run", id, "--", "chmod 755 .")
	h.must(0, "stop", id)
	if err := os.RemoveAll(ws); err != nil {
		t.Fatal(err)
	}
	h.must(0, "restore", id)
	if m := mode(ws); m != 0o700 {
		t.Errorf("the restored session workspace is %04o, want 0700", m)
	}
	if m := mode(filepath.Join(ws, "sub")); m != 0o750 {
		t.Errorf("the restored directory sub is %04o, want 0750 as it was", m)
	}
	if m := mode(filepath.Join(ws, "sub", "a.txt")); m != 0o640 {
		t.Errorf("the restored file sub/a.txt is %04o, want 0640 as it was", m)
	}

	// An exclusive root keeps the mode it had.
	root := filepath.Join(h.cwd, "proj")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o751); err != nil {
		t.Fatal(err)
	}
	id2 := h.newSession("--placement", "exclusive", "--root", root)
	h.must(0, "run", id2, "--", "printf 'b\\n' > b.txt")
	h.must(0, "stop", id2)
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	h.must(0, "restore", id2)
	if m := mode(root); m != 0o751 {
		t.Errorf("the restored exclusive root is %04o, want 0751 as it was", m)
	}
}
