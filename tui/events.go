package tui

import (
	"github.com/charmbracelet/x/ansi"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"looprig/rig"
)

// eventsPane is the events pane: the selected session's lines (its
// events, its output and the TUI's notes), following the end or scrolled
// back, or its full-screen program's screen. It keeps nothing itself: the
// scroll is the session's (transcript.follow, scroll), so every session
// keeps its own.
type eventsPane struct{}

// eventsFrame is how the events pane is drawn besides its session:
// welcome (no session is selected because the store has none yet), focused
// (the pane has the focus) and screenKeys (the session's full-screen
// program has the keys).
type eventsFrame struct {
	welcome, focused, screenKeys bool
}

// key scrolls the lines of transcript t, rows of which are shown, by a
// movement key; back at the bottom, the pane follows again.
func (eventsPane) key(k keyMap, msg tea.KeyMsg, t *transcript, rows int) {
	page := max(1, rows-1)
	switch {
	case key.Matches(msg, k.Up):
		t.follow = false
		t.scroll++
	case key.Matches(msg, k.Down):
		t.scroll--
	case key.Matches(msg, k.PageUp):
		t.follow = false
		t.scroll += page
	case key.Matches(msg, k.PageDown):
		t.scroll -= page
	case key.Matches(msg, k.Top):
		t.follow = false
		t.scroll = t.ring.len() + len(t.pending()) // the running turn's pending lines are below the ring
	case key.Matches(msg, k.Bottom):
		t.scroll = 0
	}
	maxScroll := max(0, t.ring.len()+len(t.pending())-rows)
	t.scroll = min(max(t.scroll, 0), maxScroll)
	if t.scroll == 0 {
		t.follow = true
	}
}

// view draws session v (nil: none is selected), w×h with its frame.
func (p eventsPane) view(c common, v *sessView, f eventsFrame, w, h int) []string {
	if h <= 0 {
		return nil
	}
	st := c.st
	iw := w - 2
	rows := h - 2
	if v == nil {
		lines := []string{st.muted.s(fit(" no session selected", iw))}
		if f.welcome {
			lines = []string{
				st.title.s(fit(" Welcome to looprig.", iw)),
				spaces(iw),
				st.text.s(fit(" Sessions are durable: their journals survive a crash, and r restores", iw)),
				st.text.s(fit(" them with their history.", iw)),
				spaces(iw),
				st.key.s(" n") + st.text.s(fit(" creates a session: the default profile runs shell commands,", iw-2)),
				st.text.s(fit("   demo emits timed steps; then i submits input.", iw)),
				st.key.s(" ?") + st.text.s(fit(" shows every key.", iw-2)),
			}
		}
		return box(st, "Events", "", f.focused, w, h, lines)
	}
	var footer []string
	switch {
	case v.busy.takesLease() && v.restoring != nil:
		text := " " + c.spin + " " + v.busy.String() + ": " + restoringText(v.restoring) + "… " + dur(c.now.Sub(v.busySince))
		footer = append(footer, st.ev[clsRestore].s(fit(text, iw)))
	case v.busy.takesLease():
		text := " " + c.spin + " " + v.busy.String() + ": taking the lease, replaying " + commas(v.listing.info.LastSeq) +
			" journal records, closing open turns… " + dur(c.now.Sub(v.busySince))
		footer = append(footer, st.ev[clsRestore].s(fit(text, iw)))
	case v.journal.state == journalReplaying:
		footer = append(footer, progressLine(c, v, iw))
	case v.journal.state == journalReading:
		footer = append(footer, st.muted.s(fit(" "+c.spin+" reading the journal… "+commas(v.transcript.lastSeq)+" records", iw)))
	case !v.attached() && v.journal.state.loaded() && v.state() == rig.StateCrashed && v.transcript.fold.Turn() != nil:
		footer = append(footer, st.warn.s(fit(" ⚠ the journal ends here: turn "+strconv.Itoa(v.transcript.fold.Turn().Index)+" was running when its holder died — r restores", iw)))
	}
	rows -= len(footer)
	if v.transcript.screen != nil && v.transcript.follow {
		return p.screenView(c, v, f, w, h, rows, footer)
	}
	pend := v.transcript.pending()
	total := v.transcript.ring.len() + len(pend)
	scroll := 0
	if !v.transcript.follow {
		scroll = min(v.transcript.scroll, max(0, total-rows))
	}
	end := total - scroll
	start := max(0, end-rows)
	content := make([]string, 0, h)
	hit, hasHit := v.transcript.hitIndex()
	for i := start; i < end; i++ {
		var l evLine
		if i < v.transcript.ring.len() {
			l = v.transcript.ring.at(i)
		} else {
			l = evLine{cls: v.transcript.outCls, text: "  " + pend[i-v.transcript.ring.len()]}
		}
		if hasHit && i == hit {
			content = append(content, st.sel.s(fit(ansi.Strip(l.text), iw))) // a search hit (search_nav.go)
			continue
		}
		content = append(content, eventLine(st, l, iw))
	}
	if total == 0 && len(footer) == 0 && rows > 0 {
		content = append(content, st.muted.s(fit(" no events", iw)))
	}
	for len(content) < rows {
		content = append(content, spaces(iw))
	}
	content = append(content, footer...)
	title := "Events"
	switch {
	case v.takesCommands():
		title += " · live"
	default:
		title += " · journal (read-only)"
	}
	var right []string
	if v.transcript.follow {
		right = append(right, "following")
	} else {
		right = append(right, "↑"+strconv.Itoa(scroll))
	}
	if outLines := v.transcript.outLines + uint64(len(pend)); outLines > 0 {
		n := commas(outLines) + " lines"
		if outLines == 1 {
			n = "1 line"
		}
		right = append(right, n)
	}
	return box(st, title, strings.Join(right, " · "), f.focused, w, h, content)
}

// eventLine draws one line of the pane in its class's colour. Turn output
// (no time) that carries its own SGR (output.go) keeps its colours: it is
// cut without splitting a sequence and drawn unpainted.
func eventLine(st *styles, l evLine, iw int) string {
	p := st.ev[l.cls]
	if l.at.IsZero() {
		if strings.IndexByte(l.text, '\x1b') >= 0 {
			return fitStyled(l.text, iw)
		}
		return p.s(fit(l.text, iw))
	}
	ts := l.at.Local().Format("15:04:05") + " "
	if iw < 30 {
		return p.s(fit(l.text, iw))
	}
	return st.muted.s(ts) + p.s(fit(l.text, iw-9))
}

// progressLine is the history replay's progress bar.
func progressLine(c common, v *sessView, iw int) string {
	st := c.st
	done, tip := v.transcript.lastSeq, max(v.journal.tip, v.transcript.lastSeq)
	label := " " + c.spin + " replaying history " + commas(done) + "/" + commas(tip) + " "
	bw := max(0, iw-width(label)-2)
	filled := 0
	if tip > 0 {
		filled = int(uint64(bw) * done / tip)
	}
	bar := strings.Repeat("█", filled) + strings.Repeat("░", bw-filled)
	return st.ev[clsRestore].s(fit(label+bar, iw))
}

// screenView draws the events pane while the turn's full-screen program
// shows its screen (screen.go): the screen's rows, indented as output is,
// the rows that do not fit cut at the bottom, then the footer.
func (eventsPane) screenView(c common, v *sessView, f eventsFrame, w, h, rows int, footer []string) []string {
	iw := w - 2
	focused := f.screenKeys
	lines := v.transcript.screen.lines(v.transcript.prof, focused)
	content := make([]string, 0, h)
	for i := 0; i < rows && i < len(lines); i++ {
		content = append(content, "  "+fitStyled(lines[i], iw-2))
	}
	for len(content) < rows {
		content = append(content, spaces(iw))
	}
	content = append(content, footer...)
	right := "full-screen · f gives it the keys"
	if focused {
		right = "full-screen · keys go to it · ctrl+] gives them back"
	}
	if !v.takesCommands() {
		right = "full-screen"
	}
	title := "Events · screen"
	if t := v.transcript.fold.Turn(); t != nil && t.ID == v.transcript.screen.turnID {
		title = "Events · turn " + strconv.Itoa(t.Index) + "'s screen"
	}
	return box(c.st, title, right, f.focused || focused, w, h, content)
}
