package tui

import (
	"strconv"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/rig"
)

// statusBar is the bottom line: the brand, the store, a flash message (or
// the keys most useful in the focused pane), how many sessions run in the
// background and the theme; while quitting, that it detaches. Before the
// hints, it offers R when sessions crashed, and counts R's restores while
// its dialog is hidden.
type statusBar struct {
	msg string    // the flash message, sanitized; "" shows the hints
	cls lineClass // how it is painted
	gen int       // the last flash; only its timer clears it

	// crashed is how many sessions are listed crashed (and not being
	// restored), counted with the live ones (countLive).
	crashed int
	// offer: say how many crashed and that R restores them. It is made
	// when the count of crashed sessions rises (the first listing, a
	// session that crashes), and goes with the next flash.
	offer bool
	// run is the last R (restoreall.go); while it runs with its dialog
	// hidden, the bar counts its restores.
	run *restoreRun
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
		s.msg, s.offer = "", false
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
	switch {
	case m.screenFocus != nil && (s.msg == "" || s.cls != clsError):
		text := " ⌨ keys go to the full-screen program · ctrl+] gives them back"
		if m.focusedView() == nil {
			text = " the full-screen program ended: the next key returns to looprig"
		}
		mid = st.warn.s(fit(text, rest))
	case s.msg != "":
		mid = st.ev[s.cls].s(fit(s.msg, rest))
	default:
		mid = m.hints(rest)
		if lead, lw := s.lead(m, rest); lw > 0 {
			// the hints that fit after it, if any
			mid = lead + spaces(rest-lw)
			if h := m.hints(rest - lw - 3); strings.TrimSpace(h) != "" {
				mid = lead + st.muted.s(" · ") + h
			}
		}
	}
	return st.accBadge.s(brand) + " " + st.muted.s(storeTxt) + " " + mid + st.muted.s(right)
}

// lead is what the bar says before the hints, and its width, at most w:
// the progress of R while its dialog is hidden, else the offer of R.
func (s *statusBar) lead(m *model, w int) (string, int) {
	st := m.st
	type part struct {
		text  string
		paint paint
	}
	sep := func(t string) part { return part{t, st.muted} }
	var parts []part
	more := 0 // the parts a narrow bar may leave out, at the end
	switch {
	case s.run != nil && s.run.phase == raRunningPhase && m.dialog != dialog(s.run):
		parts = []part{{m.spin.glyph() + " " + s.run.progress(), st.accent}, sep(" · "), {"R", st.key}, sep(" shows them")}
		more = 3
	case s.offer && s.crashed > 0:
		parts = []part{{stateGlyph(rig.StateCrashed) + " " + strconv.Itoa(s.crashed) + " crashed", st.state[rig.StateCrashed]},
			sep(" — "), {"R", st.key}, sep(" restores them")}
		more = 1
	default:
		return "", 0
	}
	n := 0
	for _, p := range parts {
		n += width(p.text)
	}
	for n > w && more > 0 {
		n -= width(parts[len(parts)-1].text)
		parts = parts[:len(parts)-1]
		more--
		if last := parts[len(parts)-1].text; more > 0 && (last == " · " || last == " — ") {
			n -= width(last)
			parts = parts[:len(parts)-1]
			more--
		}
	}
	if n > w {
		return "", 0
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.paint.s(p.text))
	}
	return b.String(), n
}

// countLive counts the sessions of the store that run in the background,
// live in a host (attached or not), for the status bar (model.liveN), and
// the crashed ones not being restored (statusBar.crashed): when there are
// more of those than before (but while R runs: its failures), the bar
// offers R.
func (m *model) countLive() {
	n, crashed := 0, 0
	for _, v := range m.list.rows {
		switch v.state() {
		case rig.StateLive:
			n++
		case rig.StateCrashed:
			if v.busy == notBusy {
				crashed++
			}
		}
	}
	m.liveN = n
	if r := m.status.run; crashed > m.status.crashed && (r == nil || r.phase != raRunningPhase) {
		m.status.offer = true
	}
	m.status.crashed = crashed
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
				if v.transcript.fold.Gate() != nil {
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
