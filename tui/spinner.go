package tui

import tea "github.com/charmbracelet/bubbletea"

// spinner is the activity glyph drawn next to whatever is in flight. It
// ticks only while the model is busy; a stale tick (an older generation)
// is dropped.
type spinner struct {
	gen     int
	running bool
	frame   int
}

var spinFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// glyph is the frame to draw now.
func (s *spinner) glyph() string { return spinFrames[s.frame%len(spinFrames)] }

// start starts the ticks unless they run.
func (s *spinner) start() tea.Cmd {
	if s.running {
		return nil
	}
	s.running = true
	s.gen++
	return spin(s.gen)
}

func (m *model) onSpin(msg spinMsg) tea.Cmd {
	if msg.gen != m.spin.gen {
		return nil
	}
	m.spin.frame++
	if m.busy() {
		return spin(m.spin.gen)
	}
	m.spin.running = false
	return nil
}

// busy says whether anything is in flight that the spinner shows: a quit,
// an operation on a session, a history replay, a create.
func (m *model) busy() bool {
	if m.quitting != "" {
		return true
	}
	for _, v := range m.sessions {
		if v.busy != notBusy || v.replaying() {
			return true
		}
	}
	return m.creating > 0
}
