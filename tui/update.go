package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"looprig/rig"
)

// Update folds a message into the model. It never blocks, and its only
// I/O is writing warnings to the log (Options.LogPath, or nowhere): a
// failed listing, operation or theme save, and an attached session's
// fault. Store, runtime and host calls are returned as commands (cmds.go).
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd := m.update(msg)
	return m, cmd
}

// update folds msg (route), then counts the live sessions again after a
// message that may have changed a session's state.
func (m *model) update(msg tea.Msg) tea.Cmd {
	cmd := m.route(msg)
	if m.jump != nil && m.jump.try(m.sessions[m.jump.id]) {
		m.jump = nil
	}
	cmd = tea.Batch(cmd, m.attn.attend(m.h, msg, m.sessions, m.list.selected(), m.list.listed))
	switch msg := msg.(type) {
	case listMsg:
		if !msg.same || !m.list.listed {
			m.countLive() // an idle tick's listing changed nothing: no count
		}
	case probedMsg, attachedMsg, failedMsg, deletedMsg, restoreAllMsg:
		m.countLive()
	case streamMsg:
		if msg.end != nil {
			m.countLive()
		}
	case subscribedMsg:
		if msg.err != nil {
			m.countLive()
		}
	}
	return cmd
}

// countLive counts the sessions of the store that run in the background,
// live in a host (attached or not), and the crashed ones not being
// restored, for the status bar.
func (m *model) countLive() {
	n, crashed := 0, 0
	for _, v := range m.list.rows {
		switch v.state() {
		case rig.StateLive:
			n++
		case rig.StateCrashed:
			if v.busy == notBusy {
				crashed++
			}
		}
	}
	m.status.count(n, crashed)
}

// route routes a message to the code that folds it: the listing and the
// journals (listing.go, journal.go), the sessions attached to (live.go),
// the operations on sessions (actions.go, quit.go) and the components.
func (m *model) route(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.list.keepVisible(m.listSpace())
		return m.resizeAll()
	case tea.KeyMsg:
		return m.onKey(msg)
	case listTickMsg:
		if m.quitting != "" {
			return nil
		}
		return m.refreshList()
	case listMsg:
		return m.onList(msg)
	case settleMsg:
		if m.list.settled(msg) {
			return m.ensureLoaded(m.list.selected())
		}
		return nil
	case journalMsg:
		return m.onJournal(msg)
	case probedMsg:
		return m.onProbed(msg)
	case attachedMsg:
		return m.onAttached(msg)
	case subscribedMsg:
		return m.onSubscribed(msg)
	case streamMsg:
		return m.onStream(msg)
	case shutdownMsg:
		return m.onShutdown(msg)
	case failedMsg:
		return m.onFailed(msg)
	case restoreProgressMsg:
		m.sessions[msg.id].progressed(msg.p) // and wait for the next report
		return m.h.restoreProgressCmd(msg.id, msg.feed)
	case dirCompletedMsg:
		if d, ok := m.dialog.(*createDialog); ok {
			d.completed(msg)
		}
		return nil
	case restoreAllMsg:
		return m.onRestoreAll(msg)
	case deletedMsg:
		return m.onDeleted(msg)
	case opMsg:
		return m.onOp(msg)
	case echoMsg, echoTickMsg:
		return m.inputPoll(msg)
	case inputSentMsg:
		return m.onInputSent(msg)
	case resizedMsg:
		return m.onResized(msg)
	case seenSavedMsg:
		return m.attn.saved(msg, m.h.log)
	case attentionSeenMsg:
		return msg.logged(m.h.log)
	case changesMsg:
		if m.changes != nil {
			m.changes.answered(msg)
		}
		return nil
	case searchTickMsg:
		if m.search != nil {
			return m.search.ticked(m.h, msg)
		}
		return nil
	case searchMsg:
		if m.search != nil {
			return m.search.answered(msg)
		}
		return nil
	case notifiedMsg:
		return msg.logged(m.h.log)
	case flashOffMsg:
		m.status.flashOff(msg.gen)
		return nil
	case spinMsg:
		return m.spin.tick(msg, m.busy())
	case themeSavedMsg:
		if msg.err != nil {
			m.h.log.Warn("theme choice not saved", "err", msg.err)
			return m.status.flash("theme choice not saved: "+errText(msg.err), clsError)
		}
		return nil
	}
	return nil
}

// eachKey routes the keys of a message that holds several: Bubble Tea
// gives the printable keys of one read as one message, so keys typed fast
// (or arriving together over a slow SSH link) come as "/needs" rather
// than "/" then "needs". Each is routed in turn, as if read alone: "/"
// opens the filter and the rest is typed into it, and no key is lost
// because it came with another.
func (m *model) eachKey(msg tea.KeyMsg) tea.Cmd {
	cmds := make([]tea.Cmd, 0, len(msg.Runes))
	for _, r := range msg.Runes {
		cmds = append(cmds, m.onKey(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt}))
	}
	return tea.Batch(cmds...)
}

// onKey routes a key: ctrl+c always quits; an open dialog, the help
// screen, the input line or the filter take keys before the panes; then
// the keys of the TUI, the movement keys of the focused pane and the keys
// of the selected session (actions.go).
func (m *model) onKey(msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	if m.screenFocus != nil {
		return m.screenKey(msg)
	}
	if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Paste {
		return m.eachKey(msg)
	}
	if key.Matches(msg, k.ForceQuit) {
		return m.beginQuit() // ctrl+c never asks
	}
	if m.quitting != "" {
		return nil
	}
	switch {
	case m.dialog != nil:
		return m.dialogKey(msg)
	case m.help != nil:
		closed, cmd := m.help.key(msg)
		if closed {
			m.help = nil
		}
		return cmd
	case m.changes != nil:
		return m.changesKey(msg)
	case m.search != nil:
		return m.searchKey(msg)
	case m.input != nil:
		return m.inputKey(msg)
	case m.list.filterActive:
		moved, cmd := m.list.filterKey(k, msg, m.listSpace())
		if moved {
			cmd = tea.Batch(cmd, m.selectionMoved())
		}
		return cmd
	}
	if m.found != nil {
		if cmd, ok := m.foundKey(msg); ok {
			return cmd
		}
	}

	switch {
	case key.Matches(msg, k.Quit):
		return m.quit()
	case key.Matches(msg, k.Help):
		m.help = newHelp()
		return nil
	case key.Matches(msg, k.Filter):
		m.focus = paneList
		return m.list.openFilter()
	case key.Matches(msg, k.Theme):
		next := m.themes.Next(m.st.theme.Name)
		m.st = newStyles(m.renderer, next)
		return tea.Batch(m.status.flash("theme "+next.Name, clsOK), m.h.saveThemeCmd(next.Name))
	case key.Matches(msg, k.Tab):
		m.focus = (m.focus + 1) % numPanes
		return nil
	case key.Matches(msg, k.BackTab):
		m.focus = (m.focus + numPanes - 1) % numPanes
		return nil
	case key.Matches(msg, k.Dismiss):
		switch {
		case m.strip.dismiss(m.list.selected()):
		case m.list.filter != "":
			m.list.setFilter("", m.listSpace())
		default:
			m.status.offer = false // the R offer, once nothing else is dismissed
		}
		return nil
	case key.Matches(msg, k.New):
		m.dialog = newCreateDialog(m.h.profileChoices(), m.h.opts.Dir)
		return nil
	case key.Matches(msg, k.NeedsMe):
		moved, none := m.list.jumpToNeeds(m.attn.needing(m.list.rows), m.listSpace())
		if none {
			return m.status.flash("w: no session is waiting for you", clsMuted)
		}
		if moved {
			return m.selectionMoved()
		}
		return nil
	case key.Matches(msg, k.RestoreAll):
		return m.openRestoreAll()
	case key.Matches(msg, k.Search):
		m.search = openSearch()
		return nil
	case key.Matches(msg, k.Changes):
		if v := m.list.selected(); v != nil {
			var cmd tea.Cmd
			m.changes, cmd = openChanges(m.h, v)
			return cmd
		}
		return m.status.flash("c: no session selected", clsMuted)
	case key.Matches(msg, k.Enter):
		if m.focus == paneList && m.list.selected() != nil {
			m.focus = paneEvents
		}
		return nil
	case k.movement(msg):
		switch m.focus {
		case paneEvents:
			if v := m.list.selected(); v != nil {
				m.events.key(k, msg, &v.transcript, m.eventRows())
			}
			return nil
		case paneDetail:
			m.detail.key(k, msg)
			return nil
		}
		if m.list.move(k, msg, m.listSpace()) {
			return m.selectionMoved()
		}
		return nil
	}
	if v := m.list.selected(); v != nil {
		return m.sessionKey(v, msg)
	}
	return nil
}

// dialogKey gives a key to the dialog, does what it asks for and closes it
// when it is done.
func (m *model) dialogKey(msg tea.KeyMsg) tea.Cmd {
	r := m.dialog.key(m.common(), msg, m.dialogArea())
	var cmd tea.Cmd
	if r.act != nil {
		cmd = m.do(r.act)
	}
	if r.done {
		m.dialog = nil
		if r.act == nil { // cancelled: a line typed to run after a restore it asked about does not run later
			for _, v := range m.sessions {
				v.pendingInput = ""
			}
		}
	}
	return tea.Batch(r.cmd, cmd)
}

// changesKey gives a key to the changes view and does what it asks for.
func (m *model) changesKey(msg tea.KeyMsg) tea.Cmd {
	r := m.changes.key(m.h, m.keys, msg, max(1, m.geometry().bodyH-2), m.sessions[m.changes.id])
	if r.closed {
		m.changes = nil
	}
	if r.dialog != nil {
		m.dialog = r.dialog
	}
	if r.flash != "" {
		return m.status.flash(r.flash, clsError)
	}
	return r.cmd
}

// inputPoll gives a poll of the turn's echo state, or its tick, to the
// input line, and closes the line when it says so.
func (m *model) inputPoll(msg tea.Msg) tea.Cmd {
	if m.input == nil {
		return nil
	}
	var closed bool
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case echoMsg:
		closed, cmd = m.input.polled(msg)
	case echoTickMsg:
		closed, cmd = m.input.tick(m.h, msg, m.sessions[m.input.id])
	}
	if closed {
		m.input = nil
	}
	return cmd
}

// inputKey gives a key to the input line, for the session it was opened
// for, and does what it asks for.
func (m *model) inputKey(msg tea.KeyMsg) tea.Cmd {
	v := m.sessions[m.input.id]
	a := m.input.key(msg, v)
	if a.close {
		m.input = nil
	}
	switch {
	case a.flash != "":
		return m.status.flash(a.flash, clsError)
	case a.submit != "":
		return m.h.submitCmd(v.id, v.live.c, a.submit)
	case a.restoreThen != "":
		v.pendingInput = a.restoreThen
		return tea.Batch(m.restore(v), m.status.flash("restoring "+v.short+": the line runs once it is live", clsMuted))
	case a.send != nil:
		return m.h.queueSend(v, *a.send)
	}
	return a.cmd
}

// searchKey gives a key to the search view; a hit chosen selects its
// session in the list (the filter cleared when it hides it) and focuses
// its events.
func (m *model) searchKey(msg tea.KeyMsg) tea.Cmd {
	r := m.search.key(msg, max(1, m.geometry().bodyH-4))
	if r.closed {
		m.search = nil
	}
	if r.choose == "" {
		return r.cmd
	}
	v := m.sessions[r.choose]
	if v == nil {
		return tea.Batch(r.cmd, m.status.flash("that session is not listed (yet)", clsMuted))
	}
	if !m.list.shows(v) {
		m.list.setFilter("", m.listSpace())
	}
	m.list.selectID(r.choose, m.listSpace())
	m.focus = paneEvents
	m.jump = &searchJump{id: r.choose, line: r.line}
	if r.query != nil {
		m.found = &searchFound{id: r.choose, q: r.query}
	}
	return tea.Batch(r.cmd, m.selectionMoved())
}
