package tui

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
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
