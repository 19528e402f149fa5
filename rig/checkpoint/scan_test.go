package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

// TestFileChangingWhileRead has the file "log" appended to just after it
// is read: once (the retry reads it whole), and every time (the file is
// skipped, SkipChanged).
func TestFileChangingWhileRead(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changes int
		skipped bool
	}{
		{"stable", 0, false},
		{"changes once", 1, false},
		{"keeps changing", 100, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			root := t.TempDir()
			write(t, root, "log", "line\n", 0o644)
			write(t, root, "other", "x", 0o644)
			left := tc.changes
			testHookRead = func(f *fileNode) {
				if f.rel != "log" || left == 0 {
					return
				}
				left--
				g, err := os.OpenFile(filepath.Join(root, "log"), os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Error(err)
					return
				}
				g.WriteString("more\n")
				g.Close()
			}
			defer func() { testHookRead = nil }()
			blobs := memstore.New()
			res, err := Take(ctx, blobs, root, Options{Parallel: 1})
			if err != nil {
				t.Fatal(err)
			}
			m, err := Load(ctx, blobs, res.Manifest)
			if err != nil {
				t.Fatal(err)
			}
			e, kept := m.Lookup("log")
			if kept == tc.skipped {
				t.Errorf("log kept = %v, want %v", kept, !tc.skipped)
			}
			if tc.skipped && (len(res.Skipped) != 1 || res.Skipped[0].Reason != SkipChanged) {
				t.Errorf("skipped %v, want log as %q", res.Skipped, SkipChanged)
			}
			if kept {
				b, _ := os.ReadFile(filepath.Join(root, "log"))
				if e.Size != int64(len(b)) || e.Digest != storage.DigestOf(b) {
					t.Errorf("log recorded as %d bytes, file holds %d", e.Size, len(b))
				}
			}
		})
	}
}

func TestStampMatches(t *testing.T) {
	s := stamp{size: 1, mode: 0o644, mtimeNs: 2, ctimeNs: 3, ino: 4}
	e := s.entry(storage.Digest{}, nil)
	if !s.matches(&e) {
		t.Fatal("a stamp does not match its own entry")
	}
	for _, o := range []stamp{
		{size: 9, mode: 0o644, mtimeNs: 2, ctimeNs: 3, ino: 4},
		{size: 1, mode: 0o755, mtimeNs: 2, ctimeNs: 3, ino: 4},
		{size: 1, mode: 0o644, mtimeNs: 9, ctimeNs: 3, ino: 4},
		{size: 1, mode: 0o644, mtimeNs: 2, ctimeNs: 9, ino: 4},
		{size: 1, mode: 0o644, mtimeNs: 2, ctimeNs: 3, ino: 9},
	} {
		if o.matches(&e) {
			t.Errorf("%+v matches %+v", o, e)
		}
	}
}
