package tui

import (
	"errors"
	"strconv"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/rig"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// The sessions hosted here (sessView.live): hosted after a create or a
// restore, their history replayed, then their live stream read until they
// shut down, lose their lease or fault.

// onHosted: a session created or restored here is live. Its history is
// replayed first; the live stream waits for the replay (onHistory).
func (m *model) onHosted(msg hostedMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil {
		v = newSessView(msg.id)
		m.sessions[msg.id] = v
	}
	if msg.outcome == nil && m.creating > 0 {
		m.creating--
	}
	if m.quitting != "" {
		// Quit began meanwhile: Run shuts it down with the others.
		return nil
	}
	v.live = hosting{sess: msg.sess, sub: msg.sub, subGen: v.live.subGen + 1, status: msg.status, outcome: msg.outcome, broke: msg.broke}
	v.busy, v.failed, v.lost = notBusy, nil, nil
	v.resetJournal()
	v.journal.state, v.journal.tip = journalReplaying, msg.status.Tip
	if !v.listed {
		v.info = rig.SessionInfo{ID: msg.id, State: rig.StateLive, Title: msg.status.Title,
			Profile: msg.status.Profile, Engine: msg.status.Engine, Epoch: msg.status.Epoch,
			Created: m.now(), Updated: m.now()}
		v.rawTitle, v.title = msg.status.Title, clean(msg.status.Title)
	}
	v.info.State = rig.StateLive
	v.info.Epoch = max(v.info.Epoch, msg.status.Epoch)
	m.resort()
	var note string
	switch {
	case msg.outcome == nil:
		m.selectID(msg.id)
		note = "created session " + v.short
	case msg.broke != nil:
		note = breakSummary(msg.broke) + "; restored " + v.short + " at epoch " + strconv.FormatUint(msg.outcome.Epoch, 10)
	default:
		note = "restored " + v.short + " at epoch " + strconv.FormatUint(msg.outcome.Epoch, 10)
	}
	m.keepVisible()
	return tea.Batch(
		m.historyCmd(v.id, v.journal.gen, nil, 0),
		m.watchCmd(v.id, msg.sess),
		m.status.flash(note, clsOK),
	)
}

// onSub folds what the live stream had queued and reads on; a stream lost
// because this TUI fell behind is replaced (recoverCmd).
func (m *model) onSub(msg subMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || msg.gen != v.live.subGen {
		return nil
	}
	for _, env := range msg.envs {
		v.apply(env)
	}
	m.settleScroll(v)
	v.live.dropped = max(v.live.dropped, msg.dropped)
	if !msg.closed {
		return m.subCmd(v.id, v.live.subGen, v.live.sub)
	}
	var loss *hub.SubscriptionLossError
	if errors.As(msg.err, &loss) && v.hosted() {
		v.line(m.now(), clsError, "⚠ live stream lost after seq "+strconv.FormatUint(loss.LastSeq, 10)+
			" (this TUI fell behind) — replaying the journal from seq "+strconv.FormatUint(v.lastSeq, 10))
		v.live.subGen++
		v.live.sub = nil
		return m.recoverCmd(v.id, v.live.subGen, v.live.sess, v.lastSeq)
	}
	v.live.sub = nil
	return nil
}

// onRecovered: a lost stream was replaced and the gap replayed.
func (m *model) onRecovered(msg recoveredMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || msg.gen != v.live.subGen {
		if msg.sub != nil {
			msg.sub.Close()
		}
		return nil
	}
	before := v.lastSeq
	for _, env := range msg.envs {
		v.apply(env)
	}
	m.settleScroll(v)
	if msg.err != nil {
		v.line(m.now(), clsError, "✗ journal replay failed: "+errText(msg.err))
	} else {
		v.line(m.now(), clsOK, "✓ recovered: replayed seq "+strconv.FormatUint(before+1, 10)+"…"+strconv.FormatUint(v.lastSeq, 10)+
			" from the journal; live again")
	}
	v.live.sub = msg.sub
	return m.subCmd(v.id, v.live.subGen, v.live.sub)
}

// onEnded: a hosted session stopped accepting work. A fault (a lost
// lease, a store that cannot persist) turns it read-only with a banner,
// and what is left of it is shut down.
func (m *model) onEnded(msg endedMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || v.live.sess != msg.sess || msg.fault == nil {
		return nil // a clean shutdown: shutdownMsg handles it
	}
	l := &leaseLost{oldEpoch: msg.oldEpoch, newEpoch: msg.newEpoch, holder: clean(msg.holder), cause: errText(msg.fault)}
	l.fault = !isLeaseLoss(msg.fault)
	v.lost = l
	if l.fault {
		v.line(m.now(), clsError, "✗ SESSION FAULTED: "+l.cause+" — read-only")
	} else {
		v.line(m.now(), clsError, "✗ LEASE LOST: epoch "+strconv.FormatUint(l.oldEpoch, 10)+" → "+epochText(l.newEpoch)+
			" — this TUI no longer owns the session; read-only")
	}
	m.h.log.Warn("session fault", "session", msg.id, "err", msg.fault)
	v.busy = busyReleasing
	return tea.Batch(m.shutdownCmd(v.id, msg.sess), m.spin.start(), m.refreshList())
}

// onShutdown: a hosted session was shut down (X, or after a fault). From
// now on its journal is read like any other.
func (m *model) onShutdown(msg shutdownMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || v.live.sess != msg.sess {
		return nil
	}
	v.live.sess, v.live.sub, v.busy = nil, nil, notBusy
	v.live.subGen++
	v.info.State = rig.StateIdle
	var cmd tea.Cmd
	switch {
	case v.lost != nil:
		v.info.State = rig.StateHeld
	case msg.err != nil:
		cmd = m.status.flash("shutdown of "+v.short+": "+errText(msg.err), clsError)
	default:
		cmd = m.status.flash("shut down "+v.short+" cleanly", clsOK)
	}
	// A history replay still in flight (the session ended during it) ends
	// as a plain read: nothing waits for it any more.
	if v.replaying() {
		v.journal.state = journalReading
	}
	cmds := []tea.Cmd{cmd}
	if v == m.selected() {
		cmds = append(cmds, m.ensureLoaded(v))
	}
	cmds = append(cmds, m.refreshList())
	return tea.Batch(cmds...)
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

func isLeaseLoss(err error) bool {
	var jl *journal.JournalLeaseLostError
	var ll *storage.LeaseLostError
	var fe *journal.FencedError
	var rl *rig.WorkspaceRootLeaseLostError
	return errors.As(err, &jl) || errors.As(err, &ll) || errors.As(err, &fe) || errors.As(err, &rl)
}

func epochText(e uint64) string {
	if e == 0 {
		return "a newer epoch"
	}
	return strconv.FormatUint(e, 10)
}
