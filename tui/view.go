package tui

import (
	"strconv"
	"strings"
)

// The root of the drawing: it lays the components out (layout.go) and
// each draws itself.

// View draws exactly the window: m.height lines, none wider than m.width.
func (m Model) View() string {
	w, h := m.width, m.height
	if w <= 0 || h <= 0 {
		return ""
	}
	if w < minWidth || h < minHeight {
		return tooSmall(m.st, w, h)
	}
	c := m.common()
	g := m.geometry()
	lines := make([]string, 0, h)
	switch {
	case m.help != nil:
		lines = append(lines, m.help.view(c, helpDisabled(m.list.selected()), w, g.bodyH)...)
	case m.changes != nil:
		lines = append(lines, m.changes.view(c.st, w, g.bodyH)...)
	case m.search != nil:
		lines = append(lines, m.search.view(c.st, w, g.bodyH)...)
	default:
		lines = append(lines, m.body(c, g)...)
	}
	if m.dialog != nil {
		overlay(c, m.dialog, m.dialogArea(), lines, w)
	}
	lines = append(lines, m.stripLines()...)
	if m.input != nil {
		lines = append(lines, m.input.view(c, m.sessions[m.input.id], w))
	}
	lines = append(lines, m.status.view(c, m.barState(), w))
	return strings.Join(lines, "\n")
}

// tooSmall is the window, w×h, when it is too small for the panes.
func tooSmall(st *styles, w, h int) string {
	msg := []string{
		"terminal too small",
		"need " + strconv.Itoa(minWidth) + "×" + strconv.Itoa(minHeight),
		"have " + strconv.Itoa(w) + "×" + strconv.Itoa(h),
		"q quits",
	}
	out := make([]string, h)
	top := max(0, (h-len(msg))/2)
	for i := range out {
		j := i - top
		if j >= 0 && j < len(msg) {
			t := trunc(msg[j], w)
			pad := max(0, (w-width(t))/2)
			line := spaces(pad) + t
			if j == 0 {
				out[i] = st.warn.s(fit(line, w))
			} else {
				out[i] = st.muted.s(fit(line, w))
			}
			continue
		}
		out[i] = spaces(w)
	}
	return strings.Join(out, "\n")
}

// body draws the panes the layout g shows, each given what it draws.
func (m *model) body(c common, g geometry) []string {
	v := m.list.selected()
	list := func() []string { return m.list.view(c, m.focus == paneList, g.listW, g.listH) }
	detail := func() []string {
		unseen := v != nil && unseenEnd(m.attn.seen, v.id, v.activity()) != nil
		return m.detail.view(c, v, unseen, m.focus == paneDetail, g.detailW, g.detailH)
	}
	events := func() []string {
		f := eventsFrame{
			welcome:    len(m.list.rows) == 0 && m.list.listed,
			focused:    m.focus == paneEvents,
			screenKeys: v != nil && m.screenFocus.session(m.sessions) == v,
		}
		return m.events.view(c, v, f, g.eventsW, g.eventsH)
	}
	switch g.mode {
	case modeWide:
		left := list()
		right := append(detail(), events()...)
		out := make([]string, g.bodyH)
		for i := range out {
			out[i] = left[i] + right[i]
		}
		return out
	case modeStacked:
		out := list()
		if g.showDet {
			out = append(out, detail()...)
		}
		return append(out, events()...)
	}
	switch {
	case g.showEvt:
		return events()
	case g.showDet:
		return detail()
	}
	return list()
}

// stripLines is the errors strip for the selected session, as the window
// has room for it; none below the minimum window.
func (m *model) stripLines() []string {
	if m.width < minWidth || m.height < minHeight {
		return nil
	}
	return m.strip.view(m.st, m.list.selected(), m.width, stripMax(m.height))
}

// dialogArea is the room of the dialog in the window.
func (m *model) dialogArea() dialogArea {
	return dialogArea{w: dialogWidth(m.width), bodyH: m.geometry().bodyH}
}

// barState is what the status bar shows of the rest of the TUI.
func (m *model) barState() barState {
	return barState{
		quitting:    m.quitting,
		screenKeys:  m.screenFocus != nil,
		screenEnded: m.screenFocus != nil && m.screenFocus.session(m.sessions) == nil,
		runShown:    m.status.run != nil && m.dialog == dialog(m.status.run),
		hints:       hintsFor(m.focus, m.list.filterActive, m.help != nil, m.list.selected()),
	}
}
