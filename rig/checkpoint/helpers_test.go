package checkpoint

import (
	"context"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

// write creates root/rel (and its parents) with content and mode.
func write(t testing.TB, root, rel, content string, mode fs.FileMode) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

func symlink(t testing.TB, root, rel, target string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// backdate sets every regular file's mtime an hour back, out of the racy
// window (see racyWindow in index.go), as files not touched for a while.
func backdate(t testing.TB, root string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			return os.Chtimes(p, old, old)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func randomBytes(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

// node is what treeOf records of one path.
type node struct {
	typ     string // "file", "dir", "link"
	mode    fs.FileMode
	content string
	target  string
}

// treeOf describes everything below root.
func treeOf(t testing.TB, root string) map[string]node {
	t.Helper()
	out := make(map[string]node)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			tg, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = node{typ: "link", target: tg}
		case fi.IsDir():
			out[rel] = node{typ: "dir", mode: fi.Mode().Perm()}
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = node{typ: "file", mode: fi.Mode().Perm(), content: string(b)}
		default:
			out[rel] = node{typ: fi.Mode().Type().String()}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// damage changes the first byte of file p's content in the pack that
// holds it, as a disk error would.
func damage(t testing.TB, blobs *memstore.Store, manifest storage.Digest, p string) {
	t.Helper()
	ctx := context.Background()
	m, err := Load(ctx, blobs, manifest)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := m.Lookup(p)
	if !ok || len(e.Chunks) == 0 {
		t.Fatalf("%s: no content in the checkpoint", p)
	}
	c := e.Chunks[0]
	rc, err := blobs.GetBlob(ctx, c.Pack)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	b[c.Offset] ^= 0x20
	if !blobs.DamageBlob(c.Pack, b) {
		t.Fatal("no blob to damage")
	}
}
