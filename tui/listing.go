package tui

import (
	"errors"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/host"
	"looprig/rig"
)

// The listing: the sessions of the store, listed again on a timer (every
// refreshEvery, slower when listing is slow) and whenever something may
// have changed them. rig.Lister reads the store again only when its change
// stamp moved, so an idle store costs little however many sessions it has. A session held by a process on this machine is
// probed once per holding (host.Probe): when a host answers, it is live.

// refreshList lists the sessions now, unless a listing is in flight.
func (m *model) refreshList() tea.Cmd {
	if m.listing {
		return nil
	}
	m.listing = true
	return m.h.listCmd()
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
	if msg.same && m.listed {
		// Nothing changed in the store; a holding whose probe found no
		// host yet is still probed again when it is due.
		cmds := []tea.Cmd{next}
		for _, v := range m.sessions {
			if c := m.probeHolder(v); c != nil {
				cmds = append(cmds, c)
			}
		}
		return tea.Batch(cmds...)
	}
	var cmds []tea.Cmd
	seen := make(map[string]bool, len(msg.infos))
	for _, info := range msg.infos {
		seen[info.ID] = true
		v := m.sessions[info.ID]
		if v == nil {
			v = m.newSessView(info.ID)
			m.sessions[info.ID] = v
		}
		v.setInfo(info)
		if l := v.lost; l != nil && info.Epoch > l.oldEpoch {
			l.newEpoch = max(l.newEpoch, info.Epoch)
			if v.listing.holder != "" {
				l.holder = v.listing.holder
			}
		}
		if c := m.probeHolder(v); c != nil {
			cmds = append(cmds, c)
		}
	}
	for id, v := range m.sessions {
		if !seen[id] && !v.attached() && v.busy == notBusy && v.lost == nil {
			delete(m.sessions, id)
		}
	}
	prev := m.selected()
	m.resort()
	m.keepVisible()
	cmds = append(cmds, next)
	if sel := m.selected(); !m.listed || prev != sel || (sel != nil && sel.journal.state == journalRead && sel.mayGrow()) {
		// Shown for the first time, or someone took the lease of the
		// session shown: read (on) its journal.
		m.listed = true
		cmds = append(cmds, m.ensureLoaded(sel))
	}
	return tea.Batch(cmds...)
}

// probeHolder probes whether a host serves v, when a process on this
// machine holds it and that holding was not probed yet.
func (m *model) probeHolder(v *sessView) tea.Cmd {
	h := v.listing.info.Holder
	if h == nil || (v.listing.info.State != rig.StateHeld && v.listing.info.State != rig.StateLive) ||
		h.Host != m.h.hostname || m.h.opts.StoreKey == "" {
		v.listing.probe.key, v.listing.probe.pid, v.listing.probe.asking = "", 0, false
		return nil
	}
	key, now := v.holding(), m.now()
	if key == v.listing.probe.key && (v.listing.probe.pid > 0 || now.Sub(v.listing.probe.at) < reprobeEvery) {
		return nil
	}
	v.listing.probe.key, v.listing.probe.pid, v.listing.probe.at, v.listing.probe.asking = key, 0, now, true
	return m.h.probeCmd(v.id, key)
}

// onProbed: a host answered for a session held on this machine, or none
// did. A host counts when it is the lease holder, as for looprig ls; a
// live session shown is attached to.
func (m *model) onProbed(msg probedMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || msg.key != v.listing.probe.key {
		return nil
	}
	v.listing.probe.pid, v.listing.probe.asking = msg.pid, false
	switch {
	case msg.err != nil:
		v.listing.probe.pid = 0
		if !errors.Is(msg.err, host.ErrNotHosted) {
			m.h.log.Warn("probe host", "session", v.id, "err", msg.err)
		}
	case v.listing.info.Holder == nil || v.listing.info.Holder.PID != msg.pid:
		// A host answers, but it does not hold the lease (as ls, the
		// holder decides): not attachable.
		m.h.log.Warn("a host answers for a session it does not hold", "session", v.id, "pid", msg.pid)
		v.listing.probe.pid = 0
	}
	if v == m.selected() {
		// Attach to the host that answered, or read the journal that
		// waited for the answer.
		return m.ensureLoaded(v)
	}
	return nil
}
