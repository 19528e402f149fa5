package tui

import (
	"sort"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/rig"
)

// onKey routes a key: ctrl+c always quits; an open dialog, the help
// screen, the input line or the filter take keys before the panes.
func (m *model) onKey(msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	if is(msg, k.ForceQuit) {
		return m.forceQuit()
	}
	if m.quitting != "" {
		return nil
	}
	switch {
	case m.dialog != nil:
		done, cmd := m.dialog.key(m, msg)
		if done {
			m.dialog = nil
		}
		return cmd
	case m.help != nil:
		return m.help.key(m, msg)
	case m.input != nil:
		return m.input.key(m, msg)
	case m.filterActive:
		return m.filterKey(msg)
	}

	switch {
	case is(msg, k.Quit):
		return m.quit()
	case is(msg, k.Help):
		m.help = newHelp()
		return nil
	case is(msg, k.Filter):
		m.filterActive = true
		m.focus = paneList
		m.filterInput.SetValue(m.filter)
		m.filterInput.CursorEnd()
		return m.filterInput.Focus()
	case is(msg, k.Theme):
		next := m.themes.Next(m.st.theme.Name)
		m.st = newStyles(m.renderer, next)
		return tea.Batch(m.flash("theme "+next.Name, clsOK), m.saveThemeCmd(next.Name))
	case is(msg, k.Tab):
		m.focus = (m.focus + 1) % numPanes
		return nil
	case is(msg, k.BackTab):
		m.focus = (m.focus + numPanes - 1) % numPanes
		return nil
	case is(msg, k.Dismiss):
		return m.dismiss()
	case is(msg, k.New):
		m.dialog = newCreateDialog(m)
		return nil
	case is(msg, k.Enter):
		if m.focus == paneList && m.selected() != nil {
			m.focus = paneEvents
		}
		return nil
	case is(msg, k.Up), is(msg, k.Down), is(msg, k.Top), is(msg, k.Bottom), is(msg, k.PageUp), is(msg, k.PageDown):
		return m.move(msg)
	}

	v := m.selected()
	if v == nil {
		return nil
	}
	switch {
	case is(msg, k.Restore):
		return m.restore(v)
	case is(msg, k.Break):
		return m.breakLease(v)
	case is(msg, k.Delete):
		return m.deleteSession(v)
	case is(msg, k.Input):
		if why := v.notMutable(); why != "" {
			return m.flash("i: "+why, clsError)
		}
		m.input = newInputBar(v.id)
		return m.input.ti.Focus()
	case is(msg, k.Interrupt):
		if why := v.notMutable(); why != "" {
			return m.flash("I: "+why, clsError)
		}
		if v.f.openTurn == nil {
			return m.flash("no turn is running", clsMuted)
		}
		v.busy = "interrupting"
		return tea.Batch(m.interruptCmd(v.id, v.live), m.startSpin())
	case is(msg, k.Approve), is(msg, k.Deny):
		approve := is(msg, k.Approve)
		if why := v.notMutable(); why != "" {
			return m.flash(msg.String()+": "+why, clsError)
		}
		g := v.f.openGate
		if g == nil {
			return m.flash("no gate is open", clsMuted)
		}
		return m.gateCmd(v.id, v.live, g.id, approve)
	case is(msg, k.Shutdown):
		if v.live == nil {
			return m.flash("X: "+v.short+" is not live in this TUI", clsError)
		}
		if why := v.notMutable(); why != "" {
			return m.flash("X: "+why, clsError)
		}
		body := []string{"Shut down session " + v.short + " (" + trunc(v.title, 30) + ")?"}
		if v.f.openTurn != nil {
			body = append(body, "Its running turn "+itoa(v.f.openTurn.index)+" is interrupted (recorded as shutdown).")
		}
		body = append(body, "It can be restored later with r.")
		m.dialog = &confirmDialog{title: "Shut down", body: body, confirm: "Shut down", danger: true,
			onConfirm: func(m *model) tea.Cmd {
				if v.live == nil {
					return nil
				}
				v.busy = "shutting down"
				return tea.Batch(m.shutdownCmd(v.id, v.live), m.startSpin())
			}}
		return nil
	}
	return nil
}

func (m *model) move(msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	switch m.focus {
	case paneEvents:
		v := m.selected()
		if v == nil {
			return nil
		}
		page := max(1, m.eventRows()-1)
		switch {
		case is(msg, k.Up):
			v.follow = false
			v.scroll++
		case is(msg, k.Down):
			v.scroll--
		case is(msg, k.PageUp):
			v.follow = false
			v.scroll += page
		case is(msg, k.PageDown):
			v.scroll -= page
		case is(msg, k.Top):
			v.follow = false
			v.scroll = v.ring.len() + 1
		case is(msg, k.Bottom):
			v.scroll = 0
		}
		maxScroll := max(0, v.ring.len()+boolInt(v.pend != "")-m.eventRows())
		v.scroll = min(max(v.scroll, 0), maxScroll)
		if v.scroll == 0 {
			v.follow = true
		}
		return nil
	case paneDetail:
		switch {
		case is(msg, k.Up):
			m.detailTop--
		case is(msg, k.Down):
			m.detailTop++
		case is(msg, k.Top):
			m.detailTop = 0
		case is(msg, k.Bottom):
			m.detailTop = 1 << 20
		}
		m.detailTop = max(0, m.detailTop)
		return nil
	}
	if len(m.vis) == 0 {
		return nil
	}
	prev := m.cursor
	page := max(1, m.listRows()-1)
	switch {
	case is(msg, k.Up):
		m.cursor--
	case is(msg, k.Down):
		m.cursor++
	case is(msg, k.PageUp):
		m.cursor -= page
	case is(msg, k.PageDown):
		m.cursor += page
	case is(msg, k.Top):
		m.cursor = 0
	case is(msg, k.Bottom):
		m.cursor = len(m.vis) - 1
	}
	m.keepVisible()
	if m.cursor == prev {
		return nil
	}
	m.detailTop = 0
	m.settleGen++
	return settle(m.settleGen)
}

func (m *model) filterKey(msg tea.KeyMsg) tea.Cmd {
	switch msg.Type {
	case tea.KeyEnter:
		m.filterActive = false
		m.filterInput.Blur()
		return nil
	case tea.KeyEsc:
		m.filterActive = false
		m.filterInput.Blur()
		m.setFilter("")
		return nil
	case tea.KeyUp, tea.KeyDown:
		return m.move(msg)
	}
	var cmd tea.Cmd
	m.filterInput, cmd = m.filterInput.Update(msg)
	if v := m.filterInput.Value(); v != m.filter {
		m.setFilter(v)
	}
	return cmd
}

func (m *model) setFilter(f string) {
	var keep string
	if s := m.selected(); s != nil {
		keep = s.id
	}
	m.filter = f
	m.refilter(keep)
	m.keepVisible()
}

func (m *model) dismiss() tea.Cmd {
	v := m.selected()
	switch {
	case m.globalErr != nil:
		m.globalErr = nil
	case v != nil && v.lost != nil && !v.lostSeen:
		v.lostSeen = true
	case v != nil && v.restoreErr != nil:
		v.restoreErr = nil
	case m.filter != "":
		m.setFilter("")
	}
	return nil
}

func (m *model) restore(v *sessView) tea.Cmd {
	if v.live != nil && v.lost == nil {
		return m.flash("r: "+v.short+" is already live in this TUI", clsMuted)
	}
	if v.busy != "" {
		return m.flash("r: busy: "+v.busy, clsMuted)
	}
	if rj := v.restoreRejected(); rj != nil {
		m.dialog = newDriftDialog(v, rj)
		return nil
	}
	return m.startRestore(v, false)
}

func (m *model) startRestore(v *sessView, accept bool) tea.Cmd {
	v.busy, v.busySince, v.restoreErr = "restoring", m.now(), nil
	if m.globalErr != nil {
		m.globalErr = nil
	}
	return tea.Batch(m.restoreCmd(v.id, v.info.Profile, accept), m.startSpin())
}

func (m *model) breakLease(v *sessView) tea.Cmd {
	switch {
	case v.live != nil && v.lost == nil:
		return m.flash("B: "+v.short+" is live in this TUI: there is nothing to break", clsMuted)
	case v.busy != "":
		return m.flash("B: busy: "+v.busy, clsMuted)
	case v.state() != rig.StateHeld && v.state() != rig.StateLive:
		return m.flash("B: "+v.short+" is not held by anyone: r restores it", clsMuted)
	}
	m.dialog = newBreakDialog(v)
	return nil
}

// deleteSession opens the delete dialog for a session nobody holds.
func (m *model) deleteSession(v *sessView) tea.Cmd {
	switch {
	case v.live != nil:
		return m.flash("D: "+v.short+" is live in this TUI: shut it down first (X)", clsMuted)
	case v.busy != "":
		return m.flash("D: busy: "+v.busy, clsMuted)
	case v.state() == rig.StateHeld, v.state() == rig.StateLive:
		who := v.holder
		if who == "" {
			who = "another process"
		}
		return m.flash("D: "+v.short+" is held by "+who+": it cannot be deleted while held", clsError)
	}
	m.dialog = newDeleteDialog(v, m.h.opts.Workspaces)
	return nil
}

func (m *model) quit() tea.Cmd {
	running := 0
	for _, v := range m.sessions {
		if v.live != nil && v.lost == nil && v.f.openTurn != nil {
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

func (m *model) forceQuit() tea.Cmd {
	if m.quitting != "" {
		return tea.Quit // a second ctrl+c: Run still shuts down with a short bound
	}
	return m.beginQuit(forceQuitBound)
}

func (m *model) beginQuit(bound time.Duration) tea.Cmd {
	n := len(m.h.hosted())
	if n == 0 {
		m.quitting = "bye"
		return tea.Quit
	}
	m.quitting = "shutting down " + plural(n, "live session") + " cleanly…"
	m.dialog, m.input, m.help = nil, nil, nil
	return tea.Batch(m.quitCmd(bound), m.startSpin())
}

func (m *model) profileNames() []string {
	names := make([]string, 0, len(m.h.opts.Profiles))
	for n := range m.h.opts.Profiles {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		// the default first, then by name
		if (names[i] == m.h.opts.DefaultProfile) != (names[j] == m.h.opts.DefaultProfile) {
			return names[i] == m.h.opts.DefaultProfile
		}
		return names[i] < names[j]
	})
	return names
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
