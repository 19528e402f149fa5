package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"looprig/internal/tomlscan/tomlscantest"
)

// A configuration "file" that is huge, a FIFO, a device or a directory is
// refused with a *Error naming it, without blocking or reading it whole.
func TestLoadHostileFiles(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.toml")
	if err := os.WriteFile(huge, []byte("theme = \"x\"\n"+strings.Repeat("# padding\n", MaxFileSize/10+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		huge:        "larger than 1 MiB",
		fifo:        "not a regular file",
		"/dev/zero": "not a regular file",
		dir:         "not a regular file",
	}
	for path, want := range cases {
		done := make(chan error, 1)
		go func() { _, err := Load(path, true); done <- err }()
		select {
		case err := <-done:
			var ce *Error
			if !errors.As(err, &ce) || ce.File != path || !strings.Contains(err.Error(), want) {
				t.Errorf("Load(%s) = %v, want a *Error saying %q", path, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Load(%s) blocked", path)
		}
	}
}

// Files whose shape costs the TOML decoder gigabytes (nested inline
// tables, dotted keys of many parts) are refused before they are decoded,
// with a *Error naming the file and the line, allocating little more than
// the file.
func TestLoadHostileShapes(t *testing.T) {
	dir := t.TempDir()
	nested := "# 40 KB of nested inline tables\na = " + strings.Repeat("{ a = ", 40<<10/7) + "1" + strings.Repeat("}", 40<<10/7) + "\n"
	dotted := "theme = \"dark\"\n" + strings.Repeat("a.", 100<<10) + "a = 1\n" // 200 KB
	cases := []struct {
		name, doc, want string
		line            int
	}{
		{"nested.toml", nested, "nested deeper than", 2},
		{"dotted.toml", dotted, "dotted parts", 2},
	}
	for _, c := range cases {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, []byte(c.doc), 0o600); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Load(path, true)
		runtime.ReadMemStats(&after)
		var ce *Error
		if !errors.As(err, &ce) || ce.File != path || ce.Line != c.line || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Load(%s) = %v, want a *Error at line %d saying %q", c.name, err, c.line, c.want)
		}
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s (%d bytes): %v; %d bytes allocated", c.name, len(c.doc), err, alloc)
		if max := 4 * uint64(len(c.doc)+64<<10); alloc > max {
			t.Errorf("Load(%s) allocated %d bytes for a %d-byte file, over %d", c.name, alloc, len(c.doc), max)
		}
	}
}

// The ceilings of issue 31 on a hostile configuration file (the time's
// scaled under the race detector: raceSlowdown).
const (
	maxRefusalTime  = 100 * time.Millisecond * raceSlowdown
	maxRefusalAlloc = 50 << 20
)

// TestLoadHostileShapesAfterMarks: a configuration file of 40 KB or 1 MB
// of any of the shapes that cost the decoder time and memory quadratic in
// their size (nested inline tables and arrays, dotted keys and headers,
// long keys, many keys) or of what tomlscan cannot follow before them,
// with or without any of the byte-order marks the decoder skips, is
// refused with a *Error at its line, each in at most 0.1 s, allocating at
// most 50 MiB (the file included). A byte-order mark once hid the rest of
// a file from the shape check: 20 KB of nesting behind one took the
// decoder 1.1 GB, 40 KB more memory than there was.
func TestLoadHostileShapesAfterMarks(t *testing.T) {
	dir := t.TempDir()
	var slowest time.Duration
	var most uint64
	for _, size := range []int{40 << 10, 1_000_000} {
		for _, m := range tomlscantest.Marks() {
			for _, sh := range tomlscantest.Shapes(size) {
				doc := tomlscantest.Doc(m.Bytes, "theme = \"dark\"\n", sh.Body)
				if len(doc) > MaxFileSize {
					t.Fatalf("%s: %d bytes, over the %d a file may be", sh.Name, len(doc), MaxFileSize)
				}
				path := filepath.Join(dir, "config.toml")
				if err := os.WriteFile(path, doc, 0o600); err != nil {
					t.Fatal(err)
				}
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				start := time.Now()
				_, err := Load(path, true)
				took := time.Since(start)
				runtime.ReadMemStats(&after)
				alloc := after.TotalAlloc - before.TotalAlloc
				what := fmt.Sprintf("%d bytes, %s, %s", len(doc), m.Name, sh.Name)
				var ce *Error
				if line := sh.LineAfter(1, 1); !errors.As(err, &ce) || ce.File != path || ce.Line != line || !strings.Contains(err.Error(), sh.Reason) {
					t.Errorf("%s: Load = %v, want a *Error at line %d saying %q", what, err, line, sh.Reason)
				}
				if took > maxRefusalTime || alloc > maxRefusalAlloc {
					t.Errorf("%s: refused in %v allocating %d bytes, over %v or %d", what, took, alloc, maxRefusalTime, maxRefusalAlloc)
				}
				slowest, most = max(slowest, took), max(most, alloc)
			}
		}
	}
	t.Logf("the slowest refusal took %v, the largest allocated %.1f MiB", slowest, float64(most)/(1<<20))
}
