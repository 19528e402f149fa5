package tui

import (
	"strconv"
	"strings"
)

// errorStrip is the errors/lease strip, between the panes and the status
// bar: it explains what went wrong (diagnose.go) and what to do about it,
// and takes no room when all is well. esc dismisses what it shows. It
// shows a failure of no session (global: a create), else the lease-lost
// banner of the selected session (until dismissed), else the selected
// session's failed operation.
type errorStrip struct {
	global *opFailure // a failure of no session, until dismissed
}

// view draws the strip for the selected session v (nil: none), w wide and
// at most maxH lines high; none when all is well.
func (s *errorStrip) view(st *styles, v *sessView, w, maxH int) []string {
	var lines []stripLine
	switch {
	case s.global != nil:
		lines = failureLines(st, strings.ToUpper(s.global.op.String())+" FAILED", "", s.global.err)
	case v != nil && v.lostBanner():
		lines = lostLines(st, v)
	case v != nil && v.failed != nil:
		what := v.failed.op.String() + " of " + v.short
		if b := v.failed.broke; b != nil && b.Held {
			what += " (after B broke its lease at epoch " + strconv.FormatUint(b.Epoch, 10) + ")"
		}
		lines = failureLines(st, "", what, v.failed.err)
	default:
		return nil
	}
	if len(lines) == 0 {
		return nil
	}
	iw := w - 2
	// Wrap every line; when they do not fit, drop the least useful ones
	// (causes, then the stage, then table rows) and keep the headline and
	// the remedy.
	type wrapped struct {
		rows []string
		prio int
	}
	var ws []wrapped
	total := 0
	for _, l := range lines {
		used := 1
		if l.badge != "" {
			used = width(" "+trunc(l.badge, iw/2)+" ") + 1
		}
		rows := wrapText(l.text, max(4, iw-used))
		var painted []string
		for j, r := range rows {
			var b strings.Builder
			switch {
			case j == 0 && l.badge != "":
				b.WriteString(l.badgeP.s(" " + trunc(l.badge, iw/2) + " "))
				b.WriteString(" ")
			case j == 0:
				b.WriteString(" ")
			default:
				b.WriteString(spaces(used))
			}
			b.WriteString(l.p.s(fit(r, iw-used)))
			painted = append(painted, b.String())
		}
		ws = append(ws, wrapped{painted, l.prio})
		total += len(painted)
	}
	budget := max(1, max(3, maxH)-2)
	for prio := 4; prio >= 2 && total > budget; prio-- {
		for i := len(ws) - 1; i >= 0 && total > budget; i-- {
			if ws[i].prio == prio {
				total -= len(ws[i].rows)
				ws[i].rows = nil
			}
		}
	}
	var content []string
	for _, x := range ws {
		content = append(content, x.rows...)
	}
	if len(content) > budget {
		// headline and remedy alone are too long: keep the remedy's end
		last := ws[len(ws)-1].rows
		keep := max(0, budget-len(last))
		content = append(content[:min(keep, len(content))], last...)
		if len(content) > budget {
			content = content[len(content)-budget:]
		}
	}
	title := "Errors"
	if v != nil && v.lostBanner() && s.global == nil {
		title = "Lease"
	}
	// always red-framed
	return drawBox(st, title, "esc dismisses", frameBlur, st.errorP, st.muted, w, len(content)+2, content)
}

// stripMax is the most lines the strip may take of a window h high.
func stripMax(h int) int { return max(3, h*2/5) }

type stripLine struct {
	prio   int // 0 headline, 1 remedy, 2 table, 3 stage, 4 cause: what goes first when short of room
	badge  string
	badgeP paint
	text   string // plain, sanitized
	p      paint
}

// lostLines explain v's lost lease, or its fault.
func lostLines(st *styles, v *sessView) []stripLine {
	l := v.lost
	if l.fault {
		return []stripLine{
			{badge: "SESSION FAULTED", badgeP: st.errorBadge, text: "session " + v.short + " can no longer persist: " + l.cause, p: st.errorP},
			{prio: 1, text: "→ it is read-only now (i, I, a, d, X disabled); r restores it once the store is healthy · esc dismisses", p: st.muted},
		}
	}
	who := l.holder
	if who == "" {
		who = "another process"
	}
	return []stripLine{
		{badge: "LEASE LOST", badgeP: st.errorBadge, text: "session " + v.short + ": epoch " + strconv.FormatUint(l.oldEpoch, 10) + " → " + epochText(l.newEpoch) + ", now held by " + who, p: st.errorP},
		{prio: 3, text: "its host no longer owns it and refuses writes: read-only (i, I, a, d, X disabled)", p: st.text},
		{prio: 1, text: "→ nothing to do here; to take it back, B breaks the lease again · esc dismisses", p: st.muted},
	}
}

// failureLines explains a failed create or restore: the kind as a badge,
// the stage, the cause chain and a one-line remedy.
func failureLines(st *styles, badge, what string, err error) []stripLine {
	var out []stripLine
	d := diagnose(err)
	if badge == "" {
		badge = d.kind
	}
	head := d.headline
	if what != "" {
		head = what + " failed: " + head
	}
	out = append(out, stripLine{badge: badge, badgeP: st.errorBadge, text: head, p: st.errorP})
	if d.stage != "" {
		out = append(out, stripLine{prio: 3, text: "stage: " + d.stage, p: st.text})
	}
	for _, row := range d.table {
		out = append(out, stripLine{prio: 2, text: row, p: st.warn})
	}
	for i, c := range d.chain {
		prefix := "cause: "
		if i > 0 {
			prefix = strings.Repeat(" ", min(i, 3)*2) + "└ "
		}
		out = append(out, stripLine{prio: 4, text: prefix + c, p: st.muted})
	}
	out = append(out, stripLine{prio: 1, text: "→ " + d.remedy, p: st.accent})
	return out
}

// dismiss is esc outside dialogs: it dismisses what the strip shows for
// the selected session v (nil: none): a global failure, the lease-lost
// banner, v's failure, in that order. It reports whether there was any.
func (s *errorStrip) dismiss(v *sessView) bool {
	switch {
	case s.global != nil:
		s.global = nil
	case v != nil && v.lostBanner():
		v.lost.seen = true
	case v != nil && v.failed != nil:
		v.failed = nil
	default:
		return false
	}
	return true
}
