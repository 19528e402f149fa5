package tui

import (
	"log/slog"
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
// (notify.go). What a session is doing comes from one place,
// sessView.activity (activity.go): the newest of its listing row and the
// journal this TUI folded.
//
// A turn's call is cleared by the runtime's one rule (rig.State): the user
// looked (AttentionSeen, which this TUI sends through the session's host
// once the session is the selected one and attached: seeAttention), its
// turn ended or the session stopped. The turn ends of seen.json are this
// TUI's own, per user; a call is the session's, seen by whoever looks.

// needsFilter is the filter word listing only the sessions that need the
// user (a gate, an unseen turn end, a crash), oldest first.
const needsFilter = "needs:me"

// unseenEnd is the last turn end of session id, doing a, when the user
// has not looked at it yet (seen).
func unseenEnd(seen *seenState, id string, a activity) *rig.TurnEnd {
	e := a.lastEnd
	if e == nil || seen.seen(id, e.TurnID) {
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
	a := v.activity()
	if a.gate.id != "" {
		add(orTime(a.gate.since, v.lastActivity()))
	}
	if a.attention != nil {
		add(orTime(a.attention.Since, v.lastActivity()))
	}
	if e := unseenEnd(seen, v.id, a); e != nil {
		add(e.Ended)
	}
	if a.state == rig.StateCrashed {
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

// attention is the component that follows what the sessions ask of the
// user: what the user looked at (seen, shared with the sessions list,
// which draws the marks and the needs:me filter from it), whether a
// failed save of it was logged, and the announcements (notify.go). Its
// methods receive the sessions they look at and the shared command
// context (h), never the root.
type attention struct {
	seen   *seenState
	warned bool // a failed save was logged
}

// needing lists the sessions of rows that need the user, oldest first.
func (a *attention) needing(rows []*sessView) []*sessView { return oldestNeeding(nil, rows, a.seen) }

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
// gate or a crash needs the user until it is dealt with). none: no
// session needs the user; moved: the selection changed.
func (l *sessionList) jumpToNeeds(needing []*sessView, s listSpace) (moved, none bool) {
	if len(needing) == 0 {
		return false, true
	}
	next := needing[0]
	if cur := l.selected(); cur != nil {
		for i, v := range needing {
			if v == cur {
				next = needing[(i+1)%len(needing)]
				break
			}
		}
	}
	if !l.shows(next) {
		l.setFilter("", s)
	}
	prev := l.selected()
	l.selectID(next.id, s)
	return l.selected() != prev, false
}

// markSeen records that the user looked at the session in front of them
// (front, the selected one; nil for none): its last end no longer marks
// it, nor its turn's call for the user (seeAttention).
func (a *attention) markSeen(h *shared, front *sessView) tea.Cmd {
	if front == nil {
		return nil
	}
	cmd := seeAttention(h, front)
	e := front.activity().lastEnd
	if e == nil {
		return cmd
	}
	return tea.Batch(cmd, a.seen.mark(front.id, e.TurnID))
}

// seeAttention tells the host of v, the session in front of the user, that
// they looked at its turn's call (once per call: the sequence sent is
// kept); the AttentionSeen it journals comes back through the stream and
// clears the mark. Only an attached session, and once its replay is done
// (the call folded is the latest), can be told.
func seeAttention(h *shared, v *sessView) tea.Cmd {
	if !v.takesCommands() || v.replaying() {
		return nil
	}
	a := v.transcript.fold.Attention
	if a == nil || a.Seq <= v.live.attnSent {
		return nil
	}
	v.live.attnSent = a.Seq
	return h.seeAttentionCmd(v.id, v.live.c, a.Seq)
}

// attentionSeenMsg: a host was told the user looked at its session's call
// (or could not be).
type attentionSeenMsg struct {
	id  string
	err error
}

// logged logs a look the host could not record: the mark stays until the
// turn ends or the next look.
func (msg attentionSeenMsg) logged(log *slog.Logger) tea.Cmd {
	if msg.err != nil {
		log.Warn("the look at a session's call was not recorded", "session", msg.id, "err", msg.err)
	}
	return nil
}

// prime, at the first listing of a store this TUI never ran on, counts
// every end listed (of sessions) as seen.
func (a *attention) prime(sessions map[string]*sessView) tea.Cmd {
	if !a.seen.fresh {
		return nil
	}
	a.seen.fresh = false
	var cmd tea.Cmd
	for _, v := range sessions {
		if e := v.activity().lastEnd; e != nil {
			if c := a.seen.mark(v.id, e.TurnID); c != nil {
				cmd = c
			}
		}
	}
	if cmd == nil {
		// nothing ended yet: still write the file, so the next start is
		// not a first run
		a.seen.dirty = true
		cmd = a.seen.save()
	}
	return cmd
}

// saved: a save of the seen state finished; the first failure is logged.
func (a *attention) saved(msg seenSavedMsg, log *slog.Logger) tea.Cmd {
	if msg.err != nil && !a.warned {
		a.warned = true
		log.Warn("the seen state (what you looked at) is not saved", "path", a.seen.path, "err", msg.err)
	}
	return a.seen.saved(msg)
}

// turnMark is the TURN column of v's row: glyph and word (readable
// without colour) and its class; a turn's call for the user and a turn end
// are marked until seen.
func turnMark(seen *seenState, v *sessView, now time.Time) (string, lineClass) {
	a := v.activity()
	if a.gate.id != "" {
		s := "? gate"
		if !a.gate.since.IsZero() {
			s += " " + ago(now, a.gate.since)
		}
		return s, clsGate
	}
	if c := a.attention; c != nil {
		s := "! " + attentionWord(c.Reason)
		if !c.Since.IsZero() {
			s += " " + ago(now, c.Since)
		}
		return s, clsGate
	}
	if a.running() {
		if a.turn.since.IsZero() {
			return "▶ running", clsTurn
		}
		return "▶ " + ago(now, a.turn.since), clsTurn
	}
	if a.checkpointing {
		return checkpointMark(a.progress), clsTurn
	}
	if e := unseenEnd(seen, v.id, a); e != nil {
		return endMark(*e)
	}
	return "", clsMuted
}

// checkpointMark is the TURN column of a session checkpointing its
// workspace: "⟳ ckpt 74%" (of its files), "⟳ ckpt" before it knows.
func checkpointMark(p *rig.CheckpointProgress) string {
	if p == nil || p.Files == 0 {
		return "⟳ ckpt"
	}
	return "⟳ ckpt " + strconv.Itoa(p.FilesDone*100/p.Files) + "%"
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
	case a.Reason == event.AttentionAgent:
		return agentSays(a.Agent, a.Text)
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
	event.ReasonEngineStuck: "stuck", event.ReasonLeaseLost: "lost", event.ReasonHandoff: "handed over",
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

// agentSays is an agent's call for the user, as the agent's words, never
// looprig's: "claude says: …", or "claude waits for you" when it said
// nothing. Its text is the agent's, sanitized where it is drawn.
func agentSays(agent, text string) string {
	if agent == "" {
		agent = "the agent"
	}
	if text == "" {
		return agent + " waits for you"
	}
	return agent + " says: " + text
}

// clientWords names a client that answered a gate or sent input: its
// kind, pid and whether it had a terminal.
func clientWords(c *event.Client) string {
	term := "no terminal"
	if c.Terminal {
		term = "terminal"
	}
	return c.Kind + " pid " + strconv.Itoa(c.PID) + " (" + term + ")"
}

// refusedWords says what looprig refused (event.Refused).
func refusedWords(r event.Refused) string {
	who := "an unknown client"
	if r.By != nil {
		who = clientWords(r.By)
	}
	why := "it runs inside the session's turns"
	switch r.Reason {
	case event.FromTurnGone:
		why = "the process that connected is gone"
	case event.FromTurnUnknown:
		why = "where it runs cannot be told"
	}
	switch r.What {
	case event.RefusedGateAnswer:
		return r.Action + " of the gate refused, from " + who + ": " + why
	case event.RefusedInput:
		return "input refused, from " + who + ": " + why
	case event.RefusedHook:
		return r.Agent + " hook event " + strconv.Quote(r.Hook) + " refused: the turn did not ask for it"
	case event.RefusedConversation:
		return r.Agent + " conversation " + r.ID + " (from the " + r.Source + ") refused: not the session's"
	}
	return r.What + " refused"
}
