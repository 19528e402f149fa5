package storetest

import (
	"os"
	"path/filepath"
	"testing"

	"looprig/rig/storage"
)

var localDirCases = []testCase{
	{"Stable", testLocalDirStable},
}

// testLocalDirStable checks LocalDir: the same answer before and after the
// store is used, and, when the store reports one, a clean absolute path
// naming an existing directory.
func testLocalDirStable(t *testing.T, s storage.Store) {
	dir := s.LocalDir()
	if dir != "" {
		if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
			t.Fatalf("LocalDir() = %q, want a clean absolute path (or \"\")", dir)
		}
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatalf("LocalDir() = %q: %v, want an existing directory", dir, err)
		}
		if !fi.IsDir() {
			t.Fatalf("LocalDir() = %q is a %v, want a directory", dir, fi.Mode().Type())
		}
	}
	l := acquire(t, s, "localdir/lease")
	appendOK(t, s, "localdir/ledger", 0, []byte("x"))
	put(t, s, "localdir/key", []byte("v"), storage.MustNotExist, 1)
	release(t, l, "localdir/lease")
	for i := 0; i < 3; i++ {
		if got := s.LocalDir(); got != dir {
			t.Fatalf("LocalDir() = %q after use, was %q: want it stable", got, dir)
		}
	}
}
