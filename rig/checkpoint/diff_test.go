package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

func TestDiffOfATurn(t *testing.T) {
	ctx := context.Background()
	blobs := memstore.New()
	root := t.TempDir()
	write(t, root, "edit.txt", "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\ntwelve\n", 0o644)
	write(t, root, "gone.txt", "bye\n", 0o644)
	write(t, root, "tool", "#!/bin/sh\n", 0o644)
	write(t, root, "img.bin", "\x00\x01\x02", 0o644)
	symlink(t, root, "kind", "tool")
	before, err := Take(ctx, blobs, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The turn: edit, add, remove, chmod, binary change, symlink -> file.
	write(t, root, "edit.txt", "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\ntwelve\n", 0o644)
	write(t, root, "added.txt", "new\nfile\n", 0o644)
	if err := os.Remove(filepath.Join(root, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, root, "img.bin", "\x00\x01\x02\x03", 0o644)
	if err := os.Remove(filepath.Join(root, "kind")); err != nil {
		t.Fatal(err)
	}
	write(t, root, "kind", "now a file\n", 0o644)
	after, err := Take(ctx, blobs, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	changes, err := Diff(ctx, blobs, before.Manifest, after.Manifest, DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byPath := make(map[string]FileChange)
	var kinds []string
	for _, c := range changes {
		byPath[c.Path] = c
		kinds = append(kinds, c.Path+":"+string(c.Kind))
	}
	want := "added.txt:added edit.txt:modified gone.txt:removed img.bin:modified kind:type changed tool:mode changed"
	if strings.Join(kinds, " ") != want {
		t.Fatalf("changes %q\nwant    %q", strings.Join(kinds, " "), want)
	}
	// Checked against diff -u (GNU diffutils) of the same files.
	wantPatch := `--- a/edit.txt
+++ b/edit.txt
@@ -1,5 +1,5 @@
 one
-two
+TWO
 three
 four
 five
@@ -8,5 +8,4 @@
 eight
 nine
 ten
-eleven
 twelve
`
	if got := byPath["edit.txt"].Patch; got != wantPatch {
		t.Errorf("edit.txt patch:\n%s\nwant\n%s", got, wantPatch)
	}
	if got, want := byPath["added.txt"].Patch, "--- /dev/null\n+++ b/added.txt\n@@ -0,0 +1,2 @@\n+new\n+file\n"; got != want {
		t.Errorf("added.txt patch:\n%s\nwant\n%s", got, want)
	}
	if got, want := byPath["gone.txt"].Patch, "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"; got != want {
		t.Errorf("gone.txt patch:\n%s\nwant\n%s", got, want)
	}
	if c := byPath["img.bin"]; !c.Binary || c.Patch != "" || c.Summary != "binary file changed, 3 → 4 bytes" {
		t.Errorf("img.bin: binary %v patch %q summary %q", c.Binary, c.Patch, c.Summary)
	}
	if c := byPath["tool"]; c.OldMode != 0o644 || c.NewMode != 0o755 || c.Patch != "" {
		t.Errorf("tool: mode %o -> %o, patch %q", c.OldMode, c.NewMode, c.Patch)
	}
	if c := byPath["kind"]; c.OldKind != Symlink || c.NewKind != File || c.OldTarget != "tool" {
		t.Errorf("kind: %v -> %v (target %q)", c.OldKind, c.NewKind, c.OldTarget)
	}
	stat := FormatStat(changes)
	for _, line := range []string{
		" edit.txt  | 3 +--\n",
		" added.txt | 2 ++\n",
		" img.bin   | binary file changed, 3 → 4 bytes\n",
		" tool      | mode changed\n",
		" 6 files changed, 3 insertions(+), 3 deletions(-)\n",
	} {
		if !strings.Contains(stat, line) {
			t.Errorf("stat lacks %q:\n%s", line, stat)
		}
	}
}

func TestDiffFallsBackWhenTooDifferent(t *testing.T) {
	ctx := context.Background()
	blobs := memstore.New()
	root := t.TempDir()
	write(t, root, "f", strings.Repeat("a\n", 50), 0o644)
	before, err := Take(ctx, blobs, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, root, "f", strings.Repeat("b\n", 60), 0o644)
	after, err := Take(ctx, blobs, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	changes, err := Diff(ctx, blobs, before.Manifest, after.Manifest, DiffOptions{MaxEdits: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].Patch != "" || changes[0].Summary != "text file changed, 50 lines → 60 lines" {
		t.Fatalf("changes %+v", changes)
	}
}

// The zero digest is the empty workspace: everything after it is added.
func TestDiffFromNothing(t *testing.T) {
	ctx := context.Background()
	blobs := memstore.New()
	root := t.TempDir()
	write(t, root, "a.txt", "one\ntwo\n", 0o644)
	after, err := Take(ctx, blobs, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	changes, err := Diff(ctx, blobs, storage.Digest{}, after.Manifest, DiffOptions{})
	if err != nil || len(changes) != 1 || changes[0].Kind != Added || changes[0].Path != "a.txt" || changes[0].LinesAdded != 2 {
		t.Fatalf("Diff from nothing = %+v, %v; want a.txt added with 2 lines", changes, err)
	}
	if changes, err := Diff(ctx, blobs, storage.Digest{}, storage.Digest{}, DiffOptions{}); err != nil || len(changes) != 0 {
		t.Fatalf("Diff of nothing with nothing = %+v, %v", changes, err)
	}
}
