package themes

import (
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

// noBlock runs f, failing the test if it has not returned after a long
// while: what is tested is that it does not block at all (a FIFO with no
// writer blocks a reader's open forever), not how long it takes.
func noBlock(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s blocked", what)
	}
}

// Theme files are read as the configuration file is: a FIFO, a device or
// a file whose shape costs the decoder gigabytes is refused with an error
// naming it, without blocking and allocating little; the other themes
// load.
func TestHostileThemeFiles(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.toml"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.toml")); err != nil {
		t.Fatal(err)
	}
	nested := "name = \"nested\"\n[colors]\naccent = " + strings.Repeat("{ a = ", 40<<10/7) + "1" + strings.Repeat("}", 40<<10/7) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "nested.toml"), []byte(nested), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "good.toml"), []byte("base = \"dark\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []Theme
	var errs []error
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	noBlock(t, "LoadDir", func() { got, errs = LoadDir(dir) })
	runtime.ReadMemStats(&after)
	if len(got) != 1 || got[0].Name != "good" {
		t.Errorf("loaded %+v", got)
	}
	want := map[string]string{"fifo.toml": "not a regular file", "zero.toml": "not a regular file", "nested.toml": "line 3: values nested deeper than"}
	for _, err := range errs {
		for name, says := range want {
			if strings.Contains(err.Error(), filepath.Join(dir, name)) && strings.Contains(err.Error(), says) {
				delete(want, name)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("errors %v; missing %v", errs, want)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("LoadDir allocated %d bytes", alloc)
	}
}

// A theme choice that is a FIFO or a device is an error, without
// blocking.
func TestHostileThemeChoice(t *testing.T) {
	for name, mk := range map[string]func(path string) error{
		"fifo":   func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"device": func(p string) error { return os.Symlink("/dev/zero", p) },
	} {
		dir := t.TempDir()
		if err := mk(filepath.Join(dir, choiceFile)); err != nil {
			t.Fatal(err)
		}
		var err error
		noBlock(t, "LoadChoice of a "+name, func() { _, err = LoadChoice(dir) })
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("LoadChoice of a %s: %v", name, err)
		}
	}
}

// The ceilings of issue 31 on a hostile theme file (the time's scaled
// under the race detector: raceSlowdown).
const (
	maxRefusalTime  = 100 * time.Millisecond * raceSlowdown
	maxRefusalAlloc = 50 << 20
)

// TestHostileThemeShapesAfterMarks: a theme file of 40 KB or 200 KB (a
// theme may be 256 KiB) of any of the shapes that cost the decoder time
// and memory quadratic in their size, or of what tomlscan cannot follow
// before them, with or without any of the byte-order marks the decoder
// skips, is refused with an error naming it and the line, and one of 1 MB
// for its size; each in at most 0.1 s, allocating at most 50 MiB. A
// byte-order mark once hid the rest of a theme from the shape check, and
// the TUI ran out of memory at start.
func TestHostileThemeShapesAfterMarks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hostile.toml")
	var slowest time.Duration
	var most uint64
	for _, size := range []int{40 << 10, 200 << 10, 1_000_000} {
		for _, m := range tomlscantest.Marks() {
			for _, sh := range tomlscantest.Shapes(size) {
				doc := tomlscantest.Doc(m.Bytes, "name = \"hostile\"\n[colors]\n", sh.Body)
				want := fmt.Sprintf("line %d: ", sh.LineAfter(2, 2))
				if len(doc) > maxThemeFile {
					want = "larger than 256 KiB"
				}
				if err := os.WriteFile(path, doc, 0o600); err != nil {
					t.Fatal(err)
				}
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				start := time.Now()
				_, err := LoadFile(path)
				took := time.Since(start)
				runtime.ReadMemStats(&after)
				alloc := after.TotalAlloc - before.TotalAlloc
				what := fmt.Sprintf("%d bytes, %s, %s", len(doc), m.Name, sh.Name)
				if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) ||
					len(doc) <= maxThemeFile && !strings.Contains(err.Error(), sh.Reason) {
					t.Errorf("%s: LoadFile = %v, want an error naming it, saying %q and %q", what, err, want, sh.Reason)
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
