package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "seen.json")
	if err := os.WriteFile(path, []byte("old contents"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new" {
		t.Fatalf("read %q, %v; want %q", got, err, "new")
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("directory holds %v (%v), want only seen.json", entries, err)
	}
}

func TestWriteFileFailureLeavesOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "theme")
	if err := os.WriteFile(path, []byte("dark\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A directory where the file should be: the rename fails.
	sub := filepath.Join(dir, "sub")
	if err := os.MkdirAll(filepath.Join(sub, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(sub, []byte("light\n")); err == nil {
		t.Fatal("rename over a non-empty directory succeeded")
	}
	if err := WriteFile(filepath.Join(dir, "missing", "theme"), []byte("x")); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("directory holds %d entries after failures, want 2 (no temporary file left)", len(entries))
	}
	got, _ := os.ReadFile(path)
	if string(got) != "dark\n" {
		t.Fatalf("old file changed: %q", got)
	}
}
