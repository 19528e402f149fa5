package checkpoint

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

// sampleTree builds the round-trip workspace and returns the paths of the
// things Take must skip.
func sampleTree(t *testing.T, root string) (outside []string) {
	write(t, root, "README.md", "hello\nworld\n", 0o644)
	write(t, root, "bin/run.sh", "#!/bin/sh\necho hi\n", 0o755)
	write(t, root, "data/blob.bin", string(randomBytes(3<<20, 1)), 0o640)
	write(t, root, "src/a/b/c/deep.txt", "deep\n", 0o600)
	write(t, root, "src/a/b/empty.txt", "", 0o644)
	write(t, root, "sp ace/ü\nnewline", "odd name\n", 0o644)
	if err := os.MkdirAll(filepath.Join(root, "empty/inner"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "empty/inner"), 0o750); err != nil {
		t.Fatal(err)
	}
	symlink(t, root, "link-to-readme", "README.md")
	symlink(t, root, "src/a/up", "../../bin/run.sh")
	symlink(t, root, "src/a/b/rootdir", "../../..")
	symlink(t, root, "dangling", "nowhere/at/all")
	symlink(t, root, "out-abs", "/etc/passwd")
	symlink(t, root, "src/out-rel", "../../outside")
	symlink(t, root, "src/a/sneaky", "b/../../../..")
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"out-abs", "src/out-rel", "src/a/sneaky", "fifo"}
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	blobs := memstore.New()
	root := t.TempDir()
	skips := sampleTree(t, root)

	res, err := Take(ctx, blobs, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 6 {
		t.Errorf("Files = %d, want 6", res.Files)
	}
	if want := int64(3<<20 + 12 + 18 + 5 + 9); res.Bytes != want || res.BytesRead != want {
		t.Errorf("Bytes, BytesRead = %d, %d, want %d", res.Bytes, res.BytesRead, want)
	}
	var skipped []string
	for _, s := range res.Skipped {
		skipped = append(skipped, s.Path)
	}
	if strings.Join(sorted(skipped), ",") != strings.Join(sorted(skips), ",") {
		t.Errorf("skipped %v, want %v", res.Skipped, skips)
	}
	for _, s := range res.Skipped {
		want := SkipOutsideSymlink
		if s.Path == "fifo" {
			want = SkipSpecial
		}
		if s.Reason != want {
			t.Errorf("%s skipped as %q, want %q", s.Path, s.Reason, want)
		}
	}

	parent := t.TempDir()
	out := filepath.Join(parent, "restored")
	var lastDone, lastTotal int64
	if err := Materialize(ctx, blobs, res.Manifest, out, func(done, total int64) { lastDone, lastTotal = done, total }); err != nil {
		t.Fatal(err)
	}
	if lastDone != res.Bytes || lastTotal != res.Bytes {
		t.Errorf("last progress %d/%d, want %d/%d", lastDone, lastTotal, res.Bytes, res.Bytes)
	}
	want := treeOf(t, root)
	for _, p := range skips {
		delete(want, p)
	}
	got := treeOf(t, out)
	for p, w := range want {
		g, ok := got[p]
		if !ok {
			t.Errorf("%q missing", p)
			continue
		}
		if g != w {
			t.Errorf("%q: got %v, want %v", p, short(g), short(w))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%q restored, not in the workspace (or skipped)", p)
		}
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 1 {
		t.Errorf("parent holds %d entries, want only the restored dir", len(ents))
	}
	// Every directory keeps its mode, the root too.
	rfi, err := os.Stat(root)
	if err != nil {
		t.Fatal(err)
	}
	ofi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if rfi.Mode().Perm() != ofi.Mode().Perm() {
		t.Errorf("root restored %o, was %o", ofi.Mode().Perm(), rfi.Mode().Perm())
	}
	// The same tree gives the same content.
	again, err := Take(ctx, blobs, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if changes, err := Diff(ctx, blobs, res.Manifest, again.Manifest, DiffOptions{NoPatch: true}); err != nil || len(changes) != 0 {
		t.Errorf("restored tree differs from the original: %v, %v", changes, err)
	}
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}

func short(n node) node {
	if len(n.content) > 40 {
		n.content = n.content[:40] + "..."
	}
	return n
}

func TestMaterializeCorruptBlob(t *testing.T) {
	ctx := context.Background()
	blobs := memstore.New()
	root := t.TempDir()
	write(t, root, "a.txt", "aaa\n", 0o644)
	write(t, root, "z/victim.txt", "precious\n", 0o644)
	res, err := Take(ctx, blobs, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	damage(t, blobs, res.Manifest, "z/victim.txt")
	parent := t.TempDir()
	out := filepath.Join(parent, "restored")
	err = Materialize(ctx, blobs, res.Manifest, out, nil)
	var me *MaterializeError
	if !errors.As(err, &me) || me.Path != "z/victim.txt" {
		t.Fatalf("Materialize = %v, want *MaterializeError about z/victim.txt", err)
	}
	if !errors.Is(err, storage.ErrBlobDigest) {
		t.Errorf("error %v does not wrap storage.ErrBlobDigest", err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		t.Errorf("left behind in the parent: %v", ents)
	}
}

func TestMaterializeExisting(t *testing.T) {
	ctx := context.Background()
	blobs := memstore.New()
	root := t.TempDir()
	write(t, root, "a.txt", "aaa\n", 0o644)
	res, err := Take(ctx, blobs, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir() // exists, empty
	if err := Materialize(ctx, blobs, res.Manifest, out, nil); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Materialize into an existing dir = %v, want fs.ErrExist", err)
	}
	// A directory that appears while Materialize works is not replaced,
	// even empty.
	parent := t.TempDir()
	late := filepath.Join(parent, "late")
	err = Materialize(ctx, blobs, res.Manifest, late, func(done, total int64) { os.Mkdir(late, 0o755) })
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Materialize with a late target = %v, want fs.ErrExist", err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 1 {
		t.Errorf("parent holds %v, want only the late dir", ents)
	}
	if ents, _ := os.ReadDir(late); len(ents) != 0 {
		t.Errorf("the late dir was filled: %v", ents)
	}
	// renameNoReplace refuses an empty directory that appears late.
	src := filepath.Join(t.TempDir(), "src")
	if err := os.Mkdir(src, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := renameNoReplace(src, out); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("renameNoReplace onto an empty dir = %v, want fs.ErrExist", err)
	}
}

func TestIndexSkipsUnchangedFiles(t *testing.T) {
	ctx := context.Background()
	blobs := memstore.New()
	root := t.TempDir()
	for i := 0; i < 20; i++ {
		write(t, root, "d/f"+string(rune('a'+i)), strings.Repeat("x", 100+i), 0o644)
	}
	backdate(t, root)
	first, err := Take(ctx, blobs, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Index.Files) != 20 {
		t.Fatalf("index holds %d files, want 20", len(first.Index.Files))
	}
	b, err := MarshalIndex(first.Index)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := UnmarshalIndex(b)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Take(ctx, blobs, root, Options{Index: ix})
	if err != nil {
		t.Fatal(err)
	}
	if second.BytesRead != 0 || second.Manifest != first.Manifest {
		t.Errorf("unchanged: read %d bytes, manifest %s (first %s); want 0, same", second.BytesRead, second.Manifest, first.Manifest)
	}
	write(t, root, "d/fc", "changed", 0o644)
	third, err := Take(ctx, blobs, root, Options{Index: second.Index})
	if err != nil {
		t.Fatal(err)
	}
	if third.BytesRead != int64(len("changed")) || third.Manifest == first.Manifest {
		t.Errorf("one changed: read %d bytes, want %d, and a new manifest", third.BytesRead, len("changed"))
	}
	if e, ok := third.Index.Files["d/fc"]; !ok || !e.Racy {
		t.Errorf("a file just written is in the index as %+v, want racily clean", e)
	}
	// A chmod alone (ctime and mode move) is noticed too.
	if err := os.Chmod(filepath.Join(root, "d/fa"), 0o600); err != nil {
		t.Fatal(err)
	}
	fourth, err := Take(ctx, blobs, root, Options{Index: third.Index})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Load(ctx, blobs, fourth.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := m.Lookup("d/fa"); e.Mode != 0o600 {
		t.Errorf("d/fa mode %o after chmod, want 600", e.Mode)
	}
}

func TestRacyFilesAreReadAgain(t *testing.T) {
	ctx := context.Background()
	blobs := memstore.New()
	root := t.TempDir()
	write(t, root, "fresh", "just written", 0o644)
	first, err := Take(ctx, blobs, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := Take(ctx, blobs, root, Options{Index: first.Index})
	if err != nil {
		t.Fatal(err)
	}
	if second.BytesRead != int64(len("just written")) {
		t.Errorf("a file modified just before the first Take: second read %d bytes, want it read again", second.BytesRead)
	}
}

func TestTooLarge(t *testing.T) {
	ctx := context.Background()
	blobs := memstore.New()
	root := t.TempDir()
	write(t, root, "a", strings.Repeat("a", 600), 0o644)
	write(t, root, "b", strings.Repeat("b", 600), 0o644)
	_, err := Take(ctx, blobs, root, Options{MaxBytes: 1000})
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Size != 1200 || tl.Limit != 1000 {
		t.Fatalf("Take = %v, want *TooLargeError 1200 > 1000", err)
	}
	n := 0
	_ = blobs.ListBlobs(ctx, func(storage.BlobInfo) error { n++; return nil })
	if n != 0 {
		t.Errorf("%d blobs stored for a workspace too large", n)
	}
}

func TestTakeHonoursIgnore(t *testing.T) {
	ctx := context.Background()
	blobs := memstore.New()
	root := t.TempDir()
	write(t, root, IgnoreFile, "# build output\n*.o\n/build/\nnode_modules/\n!keep.o\nlogs/**/*.log\n", 0o644)
	write(t, root, "main.c", "int main;\n", 0o644)
	write(t, root, "main.o", "obj", 0o644)
	write(t, root, "keep.o", "obj", 0o644)
	write(t, root, "sub/x.o", "obj", 0o644)
	write(t, root, "build/out", "bin", 0o644)
	write(t, root, "sub/build/out", "kept: /build/ is anchored", 0o644)
	write(t, root, "web/node_modules/m/index.js", "x", 0o644)
	write(t, root, "logs/a/b/run.log", "log", 0o644)
	write(t, root, "logs/a/b/run.txt", "txt", 0o644)
	write(t, root, "secret.env", "k=v", 0o644)
	res, err := Take(ctx, blobs, root, Options{Exclude: []string{"*.env"}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Load(ctx, blobs, res.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range m.Entries {
		got = append(got, e.Path)
	}
	want := ".looprigignore keep.o logs/a/b/run.txt main.c sub/build/out web"
	if strings.Join(got, " ") != want {
		t.Errorf("entries %q\nwant     %q", strings.Join(got, " "), want)
	}
	// web/node_modules was excluded whole: web is left empty, a Dir entry.
	if e, _ := m.Lookup("web"); e.Kind != Dir {
		t.Errorf("web: %v, want an empty directory entry", e)
	}
}

func TestDifferences(t *testing.T) {
	ctx := context.Background()
	blobs := memstore.New()
	root := t.TempDir()
	write(t, root, "same.txt", "same\n", 0o644)
	write(t, root, "edit.txt", "before\n", 0o644)
	write(t, root, "gone.txt", "gone\n", 0o644)
	write(t, root, "mode.sh", "echo\n", 0o644)
	symlink(t, root, "link", "same.txt")
	backdate(t, root)
	res, err := Take(ctx, blobs, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	changes, err := Differences(ctx, blobs, res.Manifest, root, Options{Index: res.Index})
	if err != nil || len(changes) != 0 {
		t.Fatalf("untouched: %v, %v; want no change", changes, err)
	}
	write(t, root, "edit.txt", "after!\n", 0o644) // same size
	if err := os.Remove(filepath.Join(root, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, root, "new.txt", "new\n", 0o644)
	if err := os.Chmod(filepath.Join(root, "mode.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := treeOf(t, root)
	changes, err = Differences(ctx, blobs, res.Manifest, root, Options{Index: res.Index})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range changes {
		got = append(got, c.Path+":"+string(c.Kind))
	}
	want := "edit.txt:modified gone.txt:removed mode.sh:mode changed new.txt:added"
	if strings.Join(got, " ") != want {
		t.Errorf("changes %q\nwant    %q", strings.Join(got, " "), want)
	}
	after := treeOf(t, root)
	if len(before) != len(after) {
		t.Errorf("Differences changed the directory")
	}
}

// StatDifferences finds what changes a file's presence, size, mode or
// kind without reading any file; an edit that keeps the size goes unseen,
// as it says.
func TestStatDifferences(t *testing.T) {
	ctx := context.Background()
	blobs := memstore.New()
	root := t.TempDir()
	write(t, root, "same.txt", "same\n", 0o644)
	write(t, root, "grow.txt", "short\n", 0o644)
	write(t, root, "quiet.txt", "before\n", 0o644)
	write(t, root, "gone.txt", "gone\n", 0o644)
	res, err := Take(ctx, blobs, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if changes, err := StatDifferences(ctx, blobs, res.Manifest, root, Options{}); err != nil || len(changes) != 0 {
		t.Fatalf("untouched: %v, %v", changes, err)
	}
	write(t, root, "grow.txt", "much longer\n", 0o644)
	write(t, root, "quiet.txt", "after!\n", 0o644) // same size: not seen without reading
	if err := os.Remove(filepath.Join(root, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, root, "new.txt", "new\n", 0o600)
	changes, err := StatDifferences(ctx, blobs, res.Manifest, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range changes {
		got = append(got, c.Path+":"+string(c.Kind))
	}
	if want := "gone.txt:removed grow.txt:modified new.txt:added"; strings.Join(got, " ") != want {
		t.Errorf("changes %q, want %q", strings.Join(got, " "), want)
	}
}
