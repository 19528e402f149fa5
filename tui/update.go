package tui

import (
	"errors"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/rig"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// Update folds a message into the model. It never blocks and never does
// I/O: everything slow is returned as a command.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd := m.update(msg)
	return m, cmd
}

func (m *model) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.keepVisible()
		return nil
	case tea.KeyMsg:
		return m.onKey(msg)
	case listTickMsg:
		if m.listing || m.quitting != "" {
			return nil
		}
		m.listing = true
		return m.listCmd()
	case listMsg:
		return m.onList(msg)
	case hostedMsg:
		return m.onHosted(msg)
	case failedMsg:
		return m.onFailed(msg)
	case deletedMsg:
		return m.onDeleted(msg)
	case historyMsg:
		return m.onHistory(msg)
	case tailTickMsg:
		v := m.sessions[msg.id]
		if v == nil || msg.gen != v.histGen || v.live != nil || v != m.selected() {
			if v != nil && msg.gen == v.histGen {
				v.loading = false
			}
			return nil
		}
		return m.historyCmd(v.id, v.histGen, nil, v.lastSeq)
	case subMsg:
		return m.onSub(msg)
	case recoveredMsg:
		return m.onRecovered(msg)
	case endedMsg:
		return m.onEnded(msg)
	case opMsg:
		if v := m.sessions[msg.id]; v != nil && msg.op == "interrupt" {
			v.busy = ""
		}
		if msg.err != nil {
			return m.flash(msg.op+" failed: "+errText(msg.err), clsError)
		}
		return m.flash(msg.note, clsOK)
	case shutdownMsg:
		return m.onShutdown(msg)
	case quitMsg:
		m.quitErr = msg.err
		return tea.Quit
	case settleMsg:
		if msg.gen == m.settleGen {
			return m.ensureLoaded(m.selected())
		}
		return nil
	case flashOffMsg:
		if msg.gen == m.flashGen {
			m.flashMsg = ""
		}
		return nil
	case spinMsg:
		if msg.gen != m.spinGen {
			return nil
		}
		m.frameNo++
		if m.busy() {
			return spin(m.spinGen)
		}
		m.spinning = false
		return nil
	case themeSavedMsg:
		if msg.err != nil {
			m.h.log.Warn("theme choice not saved", "err", msg.err)
			return m.flash("theme choice not saved: "+errText(msg.err), clsError)
		}
		return nil
	}
	return nil
}

// ---- listing --------------------------------------------------------------------

func (m *model) onList(msg listMsg) tea.Cmd {
	m.listing = false
	m.lastListDur = msg.took
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
		if !seen[id] && v.live == nil && v.busy == "" && v.lost == nil {
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

// ensureLoaded starts reading the journal of v when it is shown and not
// hosted here: its history, then its tail (re-armed on a timer).
func (m *model) ensureLoaded(v *sessView) tea.Cmd {
	if v == nil || v.live != nil || v.loading || v.busy != "" {
		return nil
	}
	m.useClock++
	v.used = m.useClock
	m.evict(v)
	v.loading = true
	return m.historyCmd(v.id, v.histGen, nil, v.lastSeq)
}

// evict forgets the journals of sessions not shown for a while, so memory
// stays bounded however many sessions are browsed.
func (m *model) evict(keep *sessView) {
	const maxLoaded = 16
	var loaded []*sessView
	for _, v := range m.sessions {
		if v.live == nil && v != keep && (v.loaded || v.loading) && v.busy == "" {
			loaded = append(loaded, v)
		}
	}
	for len(loaded) >= maxLoaded {
		oldest := 0
		for i, v := range loaded {
			if v.used < loaded[oldest].used {
				oldest = i
			}
		}
		loaded[oldest].resetJournal()
		loaded = append(loaded[:oldest], loaded[oldest+1:]...)
	}
}

// ---- hosting ------------------------------------------------------------------------

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
	v.live, v.sub, v.status, v.outcome = msg.sess, msg.sub, msg.status, msg.outcome
	v.busy, v.restoreErr, v.lost, v.lostSeen, v.readOnly = "", nil, nil, false, ""
	v.dropped = 0
	v.subGen++
	v.resetJournal()
	v.replaying, v.loading, v.histTip = true, true, msg.status.Tip
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
	case msg.broke > 0:
		note = "lease broken; restored " + v.short + " at epoch " + u64(msg.outcome.Epoch)
	default:
		note = "restored " + v.short + " at epoch " + u64(msg.outcome.Epoch)
	}
	m.keepVisible()
	return tea.Batch(
		m.historyCmd(v.id, v.histGen, nil, 0),
		m.watchCmd(v.id, msg.sess),
		m.flash(note, clsOK),
	)
}

func (m *model) onFailed(msg failedMsg) tea.Cmd {
	m.h.log.Warn(msg.op+" failed", "session", msg.id, "err", msg.err)
	if msg.op == "create" && m.creating > 0 {
		m.creating--
	}
	if msg.id == "" {
		m.globalErr = &opFailure{op: msg.op, err: msg.err}
		return m.flash(msg.op+" failed", clsError)
	}
	v := m.sessions[msg.id]
	if v == nil {
		v = newSessView(msg.id)
		m.sessions[msg.id] = v
		m.resort()
	}
	v.busy = ""
	v.restoreErr, v.failedOp = msg.err, msg.op
	// The restore may have written (RestoreErrored) or marked the catalog
	// broken: read the journal and the listing again.
	v.resetJournal()
	cmds := []tea.Cmd{m.flash(msg.op+" of "+v.short+" failed", clsError)}
	if v == m.selected() {
		cmds = append(cmds, m.ensureLoaded(v))
	}
	if !m.listing {
		m.listing = true
		cmds = append(cmds, m.listCmd())
	}
	return tea.Batch(cmds...)
}

func (m *model) onDeleted(msg deletedMsg) tea.Cmd {
	short := rig.ShortID(msg.id)
	if v := m.sessions[msg.id]; v != nil {
		v.histGen++ // a journal read in flight is for a session that is gone
		delete(m.sessions, msg.id)
		m.resort()
		m.keepVisible()
	}
	cmds := []tea.Cmd{m.flash("deleted "+short, clsOK), m.ensureLoaded(m.selected())}
	if !m.listing {
		m.listing = true
		cmds = append(cmds, m.listCmd())
	}
	return tea.Batch(cmds...)
}

func (m *model) onHistory(msg historyMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || msg.gen != v.histGen {
		return closeCmd(msg.rp)
	}
	for _, env := range msg.envs {
		v.apply(env)
	}
	m.settleScroll(v)
	v.histTip = max(v.histTip, msg.tip)
	if msg.err != nil {
		v.note(m.now(), clsError, "✗ journal read stopped after seq "+u64(msg.lastSeq)+": "+errText(msg.err))
		v.lastSeq = max(v.lastSeq, msg.lastSeq)
	} else if msg.more {
		return m.historyCmd(v.id, v.histGen, msg.rp, msg.lastSeq)
	}
	// Records that are not events (fences, commands) count too.
	v.lastSeq = max(v.lastSeq, msg.lastSeq)
	v.loaded = true
	if v.replaying {
		v.replaying, v.loading = false, false
		if o := v.outcome; o != nil {
			v.note(m.now(), clsRestore, "↻ restored here at epoch "+u64(o.Epoch)+": "+plural(len(o.Interrupted), "turn")+
				" interrupted, "+plural(len(o.GatesClosed), "gate")+" closed, "+commas(o.Records)+" records replayed")
		}
		if v.sub != nil {
			return m.subCmd(v.id, v.subGen, v.sub)
		}
		return nil
	}
	if msg.err != nil {
		v.loading = false
		return nil
	}
	if v.live == nil && v == m.selected() {
		return tailTick(v.id, v.histGen)
	}
	v.loading = false
	return nil
}

func (m *model) onSub(msg subMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || msg.gen != v.subGen {
		return nil
	}
	for _, env := range msg.envs {
		v.apply(env)
	}
	m.settleScroll(v)
	v.dropped = max(v.dropped, msg.dropped)
	if !msg.closed {
		return m.subCmd(v.id, v.subGen, v.sub)
	}
	var loss *hub.SubscriptionLossError
	if errors.As(msg.err, &loss) && v.live != nil {
		v.note(m.now(), clsError, "⚠ live stream lost after seq "+u64(loss.LastSeq)+" (this TUI fell behind) — replaying the journal from seq "+u64(v.lastSeq))
		v.subGen++
		v.sub = nil
		return m.recoverCmd(v.id, v.subGen, v.live, v.lastSeq)
	}
	v.sub = nil
	return nil
}

func (m *model) onRecovered(msg recoveredMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || msg.gen != v.subGen {
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
		v.note(m.now(), clsError, "✗ journal replay failed: "+errText(msg.err))
	} else {
		v.note(m.now(), clsOK, "✓ recovered: replayed seq "+u64(before+1)+"…"+u64(v.lastSeq)+" from the journal; live again")
	}
	v.sub = msg.sub
	return m.subCmd(v.id, v.subGen, v.sub)
}

func (m *model) onEnded(msg endedMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || v.live != msg.sess || msg.fault == nil {
		return nil // a clean shutdown: shutdownMsg handles it
	}
	l := &leaseLost{oldEpoch: msg.oldEpoch, newEpoch: msg.newEpoch, holder: clean(msg.holder), cause: errText(msg.fault)}
	l.fault = !isLeaseLoss(msg.fault)
	v.lost, v.lostSeen = l, false
	if l.fault {
		v.note(m.now(), clsError, "✗ SESSION FAULTED: "+l.cause+" — read-only")
	} else {
		v.note(m.now(), clsError, "✗ LEASE LOST: epoch "+u64(l.oldEpoch)+" → "+epochText(l.newEpoch)+" — this TUI no longer owns the session; read-only")
	}
	m.h.log.Warn("session fault", "session", msg.id, "err", msg.fault)
	v.busy = "releasing"
	cmds := []tea.Cmd{m.shutdownCmd(v.id, msg.sess), m.startSpin()}
	if !m.listing {
		m.listing = true
		cmds = append(cmds, m.listCmd())
	}
	return tea.Batch(cmds...)
}

func (m *model) onShutdown(msg shutdownMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || v.live != msg.sess {
		return nil
	}
	v.live, v.sub, v.busy = nil, nil, ""
	v.subGen++
	v.info.State = rig.StateIdle
	var cmd tea.Cmd
	switch {
	case v.lost != nil:
		v.info.State = rig.StateHeld
	case msg.err != nil:
		cmd = m.flash("shutdown of "+v.short+": "+errText(msg.err), clsError)
	default:
		cmd = m.flash("shut down "+v.short+" cleanly", clsOK)
	}
	// From now on it is a journal like any other: follow it read-only.
	v.loading = false
	cmds := []tea.Cmd{cmd}
	if v == m.selected() {
		cmds = append(cmds, m.ensureLoaded(v))
	}
	if !m.listing {
		m.listing = true
		cmds = append(cmds, m.listCmd())
	}
	return tea.Batch(cmds...)
}

// settleScroll keeps a scrolled-back events view still while lines arrive.
func (m *model) settleScroll(v *sessView) {
	if !v.follow {
		v.scroll += v.added
	}
	v.added = 0
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
	return u64(e)
}

// ---- feedback ---------------------------------------------------------------------

func (m *model) flash(text string, cls uint8) tea.Cmd {
	m.flashMsg, m.flashCls = clean(text), cls
	m.flashGen++
	return flashOff(m.flashGen)
}

func (m *model) busy() bool {
	if m.quitting != "" {
		return true
	}
	for _, v := range m.sessions {
		if v.busy != "" || v.replaying {
			return true
		}
	}
	return m.creating > 0
}

func (m *model) startSpin() tea.Cmd {
	if m.spinning {
		return nil
	}
	m.spinning = true
	m.spinGen++
	return spin(m.spinGen)
}

func (m *model) selectID(id string) {
	for i, v := range m.vis {
		if v.id == id {
			m.cursor = i
			m.keepVisible()
			return
		}
	}
}

// keepVisible scrolls the list so the cursor row is shown.
func (m *model) keepVisible() {
	m.clampCursor()
	rows := m.listRows()
	if rows <= 0 {
		return
	}
	if m.cursor < m.top {
		m.top = m.cursor
	}
	if m.cursor >= m.top+rows {
		m.top = m.cursor - rows + 1
	}
	if m.top > max(0, len(m.vis)-rows) {
		m.top = max(0, len(m.vis)-rows)
	}
	if m.top < 0 {
		m.top = 0
	}
}

type opFailure struct {
	op  string
	err error
}

func lower(s string) string { return strings.ToLower(s) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }
