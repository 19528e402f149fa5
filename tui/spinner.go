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

// tick advances a frame and ticks on while something is in flight (busy:
// the root's busy); a stale tick is dropped.
func (s *spinner) tick(msg spinMsg, busy bool) tea.Cmd {
	if msg.gen != s.gen {
		return nil
	}
	s.frame++
	if busy {
		return spin(s.gen)
	}
	s.running = false
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
