package tui

import (
	"strconv"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/rig"
)

// statusBar is the bottom line: the brand, the store, a flash message (or
// the keys most useful in the focused pane), how many sessions run in the
// background and the theme; while quitting, that it detaches.
type statusBar struct {
	msg string    // the flash message, sanitized; "" shows the hints
	cls lineClass // how it is painted
	gen int       // the last flash; only its timer clears it
}

// flash shows text for a few seconds.
func (s *statusBar) flash(text string, cls lineClass) tea.Cmd {
	s.msg, s.cls = clean(text), cls
	s.gen++
	return flashOff(s.gen)
}

// flashOff clears the flash message of generation gen, unless another
// followed it.
func (s *statusBar) flashOff(gen int) {
	if gen == s.gen {
		s.msg = ""
	}
}

// view draws the status bar: one line, w wide.
func (s *statusBar) view(m *model, w int) string {
	st := m.st
	brand := " looprig "
	store := "store " + clean(m.h.opts.StoreDir)
	if m.h.opts.StoreDir == "" {
		store = "store"
	}
	right := " " + m.st.theme.Name + " "
	if n := m.liveN; n > 0 {
		bg := strconv.Itoa(n) + " live in the background"
		if w < 120 {
			bg = strconv.Itoa(n) + " live"
		}
		right = " " + bg + " ·" + right
	}
	if m.quitting != "" {
		msg := " " + m.spin.glyph() + " " + m.quitting
		return st.accBadge.s(brand) + st.warn.s(fit(msg, w-width(brand)))
	}
	avail := w - width(brand) - width(right)
	storeW := min(width(store), max(10, avail/3))
	storeTxt := truncLeft(store, storeW)
	if avail < 20 {
		storeTxt = ""
		storeW = 0
	}
	rest := max(0, avail-storeW-2)
	var mid string
	if s.msg != "" {
		mid = st.ev[s.cls].s(fit(s.msg, rest))
	} else {
		mid = m.hints(rest)
	}
	return st.accBadge.s(brand) + " " + st.muted.s(storeTxt) + " " + mid + st.muted.s(right)
}

// countLive counts the sessions of the store that run in the background,
// live in a host (attached or not), for the status bar (model.liveN).
func (m *model) countLive() {
	n := 0
	for _, v := range m.list.rows {
		if v.state() == rig.StateLive {
			n++
		}
	}
	m.liveN = n
}

// hints are the most useful keys for the focused pane, as many as fit.
func (m *model) hints(w int) string {
	st := m.st
	type hk struct{ k, d string }
	var hs []hk
	v := m.selected()
	switch {
	case m.list.filterActive:
		hs = []hk{{"enter", "keep filter"}, {"esc", "clear"}, {"↑/↓", "move"}}
	case m.help != nil:
		hs = []hk{{"type", "filter"}, {"esc", "close"}}
	case m.focus == paneEvents:
		hs = []hk{{"↑/↓", "scroll"}, {"G", "follow"}, {"g", "top"}}
		if v != nil && v.takesCommands() {
			hs = append(hs, hk{"i", "input"}, hk{"I", "interrupt"})
		}
		hs = append(hs, hk{"tab", "pane"}, hk{"?", "help"})
	case m.focus == paneDetail:
		hs = []hk{{"↑/↓", "scroll"}, {"tab", "pane"}, {"?", "help"}}
	default:
		hs = []hk{{"↑/↓", "move"}, {"enter", "open"}, {"n", "new"}}
		if v != nil {
			switch {
			case v.takesCommands():
				if v.f.openGate != nil {
					hs = append(hs, hk{"a/d", "approve/deny"})
				}
				hs = append(hs, hk{"i", "input"}, hk{"I", "interrupt"}, hk{"X", "shut down"})
			case v.state() == rig.StateLive && !v.attached():
				hs = append(hs, hk{"r", "attach"})
			case v.state() == rig.StateHeld:
				hs = append(hs, hk{"B", "break lease"}, hk{"r", "restore"})
			default:
				hs = append(hs, hk{"r", "restore"})
			}
		}
		hs = append(hs, hk{"/", "filter"}, hk{"t", "theme"}, hk{"?", "help"}, hk{"q", "quit"})
	}
	var b strings.Builder
	used := 0
	for i, h := range hs {
		seg := h.k + " " + h.d
		sep := 0
		if i > 0 {
			sep = 3
		}
		if used+sep+width(seg) > w {
			break
		}
		if i > 0 {
			b.WriteString(st.muted.s(" · "))
		}
		b.WriteString(st.key.s(h.k) + " " + st.muted.s(h.d))
		used += sep + width(seg)
	}
	b.WriteString(spaces(w - used))
	return b.String()
}
