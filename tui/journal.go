package tui

import (
	"context"
	"strconv"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/google/uuid"

	"looprig/rig"
)

// Reading journals (sessView.journal): a session not attached is read
// when it is shown through one rig.Follower over its journal
// (rig.JournalFeed), from the first read on: its history up to the tip,
// then, while it may grow and stays shown, what is appended. An attached
// session is followed through its host alone (live.go): one source at a
// time.

// journalState is where the reading of a session's events stands.
type journalState int

const (
	journalUnread    journalState = iota // nothing read, or forgotten
	journalReading                       // its history is being read, up to the tip
	journalReplaying                     // attached: the host replays the history
	journalRead                          // read up to the tip at least once
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
	}
	return "journalState(" + strconv.Itoa(int(s)) + ")"
}

// loaded says whether the journal was read to its end at least once.
func (s journalState) loaded() bool { return s == journalRead }

// journalReader is the reading of a session's journal.
type journalReader struct {
	state journalState
	gen   int    // bumped when the journal is forgotten: reads in flight for it are dropped
	tip   uint64 // attached: the last event the host had (the replay's progress)
	// f reads the journal, not attached, from the first read on: the
	// history, then what follows; nil before, and after a read failed
	f *rig.Follower
	// reading: a command reads with f (a journalMsg answers): no other
	// read may start
	reading bool
	used    int // LRU clock of the last time it was shown (model.evict)
}

// forget forgets the reading: it starts over, and reads in flight for
// what it read are dropped.
func (j *journalReader) forget() {
	j.state, j.f, j.reading = journalUnread, nil, false
	j.gen++
}

// inFlight says whether a read is in flight (or the host replays): no
// other may start.
func (j *journalReader) inFlight() bool { return j.reading || j.state == journalReplaying }

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
	if v.journal.inFlight() || v.listing.probe.asking {
		return nil
	}
	m.useClock++
	v.journal.used = m.useClock
	evict(m.sessions, v)
	return m.readJournal(v)
}

// evict forgets the journals of sessions not shown for a while (but
// keep's), so memory stays bounded however many sessions are browsed.
func evict(sessions map[string]*sessView, keep *sessView) {
	const maxLoaded = 16
	var loaded []*sessView
	for _, v := range sessions {
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

// readJournal reads on in v's journal, not attached, through its
// Follower (made at the first read, kept to the end of following): its
// history up to the tip, shown or not, each read bounded by the read
// timeout and each step by the chunk (Follower.Limit); then, while v is
// shown and may grow, what is appended (a wait of tailWait at a time).
// Else the reading rests.
func (m *model) readJournal(v *sessView) tea.Cmd {
	j := &v.journal
	j.reading = false
	if v.attached() || j.state == journalReplaying {
		return nil
	}
	following := j.state == journalRead
	if following && (v != m.list.selected() || !v.listing.mayGrow()) {
		return nil
	}
	if j.f == nil {
		uid, err := uuid.Parse(v.id)
		if err == nil {
			// No I/O: a journal feed opens nothing until it is read.
			j.f, err = rig.Follow(context.Background(), rig.JournalFeed(m.h.store, uid, tailEvery), v.transcript.lastSeq)
		}
		if err != nil {
			m.journalStopped(v, err)
			return nil
		}
		j.f.Limit(m.h.chunk)
	}
	if j.state == journalUnread {
		j.state = journalReading
	}
	j.reading = true
	return m.h.journalCmd(v.id, j.gen, j.f, following)
}

// journalStopped says that reading v's journal failed with err: the
// reading rests, read as far as it got (a listing or showing it again
// reads on from there).
func (m *model) journalStopped(v *sessView, err error) {
	v.transcript.line(m.now(), clsError, "✗ journal read stopped after seq "+strconv.FormatUint(v.transcript.lastSeq, 10)+": "+errText(err))
	v.journal.state, v.journal.f, v.journal.reading = journalRead, nil, false
}

// mayGrow says whether anyone may be appending to v's journal: only a
// lease holder writes, so the journal of a session idle, crashed or broken
// is not followed (a restore takes the lease, the listing shows it held,
// and onList starts following again).
func (l *listing) mayGrow() bool {
	return l.info.State == rig.StateHeld || l.info.State == rig.StateLive
}

// onJournal folds what v's Follower read and reads on (readJournal).
func (m *model) onJournal(msg journalMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || msg.gen != v.journal.gen || v.journal.f != msg.f || v.attached() {
		return nil
	}
	v.transcript.applyAll(msg.envs)
	if msg.err != nil {
		m.journalStopped(v, msg.err)
		return nil
	}
	if msg.atTip {
		v.journal.state = journalRead
	}
	if m.input.endedWith(v) {
		m.input = nil
	}
	return m.readJournal(v)
}
