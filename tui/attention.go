package tui

import tea "github.com/charmbracelet/bubbletea"

// jumpToNeeds moves the cursor to the next session waiting for the user.
func (m *model) jumpToNeeds() tea.Cmd { return nil }
