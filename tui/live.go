package tui

import (
	"errors"
	"strconv"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/explain"
	"looprig/rig/fault"
)

// The sessions this TUI is attached to (sessView.live): attached after a
// host was started for them (n, r, B) or when a live one is opened, and
// followed through that host alone (rig.Follow): the host replays their
// history, then sends what happens, until the session stops, loses its
// lease or faults, or the host goes away.

// tailReplay is how many of the last records an attach replays of a long
// journal: as many as the events pane keeps lines, so its scrollback is
// what a full replay would leave, while a journal of a million records is
// on screen as fast as one of ten thousand. The host's status stands in
// for the records before them.
const tailReplay = ringCapacity

// onAttached: this TUI is attached to a session's host, and follows it
// through the host from the start of its journal, or, when that is long,
// from its last records.
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
		return m.h.closeClientCmd(msg.c)
	}
	after := v.attachTo(msg, m.h.tail, m.now())
	m.list.resort(m.sessions)
	pid := strconv.Itoa(msg.pid)
	var note string
	switch {
	case msg.created:
		m.list.selectID(msg.id, m.listSpace())
		note = "created session " + v.short + " (host pid " + pid + ")"
	case msg.broke != nil && msg.outcome != nil:
		note = breakSummary(msg.broke) + "; restored " + v.short + " at epoch " + strconv.FormatUint(msg.outcome.Epoch, 10)
	case msg.outcome != nil:
		note = "restored " + v.short + " at epoch " + strconv.FormatUint(msg.outcome.Epoch, 10) + " (host pid " + pid + ")"
	default:
		note = "attached to " + v.short + " (host pid " + pid + ")"
	}
	m.list.keepVisible(m.listSpace())
	cols, rows := m.turnSize()
	return tea.Batch(
		m.h.followHostCmd(v.id, v.live.gen, msg.c, after),
		m.status.flash(note, clsOK),
		m.h.resizeTurn(v, cols, rows),
	)
}

// attachTo starts v's attachment to the host msg attached to: what the
// probes and the errors said goes, and its journal is replayed through
// the host from after (rig.ReplayStart: 0, from the start, or, of a long
// journal, from its last tail records, skipTo). A session not listed yet
// is listed as the host's status says.
func (v *sessView) attachTo(msg attachedMsg, tail uint64, now time.Time) (after uint64) {
	v.live = attachment{c: msg.c, pid: msg.pid, gen: v.live.gen + 1, status: msg.status, outcome: msg.outcome, broke: msg.broke}
	v.busy, v.failed, v.lost = notBusy, nil, nil
	v.listing.probe.pid, v.listing.probe.noAttach = msg.pid, ""
	v.resetJournal()
	v.journal.state, v.journal.tip = journalReplaying, msg.status.LastEvent
	if after = rig.ReplayStart(msg.status.Tip, tail); after > 0 {
		v.skipTo(after, now)
	}
	if !v.listing.listed {
		v.listing.info = rig.SessionInfo{ID: msg.id, State: rig.StateHeld, Title: msg.status.Title,
			Profile: msg.status.Profile, Engine: msg.status.Engine, Epoch: msg.status.Epoch,
			Created: now, Updated: now}
		v.listing.rawTitle, v.listing.title = msg.status.Title, clean(msg.status.Title)
	}
	v.listing.info.Epoch = max(v.listing.info.Epoch, msg.status.Epoch)
	return after
}

// skipTo starts an attach's replay after seq to: the host's status stands
// in for what the records before say (the running turn, the open gate,
// the number of turns), and a line says what was skipped and where to
// read it.
func (v *sessView) skipTo(to uint64, now time.Time) {
	st := v.live.status
	v.transcript.fold = rig.State{Title: st.Title, Profile: st.Profile, Placement: st.Placement, Root: st.Root,
		LoopID: st.LoopID, Engine: st.Engine, Turns: st.Turns, NextIndex: st.Turns, LastSeq: to}
	if t := st.Turn; t != nil {
		v.transcript.fold.Open = []rig.OpenTurn{{ID: t.ID, Index: t.Index, Input: t.Input, Started: t.Started}}
	}
	if g := st.Gate; g != nil {
		v.transcript.fold.Gates = []rig.OpenGate{{ID: g.ID, TurnID: g.TurnID, Prompt: g.Prompt, Opened: g.Opened}}
	}
	if a := st.Attention; a != nil {
		v.transcript.fold.Attention = &rig.Attention{TurnID: a.TurnID, Reason: a.Reason, Text: a.Text, Since: a.Since, At: a.At, Seq: a.Seq}
	}
	v.transcript.line(now, clsMuted, "⋯ records 1–"+strconv.FormatUint(to, 10)+" not replayed here: looprig log "+v.short+" shows them")
	v.transcript.lastSeq = to
}

// onSubscribed: an attached session is followed; its events are read from
// now on.
func (m *model) onSubscribed(msg subscribedMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || msg.gen != v.live.gen || v.live.c != msg.c {
		return closeFollowerCmd(msg.follower)
	}
	if msg.err != nil {
		return m.detach(v, &streamEnd{kind: endHostGone, err: msg.err})
	}
	v.live.follower = msg.follower
	v.replayed(m.now())
	return tea.Batch(m.h.runPending(v), m.h.streamCmd(v.id, v.live.gen, v.live.c, msg.follower, v.live.status.Epoch, v.streamLimit()))
}

// onStream folds what the follower read and reads on; at its end, it
// detaches.
func (m *model) onStream(msg streamMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || msg.gen != v.live.gen || v.live.follower == nil {
		return nil
	}
	v.transcript.applyAll(msg.envs)
	if msg.recovered > 0 {
		v.transcript.line(m.now(), clsMuted, "⋯ this TUI fell behind its host's events; they were read again from the journal: nothing was missed")
	}
	v.replayed(m.now())
	if m.input.endedWith(v) {
		m.input = nil
	}
	cmds := []tea.Cmd{m.h.runPending(v)}
	if msg.end != nil {
		return tea.Batch(append(cmds, m.detach(v, msg.end))...)
	}
	return tea.Batch(append(cmds, m.h.streamCmd(v.id, v.live.gen, v.live.c, v.live.follower, v.live.status.Epoch, v.streamLimit()))...)
}

// streamLimit is how many events the next read of v's follower may bring:
// replayBatch while it replays its history, streamBatch once live.
func (v *sessView) streamLimit() int {
	if v.replaying() {
		return replayBatch
	}
	return streamBatch
}

// replayed ends an attach's replay once the events folded reach the last
// one the host had when attached: what follows is live. It says what the
// lease break and the restore that started the host did.
func (v *sessView) replayed(now time.Time) {
	if !v.replaying() || v.transcript.lastSeq < v.journal.tip {
		return
	}
	v.journal.state = journalRead
	if b := v.live.broke; b != nil {
		text, cls := breakLine(b)
		v.transcript.line(now, cls, clean(text))
	}
	if o := v.live.outcome; o != nil {
		v.transcript.line(now, clsRestore, "↻ restored here at epoch "+strconv.FormatUint(o.Epoch, 10)+": "+plural(len(o.Interrupted), "turn")+
			" interrupted, "+plural(len(o.GatesClosed), "gate")+" closed, "+commas(o.Records)+" records replayed")
		if w := o.Workspace.Summary(); w != "" {
			v.transcript.line(now, clsRestore, "↻ "+w) // line() cleans it
		}
	}
}

// detach ends the attachment of v after its stream ended: the session
// stopped (X here or anywhere), faulted (a lost lease: read-only, with a
// banner), or its host went away (the next listing says how it ended).
// From now on its journal is read like any other.
func (m *model) detach(v *sessView, end *streamEnd) tea.Cmd {
	was := v.detach(end, m.now())
	cmds := []tea.Cmd{m.h.closeClientCmd(was.c)}
	switch end.kind {
	case endStopped:
		if !was.stopping { // else the shutdown's answer says it
			cmds = append(cmds, m.status.flash("session "+v.short+" was shut down by another client", clsOK))
		}
	case endFault:
		m.h.log.Warn("session fault", "session", v.id, "err", end.err)
	default:
		m.h.log.Warn("host gone", "session", v.id, "pid", was.pid, "err", end.err)
		cmds = append(cmds, m.status.flash("the host of "+v.short+" went away", clsError))
	}
	if v == m.list.selected() {
		cmds = append(cmds, m.ensureLoaded(v))
	}
	if m.input.endedWith(v) {
		m.input = nil
	}
	return tea.Batch(append(cmds, m.refreshList())...)
}

// detach ends v's attachment after its stream ended (end), and returns it
// as it was. The transcript says how it ended; a lost lease or a fault
// makes v read-only (lost); a replay cut short goes on from the journal.
func (v *sessView) detach(end *streamEnd, now time.Time) (was attachment) {
	was = v.live
	v.live.end()
	v.listing.forgetHost()
	if v.busy == busyShuttingDown || v.busy == busyInterrupting {
		v.busy = notBusy
	}
	switch end.kind {
	case endStopped:
		v.listing.info.State = rig.StateIdle
	case endFault:
		l := &leaseLost{oldEpoch: end.oldEpoch, newEpoch: end.newEpoch, holder: clean(end.holder), cause: errText(end.err)}
		l.fault = !isLeaseLoss(end.err)
		v.lost = l
		if l.fault {
			v.transcript.line(now, clsError, "✗ SESSION FAULTED: "+l.cause+" — read-only")
		} else {
			v.transcript.line(now, clsError, "✗ LEASE LOST: epoch "+strconv.FormatUint(l.oldEpoch, 10)+" → "+epochText(l.newEpoch)+
				" — its host no longer owns the session; read-only")
		}
	default:
		v.transcript.line(now, clsError, "✗ detached: host pid "+strconv.Itoa(was.pid)+" went away ("+errText(end.err)+")")
	}
	// A history replay cut short (the session ended during it) goes on
	// from the journal.
	if v.replaying() {
		v.journal.state = journalUnread
	}
	return was
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
	if msg.err != nil && !stoppedAnyway(msg.err, v) {
		m.h.log.Warn("shutdown failed", "session", msg.id, "err", msg.err)
		return m.status.flash("shutdown of "+v.short+": "+errText(msg.err), clsError)
	}
	return m.status.flash("shut down "+v.short+" cleanly", clsOK)
}

// stoppedAnyway says whether a shutdown whose reply did not come (err) did
// its work: the host stops the session, says goodbye and closes the
// connection, and the client closes on the stream's end; either may beat
// the reply. The session's own events say whether it stopped.
func stoppedAnyway(err error, v *sessView) bool {
	var closed *host.HostClosedError
	switch {
	case errors.As(err, &closed):
		return closed.Reason == host.ReasonSessionStopped && closed.Err == nil
	case errors.Is(err, host.ErrClientClosed):
		return v.transcript.fold.Stopped
	}
	return false
}

// breakSummary says in a few words what a lease break (B) did, for the
// status bar.
func breakSummary(b *rig.BreakResult) string {
	e := strconv.FormatUint(b.Epoch, 10)
	switch {
	case !b.Held && b.Epoch > 0:
		return "the lease was free; took it at epoch " + e + " to stop an earlier turn"
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
	if !b.Held && b.Epoch == 0 {
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
	if b.Held {
		line += "; it was held by " + who + " at epoch " + strconv.FormatUint(b.PreviousEpoch, 10)
	} else {
		line += "; it was free"
	}
	turn, ok := brokenTurnText(b)
	if !ok {
		cls = clsError
	}
	return line + turn, cls
}

// brokenTurnText says what a lease break did about the old holder's
// running turn ("" when none was recorded); false when that turn may
// still run on this machine.
func brokenTurnText(b *rig.BreakResult) (string, bool) {
	t := b.Turn
	if t == nil {
		if b.TurnErr != nil {
			return "; its running turn could not be looked for (" + errText(b.TurnErr) + ")", false
		}
		return "", true
	}
	n, pg := strconv.Itoa(t.Index), strconv.Itoa(t.PGID)
	switch {
	case !t.Here:
		return "; its turn " + n + " runs on " + clean(t.Host) + " (process group " + pg + "): it stops once that holder notices the loss", true
	case t.Signalled && t.Gone && t.Killed:
		return "; stopped its turn " + n + " (process group " + pg + ", SIGKILL after the grace)", true
	case t.Signalled && t.Gone:
		return "; stopped its turn " + n + " (process group " + pg + ")", true
	case t.Gone:
		return "; its turn " + n + " had ended", true
	case t.Signalled:
		return "; signalled its turn " + n + " (process group " + pg + "), which still runs", false
	case b.TurnErr != nil:
		return "; its turn " + n + " (process group " + pg + ") could not be stopped (" + errText(b.TurnErr) + ")", false
	}
	return "; process group " + pg + " of its turn " + n + " no longer carries the turn's environment: left alone", true
}

// isLeaseLoss says whether a fault is a lost lease (rather than a store
// that cannot persist): explain's kind lease_lost, the host's report or
// the runtime's own error.
func isLeaseLoss(err error) bool { return explain.Explain(err).Kind == fault.KindLeaseLost }

func epochText(e uint64) string {
	if e == 0 {
		return "a newer epoch"
	}
	return strconv.FormatUint(e, 10)
}
