package tui

import (
	"sort"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/rig"
	"looprig/rig/event"
)

// What each session asks of the user: the sessions pane's TURN column
// (running, waiting at a gate, a turn whose program called for the user —
// a bell, a notification — since the user last looked, a turn that ended
// since the user last looked), the w key and the needs:me filter (the
// sessions that need the user, oldest first), and the notifications
// (notify.go). It reads the folded journal of a session attached to or
// read, else its listing row (the catalog keeps the last end, the pending
// call and when the open turn and gate began).
//
// A turn's call is cleared by the runtime's one rule (rig.State): the user
// looked (AttentionSeen, which this TUI sends through the session's host
// once the session is the selected one and attached: seeAttention), its
// turn ended or the session stopped. The turn ends of seen.json are this
// TUI's own, per user; a call is the session's, seen by whoever looks.

// needsFilter is the filter word listing only the sessions that need the
// user (a gate, an unseen turn end, a crash), oldest first.
const needsFilter = "needs:me"

// lastEnd is how v's last turn ended: the newer of the folded journal's
// and the listing's; nil before any turn ended.
func (v *sessView) lastEnd() *rig.TurnEnd {
	f, l := v.transcript.fold.LastEnd, v.listing.info.LastEnd
	switch {
	case f == nil:
		return l
	case l == nil || !l.Ended.After(f.Ended):
		return f
	}
	return l
}

// gate is v's open gate (id, prompt-free) and when it opened; none
// unless somebody holds v.
func (v *sessView) gate() (id string, since time.Time) {
	if !v.active() {
		return "", time.Time{} // a crashed session's gate waits for nobody
	}
	if v.attached() || v.journal.state.loaded() {
		if g := v.transcript.fold.Gate(); g != nil {
			return g.ID, g.Opened
		}
		return "", time.Time{}
	}
	return v.listing.info.OpenGate, v.listing.info.GateSince
}

// attention is what v's running turn asked of the user since anyone last
// looked; nil when nothing is pending, or nobody holds v (a crashed
// session's turn asks nobody).
func (v *sessView) attention() *rig.Attention {
	if !v.active() {
		return nil
	}
	if v.attached() || v.journal.state.loaded() {
		return v.transcript.fold.Attention
	}
	return v.listing.info.Attention
}

// turnSince is when v's running turn started; zero when none runs (or the
// listing predates the field).
func (v *sessView) turnSince() (time.Time, bool) {
	if !v.active() {
		return time.Time{}, false // a crashed session's open turn is not running
	}
	if v.attached() || v.journal.state.loaded() {
		if t := v.transcript.fold.Turn(); t != nil {
			return t.Started, true
		}
		return time.Time{}, false
	}
	if v.listing.info.OpenTurn == "" {
		return time.Time{}, false
	}
	return v.listing.info.TurnSince, true
}

// active says whether somebody holds v (a turn it lists open can be
// running); a crashed session's open turn is not running.
func (v *sessView) active() bool {
	s := v.state()
	return s == rig.StateLive || s == rig.StateHeld
}

// unseenEnd is v's last turn end when the user has not looked at it yet
// (seen).
func unseenEnd(seen *seenState, v *sessView) *rig.TurnEnd {
	e := v.lastEnd()
	if e == nil || seen.seen(v.id, e.TurnID) {
		return nil
	}
	return e
}

// needsUser says whether v needs the user, and since when: a gate waits,
// its turn called for the user, a turn ended since the user last looked
// (seen), or it crashed.
func needsUser(seen *seenState, v *sessView) (since time.Time, ok bool) {
	add := func(t time.Time) {
		if !ok || t.Before(since) {
			since = t
		}
		ok = true
	}
	if id, at := v.gate(); id != "" {
		add(orTime(at, v.lastActivity()))
	}
	if a := v.attention(); a != nil {
		add(orTime(a.Since, v.lastActivity()))
	}
	if e := unseenEnd(seen, v); e != nil {
		add(e.Ended)
	}
	if v.state() == rig.StateCrashed {
		add(v.listing.info.Updated)
	}
	return since, ok
}

func orTime(t, alt time.Time) time.Time {
	if t.IsZero() {
		return alt
	}
	return t
}

// needing lists the sessions that need the user, oldest first.
func (m *model) needing() []*sessView { return oldestNeeding(nil, m.list.rows, m.seen) }

// oldestNeeding appends to out the sessions of rows that need the user
// (needsUser, given what the user has seen), the one that has needed the
// user longest first; sessions that began needing at the same time keep
// their order in rows (the list's). It serves w and the needs:me filter.
func oldestNeeding(out, rows []*sessView, seen *seenState) []*sessView {
	since := map[*sessView]time.Time{}
	first := len(out)
	for _, v := range rows {
		if t, ok := needsUser(seen, v); ok {
			since[v] = t
			out = append(out, v)
		}
	}
	found := out[first:]
	sort.SliceStable(found, func(i, j int) bool { return since[found[i]].Before(since[found[j]]) })
	return out
}

// jumpToNeeds (w) moves the cursor to the session that has needed the
// user longest, and on to the next one at each press (the one shown
// stops needing the user once its end and its turn's call are seen; a
// gate or a crash needs the user until it is dealt with).
func (m *model) jumpToNeeds() tea.Cmd {
	list := m.needing()
	if len(list) == 0 {
		return m.status.flash("w: no session is waiting for you", clsMuted)
	}
	next := list[0]
	if cur := m.selected(); cur != nil {
		for i, v := range list {
			if v == cur {
				next = list[(i+1)%len(list)]
				break
			}
		}
	}
	if !m.list.shows(next) {
		m.setFilter("")
	}
	prev := m.selected()
	m.selectID(next.id)
	if m.selected() == prev {
		return nil
	}
	return m.selectionMoved()
}

// markSeen records that the user looked at the session in front of them
// (the selected one): its last end no longer marks it, nor its turn's
// call for the user (seeAttention).
func (m *model) markSeen() tea.Cmd {
	v := m.selected()
	if v == nil {
		return nil
	}
	cmd := m.seeAttention(v)
	e := v.lastEnd()
	if e == nil {
		return cmd
	}
	return tea.Batch(cmd, m.seen.mark(v.id, e.TurnID))
}

// seeAttention tells the host of v, the session in front of the user, that
// they looked at its turn's call (once per call: the sequence sent is
// kept); the AttentionSeen it journals comes back through the stream and
// clears the mark. Only an attached session, and once its replay is done
// (the call folded is the latest), can be told.
func (m *model) seeAttention(v *sessView) tea.Cmd {
	if !v.takesCommands() || v.replaying() {
		return nil
	}
	a := v.transcript.fold.Attention
	if a == nil || a.Seq <= v.live.attnSent {
		return nil
	}
	v.live.attnSent = a.Seq
	return m.h.seeAttentionCmd(v.id, v.live.c, a.Seq)
}

// attentionSeenMsg: a host was told the user looked at its session's call
// (or could not be).
type attentionSeenMsg struct {
	id  string
	err error
}

// onAttentionSeen logs a look the host could not record: the mark stays
// until the turn ends or the next look.
func (m *model) onAttentionSeen(msg attentionSeenMsg) tea.Cmd {
	if msg.err != nil {
		m.h.log.Warn("the look at a session's call was not recorded", "session", msg.id, "err", msg.err)
	}
	return nil
}

// primeSeen, at the first listing of a store this TUI never ran on,
// counts every end listed as seen.
func (m *model) primeSeen() tea.Cmd {
	if !m.seen.fresh {
		return nil
	}
	m.seen.fresh = false
	var cmd tea.Cmd
	for _, v := range m.sessions {
		if e := v.lastEnd(); e != nil {
			if c := m.seen.mark(v.id, e.TurnID); c != nil {
				cmd = c
			}
		}
	}
	if cmd == nil {
		// nothing ended yet: still write the file, so the next start is
		// not a first run
		m.seen.dirty = true
		cmd = m.seen.save()
	}
	return cmd
}

// onSeenSaved: a save of the seen state finished.
func (m *model) onSeenSaved(msg seenSavedMsg) tea.Cmd {
	if msg.err != nil && !m.seenWarned {
		m.seenWarned = true
		m.h.log.Warn("the seen state (what you looked at) is not saved", "path", m.seen.path, "err", msg.err)
	}
	return m.seen.saved()
}

// turnMark is the TURN column of v's row: glyph and word (readable
// without colour) and its class; a turn's call for the user and a turn end
// are marked until seen.
func turnMark(seen *seenState, v *sessView, now time.Time) (string, lineClass) {
	if id, at := v.gate(); id != "" {
		s := "? gate"
		if !at.IsZero() {
			s += " " + ago(now, at)
		}
		return s, clsGate
	}
	if a := v.attention(); a != nil {
		s := "! " + attentionWord(a.Reason)
		if !a.Since.IsZero() {
			s += " " + ago(now, a.Since)
		}
		return s, clsGate
	}
	if at, ok := v.turnSince(); ok {
		if at.IsZero() {
			return "▶ running", clsTurn
		}
		return "▶ " + ago(now, at), clsTurn
	}
	if e := unseenEnd(seen, v); e != nil {
		return endMark(*e)
	}
	return "", clsMuted
}

// endMark is an unseen turn end's mark.
func endMark(e rig.TurnEnd) (string, lineClass) {
	switch e.Outcome {
	case rig.TurnOutcomeDone:
		if e.ExitCode == 0 {
			return "✓ done", clsOK
		}
		return "✗ exit " + strconv.Itoa(e.ExitCode), clsError
	case rig.TurnOutcomeFailed:
		return "✗ failed", clsError
	case rig.TurnOutcomeInterrupted:
		word := interruptWords[e.Reason]
		if word == "" {
			word = "interrupted"
		}
		return "⏹ " + word, clsError
	}
	return "? " + clean(string(e.Outcome)), clsMuted
}

// attentionWord names a turn's call for the user in a mark: the bell, or
// a note (a desktop notification, whose text the detail pane shows).
func attentionWord(reason string) string {
	if reason == event.AttentionBell {
		return "bell"
	}
	return "note"
}

// attentionText describes a turn's call for the user in words (the detail
// pane, notifications); its text comes from the turn's program and is
// sanitized where it is drawn.
func attentionText(a rig.Attention) string {
	switch {
	case a.Reason == event.AttentionBell:
		return "its turn rang the bell"
	case a.Text == "":
		return "its turn sent a notification"
	}
	return "its turn says: " + a.Text
}

// interruptWords name the reasons of an interruption in a mark.
var interruptWords = map[string]string{
	event.ReasonUser: "stopped", event.ReasonCrash: "crash", event.ReasonShutdown: "shutdown",
	event.ReasonEngineStuck: "stuck", event.ReasonLeaseLost: "lost",
}

// endText describes a turn end in words (the detail pane, notifications).
func endText(e rig.TurnEnd) string {
	s := "turn ? "
	if e.Index >= 0 {
		s = "turn " + strconv.Itoa(e.Index) + " "
	}
	switch e.Outcome {
	case rig.TurnOutcomeDone:
		s += "done: exit " + strconv.Itoa(e.ExitCode)
	case rig.TurnOutcomeFailed:
		s += "failed: " + e.Reason
	case rig.TurnOutcomeInterrupted:
		s += "interrupted (" + e.Reason + ")"
	default:
		s += string(e.Outcome)
	}
	if d := e.Duration(); d > 0 {
		s += " after " + dur(d)
	}
	return clean(s)
}

// matchesNeeds reports whether filter f asks for the sessions that need
// the user.
func matchesNeeds(f string) bool { return strings.TrimSpace(f) == needsFilter }
