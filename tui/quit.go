package tui

import (
	tea "github.com/charmbracelet/bubbletea"
)

// Quitting detaches: the sessions keep running in their hosts, their
// turns go on, and the next TUI (or looprig ls) finds them live. Nothing
// is waited for: Run closes the clients after the program ends.

// quit is q: it asks first while a turn runs in an attached session (it
// goes on in the background), then quits.
func (m *model) quit() tea.Cmd {
	running := 0
	for _, v := range m.sessions {
		if v.takesCommands() && v.transcript.fold.Turn() != nil {
			running++
		}
	}
	if running > 0 {
		m.dialog = newQuitDialog(running)
		return nil
	}
	return m.beginQuit()
}

// beginQuit quits now; Run detaches from every attached session.
func (m *model) beginQuit() tea.Cmd {
	m.quitting = "bye"
	n := 0
	for _, v := range m.sessions {
		if v.attached() {
			n++
		}
	}
	if n > 0 {
		m.quitting = "detaching from " + plural(n, "session") + ": they keep running…"
	}
	m.dialog, m.input, m.help = nil, nil, nil
	return tea.Quit
}
