package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/google/uuid"

	"looprig/search"
)

// A query with more hits than searchFirst shows the first ones at once
// while the search goes on; the whole answer keeps the cursor on the hit
// it was on, and a newer query's drops an older one's.
func TestSearchFirstHitsThenTheRest(t *testing.T) {
	a, b := uuid.New(), uuid.New()
	hits := func(n int) []search.Hit {
		var out []search.Hit
		for i := range n {
			s := a
			if i%2 == 1 {
				s = b
			}
			out = append(out, search.Hit{Session: s, Line: search.Line{Turn: 0, Kind: search.KindOutput, Text: fmt.Sprintf("needle %d", i)}})
		}
		return out
	}
	sv := openSearch()
	sv.gen = 1
	names := map[string]string{a.String(): "aaaa first", b.String(): "bbbb second"}
	whole := searchMsg{gen: 1, query: "needle", hits: hits(150), names: names}
	rest := func() tea.Msg { return whole }
	cmd := sv.answered(searchMsg{gen: 1, query: "needle", hits: hits(searchFirst), names: names, rest: rest})
	if cmd == nil || !sv.following {
		t.Fatal("the first hits of a query with more: no wait for the rest")
	}
	st := newModel(Options{Store: memstoreNew()}, asciiRenderer()).st
	status := sv.view(st, 100, 30)[2]
	if !strings.Contains(status, "the first 100 hits in 2 sessions") || !strings.Contains(status, "looking for more") {
		t.Errorf("status while the rest is searched: %q", status)
	}
	sv.moveCursor(3, 20)
	kept := sv.rows[sv.cursor]
	onScreen := sv.cursor - sv.top

	if cmd := sv.answered(cmd().(searchMsg)); cmd != nil || sv.following {
		t.Fatal("the whole answer: still waiting for more")
	}
	if r := sv.rows[sv.cursor]; r.id != kept.id || r.text != kept.text || sv.cursor-sv.top != onScreen {
		t.Errorf("the cursor moved to %q (row %d on screen), want %q (row %d)", r.text, sv.cursor-sv.top, kept.text, onScreen)
	}
	if status := sv.view(st, 100, 30)[2]; !strings.Contains(status, "150 hits in 2 sessions") {
		t.Errorf("status after the rest: %q", status)
	}

	// A newer query's first answer starts over; an older one's is dropped.
	sv.gen = 2
	if cmd := sv.answered(searchMsg{gen: 1, query: "needle", hits: hits(10), names: names}); cmd != nil || sv.hits != 150 {
		t.Errorf("an older query's answer was taken: %d hits", sv.hits)
	}
}
