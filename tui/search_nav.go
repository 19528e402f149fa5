package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"looprig/search"
)

// searchStepKey: once a hit of the search view was opened (enter), n and
// N step through the lines of that session's events that match the same
// query: n the next one down (newer), N the one up (older), the line
// highlighted and scrolled to. They do so while the events pane of that
// session has the focus; anywhere else n is "new session" again, and
// moving the focus or the selection ends the stepping.
var searchStepKey = key.NewBinding(key.WithKeys("n", "N"),
	key.WithHelp("n/N", "after a search hit is opened: the next / previous hit in its events"))

// searchFound is the search a hit was opened from, for n and N.
type searchFound struct {
	id string // the session
	q  *search.Query
}

// foundKey steps through the hits when msg is n or N and the hit's
// session's events have the focus; handled says whether it did. Any
// other state ends the stepping.
func (m *model) foundKey(msg tea.KeyMsg) (cmd tea.Cmd, handled bool) {
	f := m.found
	v := m.sessions[f.id]
	if v == nil || m.focus != paneEvents || m.list.selected() == nil || m.list.selected().id != f.id {
		m.found = nil
		return nil, false
	}
	if !key.Matches(msg, searchStepKey) {
		return nil, false
	}
	dir := 1
	if msg.String() == "N" {
		dir = -1
	}
	if !stepHit(&v.transcript, f.q, dir) {
		where := "below"
		if dir < 0 {
			where = "above"
		}
		return m.status.flash("no more hits "+where, clsMuted), true
	}
	return nil, true
}

// stepHit moves t's highlighted hit to the next line in direction dir
// (1: newer, -1: older) that q matches, and scrolls to it; false when
// there is none.
func stepHit(t *transcript, q *search.Query, dir int) bool {
	from := t.ring.len() - 1 + dir // none highlighted: from the bottom up, or from the bottom
	if i, ok := t.hitIndex(); ok {
		from = i + dir
	} else if dir > 0 {
		return false
	}
	for i := from; i >= 0 && i < t.ring.len(); i += dir {
		if ok, _ := q.Match(ansi.Strip(t.ring.at(i).text)); ok {
			t.showHit(i)
			return true
		}
	}
	return false
}

// hitIndex is the ring index of the highlighted hit, if any is still in
// the ring.
func (t *transcript) hitIndex() (int, bool) {
	if t.hit == 0 {
		return 0, false
	}
	i := t.hit - 1 - (t.ring.total - t.ring.len())
	return i, i >= 0 && i < t.ring.len()
}

// showHit highlights ring line i and scrolls the events to it (at the
// pane's bottom).
func (t *transcript) showHit(i int) {
	t.hit = t.ring.total - t.ring.len() + i + 1
	t.scroll = t.ring.len() - 1 - i + len(t.pending())
	t.follow = t.scroll == 0
}
