package tui

import "strings"

// box frames content lines (each exactly w-2 cells, painted) in a pane of
// w×h with title (plain) in the top border; the focused pane gets the heavy
// frame.
func box(st *styles, title, right string, focused bool, w, h int, content []string) []string {
	if focused {
		return drawBox(st, title, right, frameFocus, st.borderFocus, st.accentBold, w, h, content)
	}
	return drawBox(st, title, right, frameBlur, st.borderBlur, st.muted, w, h, content)
}

// drawBox frames content in fr painted bp, with the title painted tp.
func drawBox(st *styles, title, right string, fr frame, bp, tp paint, w, h int, content []string) []string {
	if h <= 0 {
		return nil
	}
	iw := w - 2
	out := make([]string, 0, h)
	// top: ╭─ Title ─── right ─╮
	t := trunc(title, max(0, iw-3))
	r := ""
	if right != "" && iw-width(t)-8 > 4 {
		r = trunc(right, iw-width(t)-8)
	}
	fill := iw - 1 - (width(t) + 2) - boolInt(r != "")*(width(r)+3)
	if t == "" {
		fill = iw - 1 - boolInt(r != "")*(width(r)+3) + 2
	}
	var top strings.Builder
	top.WriteString(bp.s(fr.tl + fr.h))
	if t != "" {
		top.WriteString(" " + tp.s(t) + " ")
	}
	top.WriteString(bp.s(strings.Repeat(fr.h, max(0, fill))))
	if r != "" {
		top.WriteString(" " + st.muted.s(r) + " " + bp.s(fr.h))
	}
	top.WriteString(bp.s(fr.tr))
	out = append(out, top.String())
	side := bp.s(fr.v)
	for i := 0; i < h-2; i++ {
		line := spaces(iw)
		if i < len(content) {
			line = content[i]
		}
		out = append(out, side+line+side)
	}
	if h >= 2 {
		out = append(out, bp.s(fr.bl+strings.Repeat(fr.h, max(0, iw))+fr.br))
	}
	return out
}
