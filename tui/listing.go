package tui

import tea "github.com/charmbracelet/bubbletea"

// The listing: the sessions of the store, listed again on a timer (every
// refreshEvery, slower when listing is slow) and whenever something may
// have changed them.

// refreshList lists the sessions now, unless a listing is in flight.
func (m *model) refreshList() tea.Cmd {
	if m.listing {
		return nil
	}
	m.listing = true
	return m.listCmd()
}

func (m *model) onList(msg listMsg) tea.Cmd {
	m.listing = false
	next := listTick(max(refreshEvery, 3*msg.took))
	if m.quitting != "" {
		return nil
	}
	if msg.err != nil {
		m.listErr = msg.err
		m.h.log.Warn("list sessions", "err", msg.err)
		return next
	}
	m.listErr = nil
	seen := make(map[string]bool, len(msg.infos))
	for _, info := range msg.infos {
		seen[info.ID] = true
		v := m.sessions[info.ID]
		if v == nil {
			v = newSessView(info.ID)
			m.sessions[info.ID] = v
		}
		v.setInfo(info)
		if l := v.lost; l != nil && info.Epoch > l.oldEpoch {
			l.newEpoch = max(l.newEpoch, info.Epoch)
			if v.holder != "" {
				l.holder = v.holder
			}
		}
	}
	for id, v := range m.sessions {
		if !seen[id] && !v.hosted() && v.busy == notBusy && v.lost == nil {
			delete(m.sessions, id)
		}
	}
	prev := m.selected()
	m.resort()
	m.keepVisible()
	cmds := []tea.Cmd{next}
	if !m.listed || prev != m.selected() {
		m.listed = true
		cmds = append(cmds, m.ensureLoaded(m.selected()))
	}
	return tea.Batch(cmds...)
}
