package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"looprig/rig/storage/memstore"
)

// buildA and buildB are two states of a workspace: B adds, removes,
// changes, chmods and retargets entries of A, and turns a file into a
// directory and a directory into a file.
func buildA(t *testing.T, root string) {
	write(t, root, "a.txt", "a1\n", 0o644)
	write(t, root, "dir/x.txt", "x\n", 0o644)
	write(t, root, "dir/sub/y.txt", "y\n", 0o644)
	write(t, root, "m.sh", "echo m\n", 0o644)
	write(t, root, "t", "a file in A\n", 0o644)
	write(t, root, "u/w.txt", "w\n", 0o644)
	if err := os.MkdirAll(filepath.Join(root, "e"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, root, "link", "a.txt")
}

func buildB(t *testing.T, root string) {
	write(t, root, "a.txt", "a2, changed\n", 0o644)
	write(t, root, "dir/sub/y.txt", "y\n", 0o644)
	write(t, root, "new.txt", "new\n", 0o644)
	write(t, root, "m.sh", "echo m\n", 0o755)
	write(t, root, "t/z.txt", "t is a directory in B\n", 0o644)
	write(t, root, "u", "u is a file in B\n", 0o600)
	write(t, root, "big.bin", string(randomBytes(3<<20, 7)), 0o644)
	symlink(t, root, "link", "new.txt")
}

// Update brings a directory that is checkpoint A to checkpoint B exactly,
// and never touches what a rule left out.
func TestUpdate(t *testing.T) {
	ctx := context.Background()
	blobs := memstore.New()
	a, b, work := t.TempDir(), t.TempDir(), t.TempDir()
	buildA(t, a)
	buildB(t, b)
	buildA(t, work)
	write(t, work, IgnoreFile, "secret.txt\n", 0o644)
	write(t, b, IgnoreFile, "secret.txt\n", 0o644)
	write(t, work, "secret.txt", "left out, never touched\n", 0o600)
	rb, err := Take(ctx, blobs, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Load(ctx, blobs, rb.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	have, err := Scan(ctx, work, Options{})
	if err != nil {
		t.Fatal(err)
	}
	changes, err := Update(ctx, blobs, have, want, work)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) == 0 {
		t.Fatal("no changes applied")
	}
	got, wantTree := treeOf(t, work), treeOf(t, b)
	if g := got["secret.txt"]; g.content != "left out, never touched\n" {
		t.Errorf("the excluded file: %+v", g)
	}
	delete(got, "secret.txt")
	for p, w := range wantTree {
		if got[p] != w {
			t.Errorf("%s: got %+v, want %+v", p, short(got[p]), short(w))
		}
	}
	for p := range got {
		if _, ok := wantTree[p]; !ok {
			t.Errorf("%s left behind", p)
		}
	}
	// Again: nothing to do.
	have, err = Scan(ctx, work, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if changes, err := Update(ctx, blobs, have, want, work); err != nil || len(changes) != 0 {
		t.Errorf("a second Update: %v, %v; want nothing to do", changes, err)
	}
}

// A directory on the way that is a symbolic link (planted after the
// scan) is never written through.
func TestUpdateRefusesALinkOnTheWay(t *testing.T) {
	ctx := context.Background()
	blobs := memstore.New()
	b, work, outside := t.TempDir(), t.TempDir(), t.TempDir()
	buildB(t, b)
	buildA(t, work)
	rb, err := Take(ctx, blobs, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Load(ctx, blobs, rb.Manifest)
	have, err := Scan(ctx, work, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(work, "dir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(work, "dir")); err != nil {
		t.Fatal(err)
	}
	_, err = Update(ctx, blobs, have, want, work)
	if err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Update through a planted link = %v; want a refusal", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("written outside the workspace: %v", ents)
	}
}

// IndexAfterUpdate: after Update brought a directory from A to B, the
// index it returns names B, and the next Take with it stores no file
// content again (it knows the chunks of the files written) and records B.
func TestIndexAfterUpdate(t *testing.T) {
	ctx := context.Background()
	blobs := memstore.New()
	b, work := t.TempDir(), t.TempDir()
	buildB(t, b)
	buildA(t, work)
	rb, err := Take(ctx, blobs, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ra, err := Take(ctx, blobs, work, Options{})
	if err != nil {
		t.Fatal(err)
	}
	have, err := Load(ctx, blobs, ra.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Load(ctx, blobs, rb.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := Update(ctx, blobs, have, want, work)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := IndexAfterUpdate(ra.Index, work, want, rb.Manifest, changes)
	if err != nil {
		t.Fatal(err)
	}
	if ix.Manifest != rb.Manifest || ra.Index.Manifest != ra.Manifest {
		t.Fatalf("the index names %s (the one given %s), want %s", ix.Manifest, ra.Index.Manifest, rb.Manifest)
	}
	next, err := Take(ctx, blobs, work, Options{Index: ix, IndexTrusted: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Load(ctx, blobs, next.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if diff := Compare(want, got); len(diff) != 0 {
		t.Errorf("the checkpoint after the update differs from B: %+v", diff)
	}
	if next.BytesStored >= 3<<20 {
		t.Errorf("the checkpoint after the update stored %d bytes: the files written were stored again", next.BytesStored)
	}
}
