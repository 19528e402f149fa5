package tui

import (
	"context"
	"strconv"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/google/uuid"

	"looprig/rig"
)

// Reading journals (sessView.journal): a session not attached is read
// when it is shown, its history, then, while it may grow and stays shown,
// followed (rig.Follow over its journal). An attached session is followed
// through its host alone (live.go): one source at a time.

// journalState is where the reading of a session's events stands. A
// session not attached is read when it is shown: its history, then what
// follows while it stays selected. An attached session replays its
// history through its host, then goes on live.
type journalState int

const (
	journalUnread    journalState = iota // nothing read, or forgotten
	journalReading                       // the history is being read
	journalReplaying                     // attached: the host replays the history
	journalRead                          // read up to lastSeq; nothing in flight
	journalFollowing                     // read, and what follows is being read
)

func (s journalState) String() string {
	switch s {
	case journalUnread:
		return "unread"
	case journalReading:
		return "reading"
	case journalReplaying:
		return "replaying"
	case journalRead:
		return "read"
	case journalFollowing:
		return "following"
	}
	return "journalState(" + strconv.Itoa(int(s)) + ")"
}

// loaded says whether the journal was read to its end at least once.
func (s journalState) loaded() bool { return s == journalRead || s == journalFollowing }

// inFlight says whether a read is in flight or armed: no other may start.
func (s journalState) inFlight() bool {
	return s == journalReading || s == journalReplaying || s == journalFollowing
}

// journalReader is the reading of a session's journal.
type journalReader struct {
	state journalState
	gen   int    // bumped when the journal is forgotten: reads in flight for it are dropped
	tip   uint64 // the sequence the running read heads for (the replay's progress)
	// tail follows the journal once read, while the session is shown (a
	// tailMsg's command has it meanwhile); nil when it is not followed
	tail *rig.Follower
	used int // LRU clock of the last time it was shown (model.evict)
}

// forget forgets the reading: it starts over, and reads in flight for
// what it read are dropped.
func (j *journalReader) forget() {
	j.state, j.tail = journalUnread, nil
	j.gen++
}

// ensureLoaded, when v is shown: attaches to its host when one serves it
// (unless the lease was lost while attached, or attaching to that host
// failed: r attaches then), else reads its journal, its history, then
// follows it. While a probe asks whether a host serves v,
// it waits: the answer calls it again.
func (m *model) ensureLoaded(v *sessView) tea.Cmd {
	if v == nil || v.attached() || v.busy != notBusy {
		return nil
	}
	if v.listing.probe.pid > 0 && v.lost == nil && v.listing.probe.noAttach != v.listing.probe.key {
		return m.attach(v)
	}
	if v.journal.state.inFlight() || v.listing.probe.asking {
		return nil
	}
	m.useClock++
	v.journal.used = m.useClock
	m.evict(v)
	if v.journal.state.loaded() {
		return m.followJournal(v)
	}
	v.journal.state = journalReading
	return m.h.historyCmd(v.id, v.journal.gen, nil, v.transcript.lastSeq)
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
			if v.journal.used < loaded[oldest].journal.used {
				oldest = i
			}
		}
		loaded[oldest].resetJournal()
		loaded = append(loaded[:oldest], loaded[oldest+1:]...)
	}
}

// onHistory folds a chunk of a journal read and asks for the next chunk;
// at the end, it follows the journal of a session shown that may grow.
func (m *model) onHistory(msg historyMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || msg.gen != v.journal.gen || v.attached() {
		return closeCmd(msg.rd)
	}
	v.transcript.applyAll(msg.envs)
	v.journal.tip = max(v.journal.tip, msg.tip)
	// Records that are not events (fences, commands) count too.
	v.transcript.lastSeq = max(v.transcript.lastSeq, msg.lastSeq)
	switch {
	case msg.err != nil:
		v.transcript.line(m.now(), clsError, "✗ journal read stopped after seq "+strconv.FormatUint(msg.lastSeq, 10)+": "+errText(msg.err))
	case msg.more:
		return m.h.historyCmd(v.id, v.journal.gen, msg.rd, msg.lastSeq)
	case v == m.selected():
		return m.followJournal(v)
	}
	v.journal.state = journalRead
	return nil
}

// followJournal follows what is appended to the journal of v, read to its
// end, while it is shown, not attached, and may grow (a rig.Follower over
// its journal, kept across the reads); else the reading rests.
func (m *model) followJournal(v *sessView) tea.Cmd {
	if v.attached() || v != m.selected() || !v.listing.mayGrow() {
		v.journal.state, v.journal.tail = journalRead, nil
		return nil
	}
	if v.journal.tail == nil {
		uid, err := uuid.Parse(v.id)
		if err != nil {
			v.journal.state = journalRead
			return nil
		}
		// No I/O: a journal feed opens nothing until it is read.
		f, err := rig.Follow(context.Background(), rig.JournalFeed(m.h.store, uid, tailEvery), v.transcript.lastSeq)
		if err != nil {
			v.journal.state = journalRead
			return nil
		}
		f.Limit(m.h.chunk)
		v.journal.tail = f
	}
	v.journal.state = journalFollowing
	return m.h.tailCmd(v.id, v.journal.gen, v.journal.tail)
}

// mayGrow says whether anyone may be appending to v's journal: only a
// lease holder writes, so the journal of a session idle, crashed or broken
// is not followed (a restore takes the lease, the listing shows it held,
// and onList starts following again).
func (l *listing) mayGrow() bool {
	return l.info.State == rig.StateHeld || l.info.State == rig.StateLive
}

// onTail folds what followed in the journal of the session shown and
// reads on; a session no longer shown (or attached now) stops following.
func (m *model) onTail(msg tailMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || msg.gen != v.journal.gen || v.journal.tail != msg.f {
		return nil
	}
	v.transcript.applyAll(msg.envs)
	if msg.err != nil {
		v.transcript.line(m.now(), clsError, "✗ journal read stopped after seq "+strconv.FormatUint(v.transcript.lastSeq, 10)+": "+errText(msg.err))
		v.journal.state, v.journal.tail = journalRead, nil
		return nil
	}
	return tea.Batch(m.checkTurnLine(v), m.followJournal(v))
}
