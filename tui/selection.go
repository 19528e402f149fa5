package tui

import tea "github.com/charmbracelet/bubbletea"

// The root's side of the sessions list (list.go), which owns the rows,
// the cursor and the filter: the root calls it directly with the space it
// has (listSpace), and a new selection changes the other components (the
// detail pane scrolls back to its top; the selection's journal is read
// once the cursor settles).

// selectionMoved follows a move of the selection: the detail pane starts
// at its top, and the new selection is loaded once the cursor settles.
func (m *model) selectionMoved() tea.Cmd {
	m.detail.top = 0
	return m.list.settle()
}
