package tui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// quit is q: it asks first while a turn runs in a session hosted here,
// then shuts every hosted session down cleanly within quitBound and quits.
func (m *model) quit() tea.Cmd {
	running := 0
	for _, v := range m.sessions {
		if v.liveHere() && v.f.openTurn != nil {
			running++
		}
	}
	if running > 0 {
		m.dialog = &confirmDialog{title: "Quit",
			body: []string{plural(running, "turn") + " still running.",
				"Quitting shuts every live session down: running turns are interrupted",
				"(recorded as shutdown) and can be restored later."},
			confirm: "Quit", danger: true,
			onConfirm: func(m *model) tea.Cmd { return m.beginQuit(quitBound) }}
		return nil
	}
	return m.beginQuit(quitBound)
}

// forceQuit is ctrl+c: it never asks; hosted sessions are shut down within
// forceQuitBound, and a second ctrl+c quits at once.
func (m *model) forceQuit() tea.Cmd {
	if m.quitting != "" {
		return tea.Quit // a second ctrl+c: Run still shuts down with a short bound
	}
	return m.beginQuit(forceQuitBound)
}

// beginQuit shuts the hosted sessions down (quitCmd), waiting at most
// bound, then quits; with none it quits now.
func (m *model) beginQuit(bound time.Duration) tea.Cmd {
	n := len(m.h.hosted())
	if n == 0 {
		m.quitting = "bye"
		return tea.Quit
	}
	m.quitting = "shutting down " + plural(n, "live session") + " cleanly…"
	m.dialog, m.input, m.help = nil, nil, nil
	return tea.Batch(m.quitCmd(bound), m.spin.start())
}
