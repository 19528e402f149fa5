package tui

import tea "github.com/charmbracelet/bubbletea"

// The root's side of the sessions list: the session selected, and what a
// new selection does to the other components (the detail pane scrolls
// back to its top; the selection's journal is read once the cursor
// settles).

func (m *model) selected() *sessView { return m.list.selected() }

// resort orders the list's rows again after sessions came or went.
func (m *model) resort() { m.list.resort(m.sessions) }

func (m *model) keepVisible() { m.list.keepVisible(m.listSpace()) }

func (m *model) selectID(id string) { m.list.selectID(id, m.listSpace()) }

func (m *model) setFilter(f string) { m.list.setFilter(f, m.listSpace()) }

// moveList moves the list's cursor by a movement key.
func (m *model) moveList(msg tea.KeyMsg) tea.Cmd {
	if !m.list.move(m.keys, msg, m.listSpace()) {
		return nil
	}
	return m.selectionMoved()
}

// filterKey gives a key to the list's filter line.
func (m *model) filterKey(msg tea.KeyMsg) tea.Cmd {
	moved, cmd := m.list.filterKey(m.keys, msg, m.listSpace())
	if moved {
		return tea.Batch(cmd, m.selectionMoved())
	}
	return cmd
}

// selectionMoved follows a move of the selection: the detail pane starts
// at its top, and the new selection is loaded once the cursor settles.
func (m *model) selectionMoved() tea.Cmd {
	m.detail.top = 0
	return m.list.settle()
}
