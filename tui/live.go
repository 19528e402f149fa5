package tui

import (
	"strconv"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/rig"
	"looprig/rig/explain"
)

// The sessions this TUI is attached to (sessView.live): attached after a
// host was started for them (n, r, B) or when a live one is opened, their
// history replayed from the journal, then their host's stream read until
// the session stops, loses its lease or faults, or the host goes away.

// onAttached: this TUI is attached to a session's host. Its history is
// replayed first; the subscription waits for the replay (onHistory).
func (m *model) onAttached(msg attachedMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil {
		v = m.newSessView(msg.id)
		m.sessions[msg.id] = v
	}
	if msg.created && m.creating > 0 {
		m.creating--
	}
	if m.quitting != "" || v.attached() {
		// Quitting, or attached already (two attaches crossed): one
		// client per session.
		return m.closeClientCmd(msg.c)
	}
	v.live = attachment{c: msg.c, pid: msg.pid, gen: v.live.gen + 1, status: msg.status, outcome: msg.outcome, broke: msg.broke}
	v.busy, v.failed, v.lost = notBusy, nil, nil
	v.probe.pid, v.probe.noAttach = msg.pid, ""
	v.resetJournal()
	v.journal.state, v.journal.tip = journalReplaying, msg.status.Tip
	if t := msg.status.Tip; t > m.h.tail+uint64(m.h.chunk) {
		v.journal.jump = t - m.h.tail // resetJournal cleared it otherwise
	}
	if !v.listed {
		v.info = rig.SessionInfo{ID: msg.id, State: rig.StateHeld, Title: msg.status.Title,
			Profile: msg.status.Profile, Engine: msg.status.Engine, Epoch: msg.status.Epoch,
			Created: m.now(), Updated: m.now()}
		v.rawTitle, v.title = msg.status.Title, clean(msg.status.Title)
	}
	v.info.Epoch = max(v.info.Epoch, msg.status.Epoch)
	m.resort()
	pid := strconv.Itoa(msg.pid)
	var note string
	switch {
	case msg.created:
		m.selectID(msg.id)
		note = "created session " + v.short + " (host pid " + pid + ")"
	case msg.broke != nil && msg.outcome != nil:
		note = breakSummary(msg.broke) + "; restored " + v.short + " at epoch " + strconv.FormatUint(msg.outcome.Epoch, 10)
	case msg.outcome != nil:
		note = "restored " + v.short + " at epoch " + strconv.FormatUint(msg.outcome.Epoch, 10) + " (host pid " + pid + ")"
	default:
		note = "attached to " + v.short + " (host pid " + pid + ")"
	}
	m.keepVisible()
	return tea.Batch(
		m.historyCmd(v.id, v.journal.gen, nil, 0),
		m.status.flash(note, clsOK),
		m.resizeTurn(v),
	)
}

// onSubscribed: the stream of an attached session is open; it is read
// from now on.
func (m *model) onSubscribed(msg subscribedMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || msg.gen != v.live.gen || v.live.c != msg.c {
		return closeStreamCmd(msg.stream)
	}
	if msg.err != nil {
		return m.detach(v, &streamEnd{kind: endHostGone, err: msg.err})
	}
	if v.live.recovering {
		v.live.recovering = false
		v.line(m.now(), clsOK, "✓ recovered: subscribed again after seq "+strconv.FormatUint(v.lastSeq, 10)+"; live again")
	}
	v.live.stream = msg.stream
	return m.streamCmd(v.id, v.live.gen, v.live.c, msg.stream, v.live.status.Epoch)
}

// onStream folds what the stream had queued and reads on; at its end, it
// subscribes again when this TUI fell behind, else detaches.
func (m *model) onStream(msg streamMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || msg.gen != v.live.gen || v.live.stream == nil {
		return nil
	}
	for _, env := range msg.envs {
		v.apply(env)
	}
	v.flushScreen()
	m.settleScroll(v)
	v.live.dropped = max(v.live.dropped, msg.dropped)
	closed := m.checkTurnLine(v)
	if msg.end == nil {
		return tea.Batch(closed, m.streamCmd(v.id, v.live.gen, v.live.c, v.live.stream, v.live.status.Epoch))
	}
	if msg.end.kind == endLost {
		after := max(v.lastSeq, msg.end.lastSeq)
		v.line(m.now(), clsError, "⚠ live stream lost after seq "+strconv.FormatUint(msg.end.lastSeq, 10)+
			" (this TUI fell behind) — subscribing again after seq "+strconv.FormatUint(after, 10))
		v.live.gen++
		v.live.stream, v.live.recovering = nil, true
		return m.subscribeCmd(v.id, v.live.gen, v.live.c, after)
	}
	return m.detach(v, msg.end)
}

// detach ends the attachment of v after its stream ended: the session
// stopped (X here or anywhere), faulted (a lost lease: read-only, with a
// banner), or its host went away (the next listing says how it ended).
// From now on its journal is read like any other.
func (m *model) detach(v *sessView, end *streamEnd) tea.Cmd {
	c, pid, stopping := v.live.c, v.live.pid, v.live.stopping
	cmds := []tea.Cmd{m.closeClientCmd(c)}
	v.live.c, v.live.stream, v.live.recovering, v.live.stopping = nil, nil, false, false
	v.live.sending, v.live.queue, v.live.resizing, v.live.redraw = false, nil, false, false
	v.live.gen++
	v.forgetHost()
	if v.busy == busyShuttingDown || v.busy == busyInterrupting {
		v.busy = notBusy
	}
	switch end.kind {
	case endStopped:
		v.info.State = rig.StateIdle
		if !stopping { // else the shutdown's answer says it
			cmds = append(cmds, m.status.flash("session "+v.short+" was shut down by another client", clsOK))
		}
	case endFault:
		l := &leaseLost{oldEpoch: end.oldEpoch, newEpoch: end.newEpoch, holder: clean(end.holder), cause: errText(end.err)}
		l.fault = !isLeaseLoss(end.err)
		v.lost = l
		if l.fault {
			v.line(m.now(), clsError, "✗ SESSION FAULTED: "+l.cause+" — read-only")
		} else {
			v.line(m.now(), clsError, "✗ LEASE LOST: epoch "+strconv.FormatUint(l.oldEpoch, 10)+" → "+epochText(l.newEpoch)+
				" — its host no longer owns the session; read-only")
		}
		m.h.log.Warn("session fault", "session", v.id, "err", end.err)
	default:
		v.line(m.now(), clsError, "✗ detached: host pid "+strconv.Itoa(pid)+" went away ("+errText(end.err)+")")
		m.h.log.Warn("host gone", "session", v.id, "pid", pid, "err", end.err)
		cmds = append(cmds, m.status.flash("the host of "+v.short+" went away", clsError))
	}
	// A history replay still in flight (the session ended during it) ends
	// as a plain read: nothing waits for it any more.
	if v.replaying() {
		v.journal.state = journalReading
	}
	if v == m.selected() {
		cmds = append(cmds, m.ensureLoaded(v))
	}
	cmds = append(cmds, m.refreshList(), m.checkTurnLine(v))
	return tea.Batch(cmds...)
}

// onShutdown: a shutdown (X) was answered. The stream's end (the host
// sends SessionStopped, then ends it) detaches.
func (m *model) onShutdown(msg shutdownMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil {
		return nil
	}
	if v.busy == busyShuttingDown {
		v.busy = notBusy
	}
	if msg.err != nil {
		m.h.log.Warn("shutdown failed", "session", msg.id, "err", msg.err)
		return m.status.flash("shutdown of "+v.short+": "+errText(msg.err), clsError)
	}
	return m.status.flash("shut down "+v.short+" cleanly", clsOK)
}

// breakSummary says in a few words what a lease break (B) did, for the
// status bar.
func breakSummary(b *rig.BreakResult) string {
	e := strconv.FormatUint(b.Epoch, 10)
	switch {
	case !b.Held:
		return "the lease was free: nothing broken"
	case b.Fenced:
		return "lease broken at epoch " + e + ", journal fenced"
	case b.FenceErr != nil:
		return "lease broken at epoch " + e + ", journal NOT fenced"
	}
	return "lease broken at epoch " + e
}

// breakLine says what a lease break (B) did, for the events pane: the
// epoch it took, whether the journal was fenced before the release, and
// whose lease it was.
func breakLine(b *rig.BreakResult) (string, lineClass) {
	if !b.Held {
		return "⚠ lease break: the lease was free (epoch " + strconv.FormatUint(b.PreviousEpoch, 10) + "), nothing was broken", clsRestore
	}
	who := "another process"
	if b.PreviousHolder.PID != 0 || b.PreviousHolder.Host != "" {
		who = holderText(b.PreviousHolder)
	}
	line, cls := "⚠ lease broken at epoch "+strconv.FormatUint(b.Epoch, 10), clsRestore
	switch {
	case b.Fenced:
		line += ": journal fenced before the release"
	case b.FenceErr != nil:
		line, cls = line+": journal NOT fenced ("+errText(b.FenceErr)+")", clsError
	default:
		line += " (no journal to fence)"
	}
	return line + "; it was held by " + who + " at epoch " + strconv.FormatUint(b.PreviousEpoch, 10), cls
}

// isLeaseLoss says whether a fault is a lost lease (rather than a store
// that cannot persist): explain's kind lease_lost, the host's report or
// the runtime's own error.
func isLeaseLoss(err error) bool { return explain.Explain(err).Kind == explain.KindLeaseLost }

func epochText(e uint64) string {
	if e == 0 {
		return "a newer epoch"
	}
	return strconv.FormatUint(e, 10)
}
