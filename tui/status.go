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
	store string    // the store's directory (Options.StoreDir)
	msg   string    // the flash message, sanitized; "" shows the hints
	cls   lineClass // how it is painted
	gen   int       // the last flash; only its timer clears it

	// live is how many sessions of the store run in the background, live
	// in a host (attached or not), counted by the root (countLive) after
	// each message that may change it.
	live int

	// crashed is how many sessions are listed crashed (and not being
	// restored), counted with the live ones (countLive).
	crashed int
	// offer: say how many crashed and that R restores them, before the
	// hints, whenever no flash covers it. It is made when the count of
	// crashed sessions rises (the first listing, a session that crashes),
	// and goes with R, esc (dismiss), or when none is left crashed: a
	// flash (an attach's, say) covers it for its few seconds only.
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
		s.msg = ""
	}
}

// barState is what the status bar shows of the rest of the TUI: that it
// detaches (quitting, "" while it runs), whether a full-screen program has
// the keys (screenKeys; screenEnded: it ended, the next key returns them),
// whether R's dialog is shown, and the hints of the focused pane.
type barState struct {
	quitting                string
	screenKeys, screenEnded bool
	runShown                bool
	hints                   []hint
}

// count takes the counts of the sessions live (in the background) and
// crashed (not being restored): when more crashed than before (but while
// R runs: its failures), the bar offers R.
func (s *statusBar) count(live, crashed int) {
	s.live = live
	if r := s.run; crashed > s.crashed && (r == nil || r.phase != raRunningPhase) {
		s.offer = true
	}
	if crashed == 0 {
		s.offer = false
	}
	s.crashed = crashed
}

// view draws the status bar: one line, w wide.
func (s *statusBar) view(c common, b barState, w int) string {
	st := c.st
	brand := " looprig "
	store := "store " + clean(s.store)
	if s.store == "" {
		store = "store"
	}
	right := " " + st.theme.Name + " "
	if n := s.live; n > 0 {
		bg := strconv.Itoa(n) + " live in the background"
		if w < 120 {
			bg = strconv.Itoa(n) + " live"
		}
		right = " " + bg + " ·" + right
	}
	if b.quitting != "" {
		msg := " " + c.spin + " " + b.quitting
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
	case b.screenKeys && (s.msg == "" || s.cls != clsError):
		text := " ⌨ keys go to the full-screen program · ctrl+] gives them back"
		if b.screenEnded {
			text = " the full-screen program ended: the next key returns to looprig"
		}
		mid = st.warn.s(fit(text, rest))
	case s.msg != "":
		mid = st.ev[s.cls].s(fit(s.msg, rest))
	default:
		mid = hintsText(st, b.hints, rest)
		if lead, lw := s.lead(c, b.runShown, rest); lw > 0 {
			// the hints that fit after it, if any
			mid = lead + spaces(rest-lw)
			if h := hintsText(st, b.hints, rest-lw-3); strings.TrimSpace(h) != "" {
				mid = lead + st.muted.s(" · ") + h
			}
		}
	}
	return st.accBadge.s(brand) + " " + st.muted.s(storeTxt) + " " + mid + st.muted.s(right)
}

// lead is what the bar says before the hints, and its width, at most w:
// the progress of R while its dialog is hidden (not runShown), else the
// offer of R.
func (s *statusBar) lead(c common, runShown bool, w int) (string, int) {
	st := c.st
	type part struct {
		text  string
		paint paint
	}
	sep := func(t string) part { return part{t, st.muted} }
	var parts []part
	more := 0 // the parts a narrow bar may leave out, at the end
	switch {
	case s.run != nil && s.run.phase == raRunningPhase && !runShown:
		parts = []part{{c.spin + " " + s.run.progress(), st.accent}, sep(" · "), {"R", st.key}, sep(" shows them")}
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

// hint is a key the status bar suggests, and what it does.
type hint struct{ k, d string }

// hintsFor are the most useful keys: in the filter line (filtering), the
// help screen (helpOpen), else the focused pane, for the selected session
// v (nil: none).
func hintsFor(focus pane, filtering, helpOpen bool, v *sessView) []hint {
	var hs []hint
	switch {
	case filtering:
		hs = []hint{{"enter", "keep filter"}, {"esc", "clear"}, {"↑/↓", "move"}}
	case helpOpen:
		hs = []hint{{"type", "filter"}, {"esc", "close"}}
	case focus == paneEvents:
		hs = []hint{{"↑/↓", "scroll"}, {"G", "follow"}, {"g", "top"}}
		if v != nil && v.takesCommands() {
			hs = append(hs, hint{"i", "input"}, hint{"I", "interrupt"})
		}
		hs = append(hs, hint{"tab", "pane"}, hint{"?", "help"})
	case focus == paneDetail:
		hs = []hint{{"↑/↓", "scroll"}, {"tab", "pane"}, {"?", "help"}}
	default:
		hs = []hint{{"↑/↓", "move"}, {"enter", "open"}, {"n", "new"}}
		if v != nil {
			switch {
			case v.takesCommands():
				if v.transcript.fold.Gate() != nil {
					hs = append(hs, hint{"a/d", "approve/deny"})
				}
				hs = append(hs, hint{"i", "input"}, hint{"I", "interrupt"}, hint{"X", "shut down"})
			case v.state() == rig.StateLive && !v.attached():
				hs = append(hs, hint{"r", "attach"})
			case v.state() == rig.StateHeld:
				hs = append(hs, hint{"B", "break lease"}, hint{"r", "restore"})
			default:
				hs = append(hs, hint{"r", "restore"})
			}
		}
		hs = append(hs, hint{"/", "filter"}, hint{"t", "theme"}, hint{"?", "help"}, hint{"q", "quit"})
	}
	return hs
}

// hintsText draws as many of hs as fit in w cells, padded to w.
func hintsText(st *styles, hs []hint, w int) string {
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
