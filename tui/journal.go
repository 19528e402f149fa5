package tui

import (
	"strconv"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/rig"
)

// Reading journals (sessView.journal): a session not attached is read
// when it is shown, its history and then its tail; an attached session
// replays its history once, then its host's stream takes over (live.go).

// ensureLoaded, when v is shown: attaches to its host when one serves it
// (unless the lease was lost while attached, or attaching to that host
// failed: r attaches then), else reads its journal, its history, then its
// tail (re-armed on a timer). While a probe asks whether a host serves v,
// it waits: the answer calls it again.
func (m *model) ensureLoaded(v *sessView) tea.Cmd {
	if v == nil || v.attached() || v.busy != notBusy {
		return nil
	}
	if v.probe.pid > 0 && v.lost == nil && v.probe.noAttach != v.probe.key {
		return m.attach(v)
	}
	if v.journal.state.inFlight() || v.probe.asking {
		return nil
	}
	m.useClock++
	v.used = m.useClock
	m.evict(v)
	if v.journal.state.loaded() {
		v.journal.state = journalFollowing
	} else {
		v.journal.state = journalReading
	}
	return m.historyCmd(v.id, v.journal.gen, nil, v.lastSeq)
}

// evict forgets the journals of sessions not shown for a while, so memory
// stays bounded however many sessions are browsed.
func (m *model) evict(keep *sessView) {
	const maxLoaded = 16
	var loaded []*sessView
	for _, v := range m.sessions {
		if !v.attached() && v != keep && v.journal.state != journalUnread && v.busy == notBusy {
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

// onHistory folds a chunk of a journal read, asks for the next chunk, and
// at the end: after a replay, subscribes to the host's stream after the
// last sequence read; for a session shown and not attached, arms the tail
// timer.
func (m *model) onHistory(msg historyMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || msg.gen != v.journal.gen {
		return closeCmd(msg.rd)
	}
	for _, env := range msg.envs {
		v.apply(env)
	}
	v.flushScreen()
	m.settleScroll(v)
	v.journal.tip = max(v.journal.tip, msg.tip)
	if msg.err != nil {
		v.line(m.now(), clsError, "✗ journal read stopped after seq "+strconv.FormatUint(msg.lastSeq, 10)+": "+errText(msg.err))
		v.lastSeq = max(v.lastSeq, msg.lastSeq)
	} else if msg.more {
		if j := v.journal.jump; j > msg.lastSeq && v.replaying() {
			return tea.Batch(closeCmd(msg.rd), m.skipTo(v, msg.lastSeq, j))
		}
		return m.historyCmd(v.id, v.journal.gen, msg.rd, msg.lastSeq)
	}
	// Records that are not events (fences, commands) count too.
	v.lastSeq = max(v.lastSeq, msg.lastSeq)
	if v.replaying() {
		v.journal.state = journalRead
		if b := v.live.broke; b != nil {
			text, cls := breakLine(b)
			v.line(m.now(), cls, clean(text))
		}
		if o := v.live.outcome; o != nil {
			v.line(m.now(), clsRestore, "↻ restored here at epoch "+strconv.FormatUint(o.Epoch, 10)+": "+plural(len(o.Interrupted), "turn")+
				" interrupted, "+plural(len(o.GatesClosed), "gate")+" closed, "+commas(o.Records)+" records replayed")
		}
		if v.live.c != nil {
			return m.subscribeCmd(v.id, v.live.gen, v.live.c, v.lastSeq)
		}
		return nil
	}
	if msg.err == nil && !v.attached() && v == m.selected() && v.mayGrow() {
		v.journal.state = journalFollowing
		return tailTick(v.id, v.journal.gen)
	}
	v.journal.state = journalRead
	return nil
}

// tailReplay is how many of the last records an attach replays after
// the journal's first chunk: as many as the events pane keeps lines, so
// its scrollback is what a full replay would leave, while a journal of a
// million records is on screen as fast as one of ten thousand.
const tailReplay = ringCapacity

// skipTo jumps an attach's replay from the first chunk (read up to seq
// from) to the records after seq to: the host's status stands in for what
// the records between say (the running turn, the open gate, the number
// of turns), and a line says what was skipped and where to read it.
func (m *model) skipTo(v *sessView, from, to uint64) tea.Cmd {
	v.journal.jump = 0
	st := v.live.status
	f := &v.f
	f.turns = max(f.turns, st.Turns)
	f.openTurn, f.openGate = nil, nil
	if t := st.Turn; t != nil {
		f.openTurn = &openTurn{id: t.ID, index: t.Index, input: t.Input, started: t.Started}
	}
	if g := st.Gate; g != nil {
		f.openGate = &openGate{id: g.ID, prompt: g.Prompt, at: g.Opened}
	}
	v.line(m.now(), clsMuted, "⋯ records "+strconv.FormatUint(from+1, 10)+"–"+strconv.FormatUint(to, 10)+
		" not replayed here: looprig log "+v.short+" shows them")
	v.lastSeq = to
	return m.historyCmd(v.id, v.journal.gen, nil, to)
}

// mayGrow says whether anyone may be appending to v's journal: only a
// lease holder writes, so the journal of a session idle, crashed or broken
// is not followed (a restore takes the lease, the listing shows it held,
// and onList starts following again).
func (v *sessView) mayGrow() bool {
	return v.info.State == rig.StateHeld || v.info.State == rig.StateLive
}

// onTailTick reads what followed in the journal of the session shown; a
// session no longer shown (or attached now) stops following.
func (m *model) onTailTick(msg tailTickMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || msg.gen != v.journal.gen {
		return nil
	}
	if v.attached() || v != m.selected() {
		v.journal.state = journalRead
		return nil
	}
	return m.historyCmd(v.id, v.journal.gen, nil, v.lastSeq)
}
