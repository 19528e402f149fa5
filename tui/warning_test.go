package tui

import (
	"strings"
	"testing"

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
