package tui

import (
	"strconv"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"looprig/rig"
)

// The keys that act on the selected session, and the results of what they
// start (cmds.go runs it).

// opKind names an operation whose result is reported: a failure is shown
// as "RESTORE FAILED" or "restore of a0000004 failed", and logged.
type opKind int

const (
	opCreate opKind = iota
	opRestore
	opBreak
	opDelete
	opSubmit
	opInterrupt
	opGate
)

func (o opKind) String() string {
	switch o {
	case opCreate:
		return "create"
	case opRestore:
		return "restore"
	case opBreak:
		return "break"
	case opDelete:
		return "delete"
	case opSubmit:
		return "submit"
	case opInterrupt:
		return "interrupt"
	case opGate:
		return "gate"
	}
	return "opKind(" + strconv.Itoa(int(o)) + ")"
}

// opFailure is an operation that failed, shown in the errors strip until
// it is dismissed.
type opFailure struct {
	op    opKind
	err   error
	broke *rig.BreakResult // a restore after a lease break (B): what the break did
}

// sessionKey is a key for the selected session v.
func (m *model) sessionKey(v *sessView, msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	switch {
	case key.Matches(msg, k.Restore):
		return m.restore(v)
	case key.Matches(msg, k.Break):
		return m.breakLease(v)
	case key.Matches(msg, k.Delete):
		return m.deleteSession(v)
	case key.Matches(msg, k.Input):
		if why := v.notMutable(); why != "" {
			return m.status.flash("i: "+why, clsError)
		}
		m.input = newInputBar(v.id)
		return m.input.ti.Focus()
	case key.Matches(msg, k.Interrupt):
		if why := v.notMutable(); why != "" {
			return m.status.flash("I: "+why, clsError)
		}
		if v.f.openTurn == nil {
			return m.status.flash("no turn is running", clsMuted)
		}
		v.busy = busyInterrupting
		return tea.Batch(m.interruptCmd(v.id, v.live.sess), m.spin.start())
	case key.Matches(msg, k.Approve, k.Deny):
		approve := key.Matches(msg, k.Approve)
		if why := v.notMutable(); why != "" {
			return m.status.flash(msg.String()+": "+why, clsError)
		}
		g := v.f.openGate
		if g == nil {
			return m.status.flash("no gate is open", clsMuted)
		}
		return m.gateCmd(v.id, v.live.sess, g.id, approve)
	case key.Matches(msg, k.Shutdown):
		return m.shutdown(v)
	}
	return nil
}

// shutdown asks before shutting v down (X).
func (m *model) shutdown(v *sessView) tea.Cmd {
	if !v.hosted() {
		return m.status.flash("X: "+v.short+" is not live in this TUI", clsError)
	}
	if why := v.notMutable(); why != "" {
		return m.status.flash("X: "+why, clsError)
	}
	body := []string{"Shut down session " + v.short + " (" + trunc(v.title, 30) + ")?"}
	if v.f.openTurn != nil {
		body = append(body, "Its running turn "+strconv.Itoa(v.f.openTurn.index)+" is interrupted (recorded as shutdown).")
	}
	body = append(body, "It can be restored later with r.")
	m.dialog = &confirmDialog{title: "Shut down", body: body, confirm: "Shut down", danger: true,
		onConfirm: func(m *model) tea.Cmd {
			if !v.hosted() {
				return nil
			}
			v.busy = busyShuttingDown
			return tea.Batch(m.shutdownCmd(v.id, v.live.sess), m.spin.start())
		}}
	return nil
}

// restore restores v here (r), asking first when its last restore was
// rejected for configuration drift.
func (m *model) restore(v *sessView) tea.Cmd {
	if v.liveHere() {
		return m.status.flash("r: "+v.short+" is already live in this TUI", clsMuted)
	}
	if v.busy != notBusy {
		return m.status.flash("r: busy: "+v.busy.String(), clsMuted)
	}
	if rj := v.restoreRejected(); rj != nil {
		m.dialog = newDriftDialog(v, rj)
		return nil
	}
	return m.startRestore(v, false)
}

func (m *model) startRestore(v *sessView, accept bool) tea.Cmd {
	v.busy, v.busySince, v.failed = busyRestoring, m.now(), nil
	if m.globalErr != nil {
		m.globalErr = nil
	}
	return tea.Batch(m.restoreCmd(v.id, accept), m.spin.start())
}

// breakLease opens the break dialog for a session held elsewhere (B).
func (m *model) breakLease(v *sessView) tea.Cmd {
	switch {
	case v.liveHere():
		return m.status.flash("B: "+v.short+" is live in this TUI: there is nothing to break", clsMuted)
	case v.busy != notBusy:
		return m.status.flash("B: busy: "+v.busy.String(), clsMuted)
	case v.state() != rig.StateHeld && v.state() != rig.StateLive:
		return m.status.flash("B: "+v.short+" is not held by anyone: r restores it", clsMuted)
	}
	m.dialog = newBreakDialog(v)
	return nil
}

// deleteSession opens the delete dialog for a session nobody holds (D).
func (m *model) deleteSession(v *sessView) tea.Cmd {
	switch {
	case v.hosted():
		return m.status.flash("D: "+v.short+" is live in this TUI: shut it down first (X)", clsMuted)
	case v.busy != notBusy:
		return m.status.flash("D: busy: "+v.busy.String(), clsMuted)
	case v.state() == rig.StateHeld, v.state() == rig.StateLive:
		who := v.holder
		if who == "" {
			who = "another process"
		}
		return m.status.flash("D: "+v.short+" is held by "+who+": it cannot be deleted while held", clsError)
	}
	m.dialog = newDeleteDialog(v, m.h.opts.Workspaces)
	return nil
}

// onFailed: a create, restore, break or delete failed.
func (m *model) onFailed(msg failedMsg) tea.Cmd {
	m.h.log.Warn(msg.op.String()+" failed", "session", msg.id, "err", msg.err)
	if msg.op == opCreate && m.creating > 0 {
		m.creating--
	}
	if msg.id == "" {
		m.globalErr = &opFailure{op: msg.op, err: msg.err}
		return m.status.flash(msg.op.String()+" failed", clsError)
	}
	v := m.sessions[msg.id]
	if v == nil {
		v = newSessView(msg.id)
		m.sessions[msg.id] = v
		m.resort()
	}
	v.busy = notBusy
	v.failed = &opFailure{op: msg.op, err: msg.err, broke: msg.broke}
	// The restore may have written (RestoreErrored) or marked the catalog
	// broken: read the journal and the listing again.
	v.resetJournal()
	note := msg.op.String() + " of " + v.short + " failed"
	if msg.broke != nil {
		note = breakSummary(msg.broke) + "; " + note
	}
	cmds := []tea.Cmd{m.status.flash(note, clsError)}
	if v == m.selected() {
		cmds = append(cmds, m.ensureLoaded(v))
	}
	cmds = append(cmds, m.refreshList())
	return tea.Batch(cmds...)
}

func (m *model) onDeleted(msg deletedMsg) tea.Cmd {
	short := rig.ShortID(msg.id)
	if v := m.sessions[msg.id]; v != nil {
		v.journal.gen++ // a journal read in flight is for a session that is gone
		delete(m.sessions, msg.id)
		m.resort()
		m.keepVisible()
	}
	return tea.Batch(m.status.flash("deleted "+short, clsOK), m.ensureLoaded(m.selected()), m.refreshList())
}

// onOp: a submit, an interrupt or a gate response ended.
func (m *model) onOp(msg opMsg) tea.Cmd {
	if v := m.sessions[msg.id]; v != nil && msg.op == opInterrupt {
		v.busy = notBusy
	}
	if msg.err != nil {
		return m.status.flash(msg.op.String()+" failed: "+errText(msg.err), clsError)
	}
	return m.status.flash(msg.note, clsOK)
}
