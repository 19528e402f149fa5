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
		return m.tooSmall()
	}
	g := m.geometry()
	lines := make([]string, 0, h)
	if m.help != nil {
		lines = append(lines, m.help.view(m.model, w, g.bodyH)...)
	} else {
		lines = append(lines, m.body(g)...)
	}
	if m.dialog != nil {
		m.overlay(lines, w)
	}
	lines = append(lines, m.stripLines(w, stripMax(h))...)
	if m.input != nil {
		lines = append(lines, m.input.view(m.model, w))
	}
	lines = append(lines, m.status.view(m.model, w))
	return strings.Join(lines, "\n")
}

func (m *model) tooSmall() string {
	w, h := m.width, m.height
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
				out[i] = m.st.warn.s(fit(line, w))
			} else {
				out[i] = m.st.muted.s(fit(line, w))
			}
			continue
		}
		out[i] = spaces(w)
	}
	return strings.Join(out, "\n")
}

func (m *model) body(g geometry) []string {
	switch g.mode {
	case modeWide:
		left := m.list.view(m, g.listW, g.listH)
		right := append(m.detail.view(m, g.detailW, g.detailH), m.eventsPane(g.eventsW, g.eventsH)...)
		out := make([]string, g.bodyH)
		for i := range out {
			out[i] = left[i] + right[i]
		}
		return out
	case modeStacked:
		out := m.list.view(m, g.listW, g.listH)
		if g.showDet {
			out = append(out, m.detail.view(m, g.detailW, g.detailH)...)
		}
		return append(out, m.eventsPane(g.eventsW, g.eventsH)...)
	}
	switch {
	case g.showEvt:
		return m.eventsPane(g.eventsW, g.eventsH)
	case g.showDet:
		return m.detail.view(m, g.detailW, g.detailH)
	}
	return m.list.view(m, g.listW, g.listH)
}
