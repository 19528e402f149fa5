package tui

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/internal/tomlscan/tomlscantest"
)

// A warning from the command (logind kills hosts at logout) is in the
// status bar at start, sanitized.
func TestStartWarning(t *testing.T) {
	m := newModel(Options{Store: memstoreNew(), Now: fixedClock, Warning: "hosts end at logout\x1b[31m; keep them with: loginctl enable-linger $USER"}, asciiRenderer())
	m.send(tea.WindowSizeMsg{Width: 200, Height: 30})
	view := m.View()
	if !strings.Contains(view, "warning: hosts end at logout^[[31m; keep them with: loginctl enable-linger") {
		t.Fatalf("no warning in the status bar:\n%s", view)
	}
}

// Theme files and the theme choice that are FIFOs or devices do not block
// the TUI's start (a FIFO's open waits for a writer): they are refused, and
// the status bar says so.
func TestHostileThemeFilesDoNotBlock(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "themes"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "themes", "fifo.toml"), filepath.Join(dir, "theme")} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "themes", "zero.toml")); err != nil {
		t.Fatal(err)
	}
	started := make(chan Model, 1)
	go func() {
		m := newModel(Options{Store: memstoreNew(), Now: fixedClock, ConfigDir: dir}, asciiRenderer())
		started <- m
	}()
	var m Model
	select {
	case m = <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the TUI blocked at start on a FIFO theme file or theme choice")
	}
	m.send(tea.WindowSizeMsg{Width: 200, Height: 30})
	if view := m.View(); !strings.Contains(view, "not a regular file") {
		t.Fatalf("no theme error in the status bar:\n%s", view)
	}
}

// A theme file whose shape costs the TOML decoder gigabytes, behind any
// byte-order mark the decoder skips, is refused at start: the TUI starts
// (in well under a second, allocating little) and the status bar names
// the file and its line. One behind a mark once ran the TUI out of memory
// at start.
func TestHostileThemeAfterMarkAtStart(t *testing.T) {
	for _, mark := range tomlscantest.Marks() {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "themes"), 0o700); err != nil {
			t.Fatal(err)
		}
		nested := tomlscantest.Shapes(40 << 10)[0]
		doc := tomlscantest.Doc(mark.Bytes, "name = \"hostile\"\n[colors]\n", nested.Body)
		if err := os.WriteFile(filepath.Join(dir, "themes", "hostile.toml"), doc, 0o600); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		started := make(chan Model, 1)
		go func() {
			started <- newModel(Options{Store: memstoreNew(), Now: fixedClock, ConfigDir: dir}, asciiRenderer())
		}()
		var m Model
		select {
		case m = <-started:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: the TUI did not start", mark.Name)
		}
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: started in %v allocating %.1f MiB", mark.Name, took.Round(time.Millisecond), float64(alloc)/(1<<20))
		if took > time.Second || alloc > 50<<20 {
			t.Errorf("%s: the TUI started in %v allocating %d bytes", mark.Name, took, alloc)
		}
		m.send(tea.WindowSizeMsg{Width: 300, Height: 30})
		if view := m.View(); !strings.Contains(view, "hostile.toml: line 3: values nested deeper than 8 levels") {
			t.Fatalf("%s: no theme error in the status bar:\n%s", mark.Name, view)
		}
	}
}
