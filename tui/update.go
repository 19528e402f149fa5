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
	cmd = tea.Batch(cmd, m.attend(msg))
	switch msg := msg.(type) {
	case listMsg, probedMsg, attachedMsg, failedMsg, deletedMsg, restoreAllMsg:
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
		m.keepVisible()
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
			return m.ensureLoaded(m.selected())
		}
		return nil
	case historyMsg:
		return m.onHistory(msg)
	case tailMsg:
		return m.onTail(msg)
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
	case restoreAllMsg:
		return m.onRestoreAll(msg)
	case deletedMsg:
		return m.onDeleted(msg)
	case opMsg:
		return m.onOp(msg)
	case echoMsg:
		return m.onEcho(msg)
	case echoTickMsg:
		return m.onEchoTick(msg)
	case inputSentMsg:
		return m.onInputSent(msg)
	case resizedMsg:
		return m.onResized(msg)
	case seenSavedMsg:
		return m.onSeenSaved(msg)
	case attentionSeenMsg:
		return m.onAttentionSeen(msg)
	case changesMsg:
		return m.onChanges(msg)
	case notifiedMsg:
		return m.onNotified(msg)
	case flashOffMsg:
		m.status.flashOff(msg.gen)
		return nil
	case spinMsg:
		return m.onSpin(msg)
	case themeSavedMsg:
		if msg.err != nil {
			m.h.log.Warn("theme choice not saved", "err", msg.err)
			return m.status.flash("theme choice not saved: "+errText(msg.err), clsError)
		}
		return nil
	}
	return nil
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
	if key.Matches(msg, k.ForceQuit) {
		return m.forceQuit()
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
		return m.changesKey(msg, max(1, m.geometry().bodyH-2))
	case m.input != nil:
		return m.inputKey(msg)
	case m.list.filterActive:
		return m.filterKey(msg)
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
		case m.strip.dismiss(m.selected()):
		case m.list.filter != "":
			m.setFilter("")
		default:
			m.status.offer = false // the R offer, once nothing else is dismissed
		}
		return nil
	case key.Matches(msg, k.New):
		m.dialog = newCreateDialog(m.h.profileNames())
		return nil
	case key.Matches(msg, k.NeedsMe):
		return m.jumpToNeeds()
	case key.Matches(msg, k.RestoreAll):
		return m.openRestoreAll()
	case key.Matches(msg, k.Changes):
		if v := m.selected(); v != nil {
			return m.openChanges(v)
		}
		return m.status.flash("c: no session selected", clsMuted)
	case key.Matches(msg, k.Enter):
		if m.focus == paneList && m.selected() != nil {
			m.focus = paneEvents
		}
		return nil
	case k.movement(msg):
		switch m.focus {
		case paneEvents:
			if v := m.selected(); v != nil {
				m.events.key(k, msg, &v.transcript, m.eventRows())
			}
			return nil
		case paneDetail:
			m.detail.key(k, msg)
			return nil
		}
		return m.moveList(msg)
	}
	if v := m.selected(); v != nil {
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
	}
	return tea.Batch(r.cmd, cmd)
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
	case a.send != nil:
		return m.queueSend(v, *a.send)
	}
	return a.cmd
}
