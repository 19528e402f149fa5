package rig_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"looprig/rig"
	"looprig/rig/storage/memstore"
)

func seedRig(t *testing.T) (*rig.Rig, string) {
	t.Helper()
	ws := t.TempDir()
	r, err := rig.Define(rig.WithStore(memstore.New()), rig.WithWorkspaces(ws), rig.WithProfile(rig.DemoProfile()))
	if err != nil {
		t.Fatal(err)
	}
	return r, ws
}

// Seed directories whose entries would leave the seed, or are not plain
// files, directories or links, are refused with *rig.SeedError before
// anything is copied; links that stay inside are copied.
func TestHostileSeeds(t *testing.T) {
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600)
	tests := []struct {
		name  string
		build func(t *testing.T, seed string)
		ok    bool
	}{
		{"absolute symlink", func(t *testing.T, seed string) { symlink(t, filepath.Join(outside, "secret"), seed, "abs") }, false},
		{"dot-dot symlink", func(t *testing.T, seed string) { symlink(t, "../"+filepath.Base(outside)+"/secret", seed, "up") }, false},
		{"deep dot-dot symlink", func(t *testing.T, seed string) {
			mkdir(t, seed, "a/b")
			symlink(t, "../../../x", seed, "a/b/up")
		}, false},
		{"dot-dot through a symlink", func(t *testing.T, seed string) {
			// sub/up -> .. is the seed itself (fine), but sub/up/../.. is
			// the seed's parent: a lexical check of "sub/up/../.." sees
			// the seed.
			mkdir(t, seed, "sub")
			symlink(t, "..", seed, "sub/up")
			symlink(t, "sub/up/../..", seed, "escape")
		}, false},
		{"symlink to a symlink that escapes", func(t *testing.T, seed string) {
			mkdir(t, seed, "d")
			symlink(t, "../..", seed, "d/out")
			symlink(t, "d/out", seed, "hop")
		}, false},
		{"fifo", func(t *testing.T, seed string) {
			if err := syscall.Mkfifo(filepath.Join(seed, "fifo"), 0o600); err != nil {
				t.Skip("mkfifo:", err)
			}
		}, false},
		{"device file", func(t *testing.T, seed string) {
			if os.Geteuid() != 0 {
				t.Skip("mknod needs root")
			}
			// A character device with the numbers of /dev/null.
			if err := syscall.Mknod(filepath.Join(seed, "null"), syscall.S_IFCHR|0o600, 1<<8|3); err != nil {
				t.Skip("mknod:", err)
			}
		}, false},
		{"links that stay inside", func(t *testing.T, seed string) {
			mkdir(t, seed, "sub/deep")
			os.WriteFile(filepath.Join(seed, "sub/deep/f"), []byte("f"), 0o600)
			symlink(t, "sub/deep/f", seed, "direct")
			symlink(t, "..", seed, "sub/up")             // the seed itself
			symlink(t, "sub/up/sub/deep/f", seed, "via") // through it
			symlink(t, "deep/../deep/f", seed, "sub/dots")
			symlink(t, "not-there-yet", seed, "dangling")
		}, true},
		{"symlink loop (resolves nowhere)", func(t *testing.T, seed string) {
			symlink(t, "b", seed, "a")
			symlink(t, "a", seed, "b")
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seed := filepath.Join(t.TempDir(), "seed")
			mkdir(t, seed, "")
			os.WriteFile(filepath.Join(seed, "plain.txt"), []byte("plain"), 0o600)
			tt.build(t, seed)
			r, ws := seedRig(t)
			s, err := r.NewSession(context.Background(), rig.WithSeedSnapshot(seed))
			if tt.ok {
				if err != nil {
					t.Fatalf("NewSession with a safe seed: %v", err)
				}
				defer s.Shutdown(context.Background())
				if _, err := os.Lstat(filepath.Join(seed, "via")); err != nil {
					return
				}
				if b, err := os.ReadFile(filepath.Join(s.Workspace(), "via")); err != nil || string(b) != "f" {
					t.Fatalf("link through the seed: %q %v", b, err)
				}
				return
			}
			var se *rig.SeedError
			var le *rig.LifecycleError
			if !errors.As(err, &se) || !errors.As(err, &le) || le.Stage != rig.StageSeed {
				t.Fatalf("NewSession with a hostile seed = %v, want *rig.SeedError at stage seed", err)
			}
			// Nothing was copied anywhere.
			filepath.WalkDir(ws, func(path string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					t.Errorf("a refused seed left %s", path)
				}
				return nil
			})
		})
	}
}

func mkdir(t *testing.T, root, rel string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, rel), 0o700); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, root, rel string) {
	t.Helper()
	if err := os.Symlink(target, filepath.Join(root, rel)); err != nil {
		t.Fatal(err)
	}
}

// Ids that try to name paths are refused as *rig.BadIDError by
// FindSession, before any store lookup.
func TestFindSessionHostileIDs(t *testing.T) {
	st := memstore.New()
	for _, in := range []string{"", "..", "../x", "abcd/..", "abcd/../../etc", "/etc/passwd", "sessions/abcd",
		"abcd\x00", "abcd\\..", "./abcd", "abcd/catalog", "abc", strings.Repeat("a", 4) + "\n"} {
		_, err := rig.FindSession(context.Background(), st, in)
		var bad *rig.BadIDError
		if !errors.As(err, &bad) || bad.Input != in {
			t.Errorf("FindSession(%q) = %v, want *rig.BadIDError", in, err)
		}
	}
}
