package tui

import tea "github.com/charmbracelet/bubbletea"

// openRestoreAll opens the dialog restoring every crashed session (R).
func (m *model) openRestoreAll() tea.Cmd { return nil }
