package tui

import (
	"errors"
	"strconv"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"looprig/host"
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
	opRevert
	opAttach
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
	case opRevert:
		return "revert"
	case opAttach:
		return "attach"
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
		m.inputGen++ // also when v cannot take it now: the line keeps the keys (inputBar.held)
		var cmd tea.Cmd
		m.input, cmd = openInput(m.h, v, m.inputGen)
		return cmd
	case key.Matches(msg, k.Interrupt):
		if why := v.notMutable(); why != "" {
			return m.status.flash("I: "+why, clsError)
		}
		if v.transcript.fold.Turn() == nil {
			return m.status.flash("no turn is running", clsMuted)
		}
		v.busy = busyInterrupting
		return tea.Batch(m.h.interruptCmd(v.id, v.live.c), m.spin.start())
	case key.Matches(msg, k.Screen):
		if why := v.notMutable(); why != "" {
			return m.status.flash("f: "+why, clsError)
		}
		cols, rows := m.turnSize()
		f, redraw, note := focusOn(v, cols, rows)
		if f == nil {
			return m.status.flash(note, clsError)
		}
		m.screenFocus = f
		var cmd tea.Cmd
		if redraw {
			cmd = m.h.redraw(v, cols, rows)
		}
		return tea.Batch(cmd, m.status.flash(note, clsOK))
	case key.Matches(msg, k.Approve, k.Deny):
		approve := key.Matches(msg, k.Approve)
		if why := v.notMutable(); why != "" {
			return m.status.flash(msg.String()+": "+why, clsError)
		}
		g := v.transcript.fold.Gate()
		if g == nil {
			return m.status.flash("no gate is open", clsMuted)
		}
		return m.h.gateCmd(v.id, v.live.c, g.ID, approve)
	case key.Matches(msg, k.Shutdown):
		return m.shutdown(v)
	}
	return nil
}

// shutdown asks before shutting v down (X): its host journals
// SessionStopped, releases the lease and exits.
func (m *model) shutdown(v *sessView) tea.Cmd {
	if !v.attached() {
		if v.state() == rig.StateLive {
			return m.status.flash("X: "+v.short+" is not attached yet — r attaches", clsError)
		}
		return m.status.flash("X: "+v.short+" is not live", clsError)
	}
	if why := v.notMutable(); why != "" {
		return m.status.flash("X: "+why, clsError)
	}
	m.dialog = newShutdownDialog(v)
	return nil
}

// restore restores v in a new host (r), asking first when its last
// restore was rejected for configuration drift; a session a host serves
// already is attached to instead.
func (m *model) restore(v *sessView) tea.Cmd {
	switch {
	case v.attached() && v.lost == nil:
		return m.status.flash("r: "+v.short+" is live and attached already", clsMuted)
	case v.busy != notBusy:
		return m.status.flash("r: busy: "+v.busy.String(), clsMuted)
	case !v.attached() && v.hostPID() > 0:
		return m.attach(v)
	}
	if changes, ok := v.driftRejected(); ok {
		m.dialog = newDriftDialog(v, changes)
		return nil
	}
	if x, ok := v.workspaceDiverged(); ok {
		m.dialog = newDivergedDialog(v, x)
		return nil
	}
	return m.startRestore(v, restoreAction{v: v})
}

// attach attaches to the host serving v.
func (m *model) attach(v *sessView) tea.Cmd {
	v.busy, v.busySince = busyAttaching, m.now()
	return tea.Batch(m.h.attachCmd(v.id), m.spin.start())
}

func (m *model) startRestore(v *sessView, a restoreAction) tea.Cmd {
	v.busy, v.busySince, v.failed, v.restoring = busyRestoring, m.now(), nil, nil
	if m.strip.global != nil {
		m.strip.global = nil
	}
	return tea.Batch(m.h.restoreCmd(v.id, a.acceptDrift, a.workspace), m.spin.start())
}

// breakLease opens the break dialog for a session held elsewhere (B).
func (m *model) breakLease(v *sessView) tea.Cmd {
	switch {
	case v.takesCommands():
		return m.status.flash("B: "+v.short+" is live and attached: there is nothing to break (X shuts it down)", clsMuted)
	case v.busy != notBusy:
		return m.status.flash("B: busy: "+v.busy.String(), clsMuted)
	case v.state() != rig.StateHeld && v.state() != rig.StateLive && !v.earlierTurnRuns():
		return m.status.flash("B: "+v.short+" is not held by anyone: r restores it", clsMuted)
	}
	m.dialog = newBreakDialog(v)
	return nil
}

// deleteSession opens the delete dialog for a session nobody holds (D).
func (m *model) deleteSession(v *sessView) tea.Cmd {
	switch {
	case v.attached() || v.state() == rig.StateLive:
		return m.status.flash("D: "+v.short+" is live: shut it down first (X)", clsMuted)
	case v.busy != notBusy:
		return m.status.flash("D: busy: "+v.busy.String(), clsMuted)
	case v.state() == rig.StateHeld, v.state() == rig.StateLive:
		who := v.listing.holder
		if who == "" {
			who = "another process"
		}
		return m.status.flash("D: "+v.short+" is held by "+who+": it cannot be deleted while held", clsError)
	}
	m.dialog = newDeleteDialog(v, m.h.opts.Workspaces)
	return nil
}

// do does what a dialog asked for, once the user confirmed it.
func (m *model) do(act action) tea.Cmd {
	switch a := act.(type) {
	case shutdownAction:
		v := a.v
		if !v.takesCommands() {
			return nil
		}
		v.busy, v.live.stopping = busyShuttingDown, true
		return tea.Batch(m.h.shutdownCmd(v.id, v.live.c), m.spin.start())
	case restoreAction:
		return m.startRestore(a.v, a)
	case breakAction:
		v := a.v
		v.busy, v.busySince, v.failed, v.restoring = busyBreaking, m.now(), nil, nil
		return tea.Batch(m.h.breakCmd(v.id), m.spin.start())
	case deleteAction:
		v := a.v
		v.busy, v.busySince = busyDeleting, m.now()
		return tea.Batch(m.h.deleteCmd(v.id), m.spin.start())
	case createAction:
		m.creating++
		return tea.Batch(m.h.createCmd(HostRequest{Profile: a.profile, Title: a.title, Seed: a.seed, Dir: a.dir, Scratch: a.scratch, Worktree: a.worktree}),
			m.status.flash("creating a "+a.profile+" session…", clsMuted), m.spin.start())
	case restoreAllAction: // the run starts: restoreAllWorkers hosts, then one more as each ends
		a.run.phase = raRunningPhase
		m.status.run, m.status.offer = a.run, false
		return m.restoreAllNext(a.run)
	case revertAction:
		return m.h.revertCmd(a.v.id, a.v.live.c, a.index)
	case forkAction:
		m.creating++
		m.changes = nil // the fork is selected when its host serves it
		return tea.Batch(m.h.createCmd(HostRequest{Fork: a.v.id, ForkTurn: strconv.Itoa(a.index)}),
			m.status.flash("forking "+a.v.short+" at turn "+strconv.Itoa(a.index)+"…", clsMuted), m.spin.start())
	case quitAction:
		return m.beginQuit()
	}
	return nil
}

// onFailed: a create, restore, break, delete or attach failed.
func (m *model) onFailed(msg failedMsg) tea.Cmd {
	m.h.log.Warn(msg.op.String()+" failed", "session", msg.id, "err", msg.err)
	if (msg.op == opCreate || msg.created) && m.creating > 0 {
		m.creating--
	}
	if msg.op == opAttach {
		return m.onAttachFailed(msg)
	}
	if msg.id == "" {
		m.strip.global = &opFailure{op: msg.op, err: msg.err}
		return m.status.flash(msg.op.String()+" failed", clsError)
	}
	v := m.sessions[msg.id]
	if v == nil {
		v = m.newSessView(msg.id)
		m.sessions[msg.id] = v
		m.list.resort(m.sessions)
	}
	v.busy = notBusy
	v.failed = &opFailure{op: msg.op, err: msg.err, broke: msg.broke}
	dropped := dropPending(v)
	// The restore may have written (RestoreErrored) or marked the catalog
	// broken: read the journal and the listing again.
	v.resetJournal()
	note := msg.op.String() + " of " + v.short + " failed"
	if msg.broke != nil {
		note = breakSummary(msg.broke) + "; " + note
	}
	cmds := []tea.Cmd{m.status.flash(note+dropped, clsError)}
	if v == m.list.selected() {
		cmds = append(cmds, m.ensureLoaded(v))
	}
	cmds = append(cmds, m.refreshList())
	return tea.Batch(cmds...)
}

// onAttachFailed: attaching to a session's host failed. Opening the
// session does not try that host again (r does); its journal is read
// instead. A host that went away meanwhile is only flashed; anything else
// (a host of another protocol version) is explained in the strip.
func (m *model) onAttachFailed(msg failedMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil {
		v = m.newSessView(msg.id)
		m.sessions[msg.id] = v
		m.list.resort(m.sessions)
	}
	if v.busy == busyAttaching {
		v.busy = notBusy
	}
	v.listing.forgetHost()
	dropped := dropPending(v)
	note := "attach to " + v.short + " failed: " + errText(msg.err)
	if errors.Is(msg.err, host.ErrNotHosted) {
		note = "attach to " + v.short + ": its host is gone"
	} else {
		v.failed = &opFailure{op: opAttach, err: msg.err}
	}
	if msg.created {
		note = "created " + v.short + ", but " + note
	}
	cmds := []tea.Cmd{m.status.flash(note+dropped, clsError)}
	if v == m.list.selected() {
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
		m.list.resort(m.sessions)
		m.list.keepVisible(m.listSpace())
	}
	return tea.Batch(m.status.flash("deleted "+short, clsOK), m.ensureLoaded(m.list.selected()), m.refreshList())
}

// onOp: a submit, an interrupt or a gate response ended.
func (m *model) onOp(msg opMsg) tea.Cmd {
	if v := m.sessions[msg.id]; v != nil && msg.op == opInterrupt {
		v.busy = notBusy
	}
	if msg.err != nil {
		return m.status.flash(msg.op.String()+" failed: "+errText(msg.err), clsError)
	}
	flash := m.status.flash(msg.note, clsOK)
	if msg.op != opRevert {
		return flash
	}
	if reload := m.changes.reverted(m.h, msg.id); reload != nil {
		return tea.Batch(flash, reload)
	}
	return flash
}
