package checkpoint

import (
	"context"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"testing"

	"looprig/rig/storage"
)

// TestFileChangingWhileRead drives digestFiles with a digester that
// appends to the file as it reads it: once (the retry reads it whole),
// and every time (the file is skipped, SkipChanged).
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
			s, err := walk(ctx, root, nil)
			if err != nil {
				t.Fatal(err)
			}
			left := tc.changes
			dig := func(ctx context.Context, r io.Reader) (storage.Digest, int64, error) {
				h := sha256.New()
				n, err := io.Copy(h, r)
				if f, ok := r.(*os.File); ok && filepath.Base(f.Name()) == "log" && left > 0 {
					left--
					g, err := os.OpenFile(f.Name(), os.O_APPEND|os.O_WRONLY, 0)
					if err != nil {
						return storage.Digest{}, 0, err
					}
					g.WriteString("more\n")
					g.Close()
				}
				var d storage.Digest
				h.Sum(d[:0])
				return d, n, err
			}
			if _, err := s.digestFiles(ctx, nil, dig, 1); err != nil {
				t.Fatal(err)
			}
			_, kept := (&Manifest{Entries: s.entries}).Lookup("log")
			if kept == tc.skipped {
				t.Errorf("log kept = %v, want %v", kept, !tc.skipped)
			}
			if tc.skipped && (len(s.skipped) != 1 || s.skipped[0].Reason != SkipChanged) {
				t.Errorf("skipped %v, want log as %q", s.skipped, SkipChanged)
			}
			if e, _ := (&Manifest{Entries: s.entries}).Lookup("log"); kept {
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
	e := s.entry(storage.Digest{})
	if !s.matches(e) {
		t.Fatal("a stamp does not match its own entry")
	}
	for _, o := range []stamp{
		{size: 9, mode: 0o644, mtimeNs: 2, ctimeNs: 3, ino: 4},
		{size: 1, mode: 0o755, mtimeNs: 2, ctimeNs: 3, ino: 4},
		{size: 1, mode: 0o644, mtimeNs: 9, ctimeNs: 3, ino: 4},
		{size: 1, mode: 0o644, mtimeNs: 2, ctimeNs: 9, ino: 4},
		{size: 1, mode: 0o644, mtimeNs: 2, ctimeNs: 3, ino: 9},
	} {
		if o.matches(e) {
			t.Errorf("%+v matches %+v", o, e)
		}
	}
}
