package tui

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"looprig/rig"
)

// Minimum window; below it View shows the "terminal too small" screen.
const (
	minWidth  = 40
	minHeight = 10
	wideAt    = 120 // side by side from here
	stackAt   = 60  // stacked from here; list only below
)

type layoutMode int

const (
	modeSingle layoutMode = iota // the focused pane only (very narrow)
	modeStacked
	modeWide
)

// geometry is the split of the window into panes; all heights include
// the pane's frame.
type geometry struct {
	mode                       layoutMode
	bodyH                      int
	listW, listH               int
	detailW, detailH           int
	eventsW, eventsH           int
	stripH, inputH             int
	showList, showDet, showEvt bool
}

func (m *model) geometry() geometry {
	w, h := m.width, m.height
	g := geometry{}
	if m.input != nil {
		g.inputH = 1
	}
	g.stripH = len(m.stripLines(w, stripMax(h)))
	g.bodyH = h - 1 - g.stripH - g.inputH
	switch {
	case w >= wideAt && g.bodyH >= 10:
		g.mode = modeWide
	case w >= stackAt && g.bodyH >= 14:
		g.mode = modeStacked
	default:
		g.mode = modeSingle
	}
	switch g.mode {
	case modeWide:
		g.listW = min(max(w*2/5, 50), 90)
		g.detailW, g.eventsW = w-g.listW, w-g.listW
		g.listH = g.bodyH
		g.detailH = min(max(g.bodyH*2/5, 6), 14)
		g.eventsH = g.bodyH - g.detailH
		g.showList, g.showDet, g.showEvt = true, true, true
	case modeStacked:
		g.listW, g.detailW, g.eventsW = w, w, w
		g.listH = max(6, g.bodyH*2/5, min(g.bodyH/2, 9))
		if g.bodyH >= 24 {
			g.detailH = min(9, g.bodyH-g.listH-6)
		}
		g.eventsH = g.bodyH - g.listH - g.detailH
		g.showList, g.showDet, g.showEvt = true, g.detailH > 0, true
	default:
		g.listW, g.detailW, g.eventsW = w, w, w
		switch m.focus {
		case paneEvents:
			g.eventsH, g.showEvt = g.bodyH, true
		case paneDetail:
			g.detailH, g.showDet = g.bodyH, true
		default:
			g.listH, g.showList = g.bodyH, true
		}
	}
	return g
}

// listRows is how many session rows the list pane shows.
func (m *model) listRows() int {
	if m.width < minWidth || m.height < minHeight {
		return 0
	}
	g := m.geometry()
	if !g.showList {
		return max(1, m.height-4)
	}
	return max(0, g.listH-3-boolInt(m.filterActive))
}

func (m *model) eventRows() int {
	g := m.geometry()
	if !g.showEvt {
		return max(1, m.height-4)
	}
	return max(1, g.eventsH-2)
}

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
		lines = append(lines, m.helpScreen(w, g.bodyH)...)
	} else {
		lines = append(lines, m.body(g)...)
	}
	if m.dialog != nil {
		m.overlay(lines, w)
	}
	lines = append(lines, m.stripLines(w, stripMax(h))...)
	if m.input != nil {
		lines = append(lines, m.inputLine(w))
	}
	lines = append(lines, m.statusLine(w))
	return strings.Join(lines, "\n")
}

func (m *model) tooSmall() string {
	w, h := m.width, m.height
	msg := []string{
		"terminal too small",
		"need " + itoa(minWidth) + "×" + itoa(minHeight),
		"have " + itoa(w) + "×" + itoa(h),
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
		left := m.listPane(g.listW, g.listH)
		right := append(m.detailPane(g.detailW, g.detailH), m.eventsPane(g.eventsW, g.eventsH)...)
		out := make([]string, g.bodyH)
		for i := range out {
			out[i] = left[i] + right[i]
		}
		return out
	case modeStacked:
		out := m.listPane(g.listW, g.listH)
		if g.showDet {
			out = append(out, m.detailPane(g.detailW, g.detailH)...)
		}
		return append(out, m.eventsPane(g.eventsW, g.eventsH)...)
	}
	switch {
	case g.showEvt:
		return m.eventsPane(g.eventsW, g.eventsH)
	case g.showDet:
		return m.detailPane(g.detailW, g.detailH)
	}
	return m.listPane(g.listW, g.listH)
}

// box frames content lines (each exactly w-2 cells, painted) in a pane of
// w×h with title (plain) in the top border.
func (m *model) box(title, right string, focused bool, w, h int, content []string) []string {
	if h <= 0 {
		return nil
	}
	st := m.st
	fr, bp := frameBlur, st.borderBlur
	tp := st.muted
	if focused {
		fr, bp, tp = frameFocus, st.borderFocus, st.accentBold
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

// ---- sessions pane ----------------------------------------------------------------

type listCols struct {
	title, epoch, holder, act int
}

func listColumns(iw int) listCols {
	// fixed: cursor 2, state 10, id 9
	c := listCols{epoch: 6, holder: 20, act: 5}
	rest := iw - 2 - 10 - 9
	if rest-c.epoch-c.holder-c.act < 16 {
		c.holder = 0
	}
	if rest-c.epoch-c.holder-c.act < 12 {
		c.act = 0
	}
	if rest-c.epoch-c.holder-c.act < 10 {
		c.epoch = 0
	}
	c.title = max(0, rest-c.epoch-c.holder-c.act)
	return c
}

func (m *model) listPane(w, h int) []string {
	st := m.st
	iw := w - 2
	rows := max(0, h-3-boolInt(m.filterActive))
	content := make([]string, 0, h-2)
	if m.filterActive {
		content = append(content, renderInput(st, m.filterInput, iw, "/ "))
	}
	c := listColumns(iw)
	hdr := "  " + fit("STATE", 10) + fit("ID", 9) + fit("TITLE", c.title)
	if c.epoch > 0 {
		hdr += padLeft("EPOCH", c.epoch-1) + " "
	}
	if c.holder > 0 {
		hdr += fit("HOLDER", c.holder)
	}
	if c.act > 0 {
		hdr += padLeft("LAST", c.act)
	}
	content = append(content, st.muted.s(fit(hdr, iw)))
	top := m.top
	if m.cursor < top {
		top = m.cursor
	}
	if rows > 0 && m.cursor >= top+rows {
		top = m.cursor - rows + 1
	}
	top = max(0, top)
	now := m.now()
	for i := top; i < len(m.vis) && i < top+rows; i++ {
		content = append(content, m.listRow(m.vis[i], i == m.cursor, iw, c, now))
	}
	if len(m.vis) == 0 && rows > 0 {
		msg := "no sessions yet — n creates one"
		switch {
		case !m.listed && m.listErr == nil:
			msg = "reading the store…"
		case m.listErr != nil:
			msg = "cannot list sessions: " + errText(m.listErr)
		case m.filter != "":
			msg = "no session matches " + quote(m.filter) + " — esc clears the filter"
		}
		content = append(content, st.muted.s(fit("  "+msg, iw)))
	}
	title := "Sessions"
	right := itoa(len(m.rows))
	if len(m.vis) > 0 {
		right = itoa(m.cursor+1) + "/" + itoa(len(m.vis))
	}
	if m.filter != "" && !m.filterActive {
		title += " /" + clean(m.filter)
	}
	if m.listErr != nil {
		right = "list failed"
	}
	return m.box(title, right, m.focus == paneList, w, h, content)
}

func (m *model) listRow(v *sessView, selected bool, iw int, c listCols, now timeT) string {
	st := m.st
	state := v.state()
	cur := "  "
	if selected {
		cur = "▸ "
	}
	word := stateGlyph(state) + " " + fit(stateWord(state), 7) + " "
	title := v.title
	if title == "" {
		title = "(untitled)"
	}
	if t := v.openTurnIndex(); t >= 0 {
		mark := "▶" + itoa(t)
		if v.hasGate() {
			mark += "?"
		}
		title = mark + " " + title
	}
	if v.busy != "" {
		title = "⟳ " + title
	}
	parts := [6]string{cur, word, fit(v.short, 8) + " ", fit(title, c.title), "", ""}
	var tail strings.Builder
	if c.epoch > 0 {
		tail.WriteString(padLeft(u64(v.epoch()), c.epoch-1) + " ")
	}
	if c.holder > 0 {
		h := v.holder
		if state == rig.StateLive {
			h = "this TUI"
		}
		tail.WriteString(fit(h, c.holder))
	}
	if c.act > 0 {
		tail.WriteString(padLeft(ago(now, v.lastActivity()), c.act))
	}
	parts[4] = tail.String()
	used := 2 + 10 + 9 + c.title + c.epoch + c.holder + c.act
	parts[5] = spaces(iw - used)
	if selected {
		return st.sel.s(parts[0] + parts[1] + parts[2] + parts[3] + parts[4] + parts[5])
	}
	sp := st.state[state]
	return parts[0] + sp.s(parts[1]) + st.muted.s(parts[2]) + st.text.s(parts[3]) + st.muted.s(parts[4]) + parts[5]
}

func (v *sessView) openTurnIndex() int {
	if v.live != nil || v.loaded {
		if v.f.openTurn != nil {
			return v.f.openTurn.index
		}
		return -1
	}
	if v.info.OpenTurn != "" {
		return v.info.Turn
	}
	return -1
}

func (v *sessView) hasGate() bool {
	if v.live != nil || v.loaded {
		return v.f.openGate != nil
	}
	return v.info.OpenGate != ""
}

func (v *sessView) lastActivity() timeT {
	t := v.info.Updated
	if v.f.lastAt.After(t) {
		t = v.f.lastAt
	}
	return t
}

// ---- detail pane ------------------------------------------------------------------

func (m *model) detailPane(w, h int) []string {
	if h <= 0 {
		return nil
	}
	st := m.st
	iw := w - 2
	v := m.selected()
	var content []string
	if v == nil {
		content = []string{st.muted.s(fit(" no session selected", iw))}
		return m.box("Detail", "", m.focus == paneDetail, w, h, content)
	}
	lines := m.detailLines(v)
	rows := h - 2
	top := min(m.detailTop, max(0, len(lines)-rows))
	lw := 11
	for i := top; i < len(lines) && len(content) < rows; i++ {
		kv := lines[i]
		if kv.k == "" {
			content = append(content, kv.p.s(fit(" "+kv.v, iw)))
			continue
		}
		content = append(content, st.muted.s(fit(" "+kv.k, lw))+kv.p.s(fit(kv.v, iw-lw)))
	}
	return m.box("Detail", v.short, m.focus == paneDetail, w, h, content)
}

type kv struct {
	k, v string
	p    paint
}

func (m *model) detailLines(v *sessView) []kv {
	st := m.st
	state := v.state()
	var out []kv
	add := func(k, val string, p paint) { out = append(out, kv{k, val, p}) }
	add("id", v.id, st.text)
	sw := stateGlyph(state) + " " + stateWord(state)
	switch {
	case v.live != nil && v.lost == nil:
		sw += " (hosted by this TUI)"
	case v.info.Reason != "":
		sw += " — " + clean(v.info.Reason)
	}
	if v.busy != "" {
		sw += " · " + spinner(m.frameNo) + " " + v.busy + "…"
	}
	add("state", sw, st.state[state])
	lease := "epoch " + u64(v.epoch())
	switch {
	case v.lost != nil:
		lease = "lost at epoch " + u64(v.lost.oldEpoch) + "; " + epochText(v.lost.newEpoch)
		if v.lost.newEpoch > 0 {
			lease = "lost at epoch " + u64(v.lost.oldEpoch) + "; epoch " + u64(v.lost.newEpoch)
		}
		if v.lost.holder != "" {
			lease += " held by " + v.lost.holder
		}
	case v.live != nil:
		lease += " · held by this TUI"
	case v.holder != "" && state == rig.StateHeld:
		lease += " · held by " + v.holder
	case v.holder != "":
		lease += " · last holder " + v.holder
	default:
		lease += " · free"
	}
	add("lease", lease, st.text)
	title := v.title
	if title == "" {
		title = "(untitled)"
	}
	add("title", title, st.text)
	prof := v.info.Profile
	if prof == "" {
		prof = v.f.profile
	}
	eng := v.info.Engine
	if eng == "" {
		eng = v.f.engine
	}
	add("profile", clean(prof)+" · engine "+clean(eng), st.text)
	place := v.f.placement
	root := v.f.root
	if v.live != nil {
		place, root = string(v.status.Placement), v.status.Workspace
	} else if root == "" && place == string(rig.PlacementSession) && m.h.opts.Workspaces != "" {
		root = filepath.Join(m.h.opts.Workspaces, v.id)
	}
	if place != "" || root != "" {
		add("placement", clean(place)+" · "+clean(orDash(root)), st.text)
	}
	seq := max(v.lastSeq, v.info.LastSeq)
	add("journal", commas(seq)+" records (last seq "+u64(seq)+")", st.text)
	if v.f.loopID != "" {
		add("loop", clean(v.f.loopName)+" "+rig.ShortID(clean(v.f.loopID))+" ("+clean(v.f.engine)+") · "+plural(max(v.f.turns, v.info.Turns), "turn"), st.text)
	}
	if t := v.f.openTurn; t != nil {
		run := ""
		if !t.started.IsZero() {
			run = " for " + dur(m.now().Sub(t.started))
		}
		add("turn", "#"+itoa(t.index)+" running"+run+": "+clean(firstLine(t.input)), st.ev[clsTurn])
	} else if v.info.OpenTurn != "" && !v.loaded && v.live == nil {
		add("turn", "#"+itoa(v.info.Turn)+" open (per the catalog)", st.ev[clsTurn])
	} else {
		add("turn", "none running", st.muted)
	}
	if g := v.f.openGate; g != nil {
		add("gate", "? "+clean(firstLine(g.prompt))+" — a approve · d deny", st.ev[clsGate])
	} else {
		add("gate", "none open", st.muted)
	}
	if o := v.outcome; o != nil {
		add("restored", "epoch "+u64(o.Epoch)+": "+plural(len(o.Interrupted), "turn")+" interrupted, "+
			plural(len(o.GatesClosed), "gate")+" closed, "+commas(o.Records)+" records", st.ev[clsRestore])
	} else if r := v.f.lastRestore; r != nil {
		add("restored", "epoch "+u64(r.Epoch)+": "+plural(len(r.Interrupted), "turn")+" interrupted, "+
			plural(len(r.GatesClosed), "gate")+" closed", st.ev[clsRestore])
	}
	if !v.info.Created.IsZero() {
		add("created", v.info.Created.Local().Format("2006-01-02 15:04:05"), st.muted)
	}
	if why := v.notMutable(); why != "" && v.lost == nil {
		add("keys", why, st.muted)
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ---- events pane ------------------------------------------------------------------

func (m *model) eventsPane(w, h int) []string {
	if h <= 0 {
		return nil
	}
	st := m.st
	iw := w - 2
	rows := h - 2
	v := m.selected()
	if v == nil {
		lines := []string{st.muted.s(fit(" no session selected", iw))}
		if len(m.rows) == 0 && m.listed {
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
		return m.box("Events", "", m.focus == paneEvents, w, h, lines)
	}
	var footer []string
	switch {
	case v.busy == "restoring" || v.busy == "breaking the lease":
		text := " " + spinner(m.frameNo) + " " + v.busy + ": taking the lease, replaying " + commas(v.info.LastSeq) +
			" journal records, closing open turns… " + dur(m.now().Sub(v.busySince))
		footer = append(footer, st.ev[clsRestore].s(fit(text, iw)))
	case v.replaying:
		footer = append(footer, m.progressLine(v, iw))
	case v.loading && !v.loaded:
		footer = append(footer, st.muted.s(fit(" "+spinner(m.frameNo)+" reading the journal… "+commas(v.lastSeq)+" records", iw)))
	case v.live == nil && v.loaded && v.state() == rig.StateCrashed && v.f.openTurn != nil:
		footer = append(footer, st.warn.s(fit(" ⚠ the journal ends here: turn "+itoa(v.f.openTurn.index)+" was running when its holder died — r restores", iw)))
	}
	rows -= len(footer)
	total := v.ring.len()
	if v.pend != "" {
		total++
	}
	scroll := 0
	if !v.follow {
		scroll = min(v.scroll, max(0, total-rows))
	}
	end := total - scroll
	start := max(0, end-rows)
	content := make([]string, 0, h)
	for i := start; i < end; i++ {
		var l evLine
		if i < v.ring.len() {
			l = v.ring.at(i)
		} else {
			l = evLine{cls: v.pendCls, text: "  " + cleanOutput(v.pend)}
		}
		content = append(content, m.eventLine(l, iw))
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
	case v.live != nil && v.lost == nil:
		title += " · live"
	default:
		title += " · journal (read-only)"
	}
	var right []string
	if v.follow {
		right = append(right, "following")
	} else {
		right = append(right, "↑"+itoa(scroll))
	}
	if v.dropped > 0 {
		right = append(right, "dropped "+commas(v.dropped))
	}
	if v.outLines > 0 {
		n := commas(v.outLines) + " lines"
		if v.dropped > 0 {
			n = "≈" + n // dropped deltas are filled in from checkpoints, by bytes
		}
		right = append(right, n)
	}
	return m.box(title, strings.Join(right, " · "), m.focus == paneEvents, w, h, content)
}

func (m *model) eventLine(l evLine, iw int) string {
	st := m.st
	p := st.ev[l.cls]
	if l.at.IsZero() {
		return p.s(fit(l.text, iw))
	}
	ts := l.at.Local().Format("15:04:05") + " "
	if iw < 30 {
		return p.s(fit(l.text, iw))
	}
	return st.muted.s(ts) + p.s(fit(l.text, iw-9))
}

func (m *model) progressLine(v *sessView, iw int) string {
	st := m.st
	done, tip := v.lastSeq, max(v.histTip, v.lastSeq)
	label := " " + spinner(m.frameNo) + " replaying history " + commas(done) + "/" + commas(tip) + " "
	bw := max(0, iw-width(label)-2)
	filled := 0
	if tip > 0 {
		filled = int(uint64(bw) * done / tip)
	}
	bar := strings.Repeat("█", filled) + strings.Repeat("░", bw-filled)
	return st.ev[clsRestore].s(fit(label+bar, iw))
}

var spinFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func spinner(n int) string { return spinFrames[n%len(spinFrames)] }

// ---- errors / lease strip -------------------------------------------------------

// stripLines is the errors/lease strip: a global failure, the lease-lost
// banner of the selected session (until dismissed), or the selected
// session's failed restore. At most maxH lines; none when all is well.
func (m *model) stripLines(w, maxH int) []string {
	if w < minWidth || m.height < minHeight {
		return nil
	}
	var lines []stripLine
	v := m.selected()
	switch {
	case m.globalErr != nil:
		lines = m.failureLines(strings.ToUpper(m.globalErr.op)+" FAILED", "", m.globalErr.err)
	case v != nil && v.lost != nil && !v.lostSeen:
		lines = m.lostLines(v)
	case v != nil && v.restoreErr != nil:
		lines = m.failureLines("", v.failedOp+" of "+v.short, v.restoreErr)
	default:
		return nil
	}
	if len(lines) == 0 {
		return nil
	}
	st := m.st
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
	if v != nil && v.lost != nil && !v.lostSeen && m.globalErr == nil {
		title = "Lease"
	}
	out := m.boxP(title, "esc dismisses", st.errorP, w, len(content)+2, content)
	return out
}

// stripMax is the most lines the strip may take of a window h high.
func stripMax(h int) int { return max(3, h*2/5) }

// boxP is box with a fixed border paint (the strip is always red-framed).
func (m *model) boxP(title, right string, p paint, w, h int, content []string) []string {
	saved := m.st.borderBlur
	m.st.borderBlur = p
	out := m.box(title, right, false, w, h, content)
	m.st.borderBlur = saved
	return out
}

type stripLine struct {
	prio   int // 0 headline, 1 remedy, 2 table, 3 stage, 4 cause: what goes first when short of room
	badge  string
	badgeP paint
	text   string // plain, sanitized
	p      paint
}

func (m *model) lostLines(v *sessView) []stripLine {
	st := m.st
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
		{badge: "LEASE LOST", badgeP: st.errorBadge, text: "session " + v.short + ": epoch " + u64(l.oldEpoch) + " → " + epochText(l.newEpoch) + ", now held by " + who, p: st.errorP},
		{prio: 3, text: "this TUI no longer owns it and refuses writes: read-only (i, I, a, d, X disabled)", p: st.text},
		{prio: 1, text: "→ nothing to do here; to take it back, B breaks the lease again · esc dismisses", p: st.muted},
	}
}

// failureLines explains a failed create or restore: the kind as a badge,
// the stage, the cause chain and a one-line remedy.
func (m *model) failureLines(badge, what string, err error) []stripLine {
	st := m.st
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

// ---- help screen ------------------------------------------------------------------

func (m *model) helpScreen(w, h int) []string {
	st := m.st
	iw := w - 2
	rows := h - 2
	head := []string{renderInput(st, m.help.ti, iw, " "),
		st.muted.s(fit(" states: ● live  ◆ held  ○ idle  ✗ crashed  ⊘ broken — read by glyph and word, colour only helps", iw))}
	entries := m.help.entries(m)
	cols := 1
	if len(entries) > rows-len(head) && iw >= 80 {
		cols = 2
	}
	colW := iw / cols
	cell := func(e helpEntry, cw int) string {
		const kw = 13
		if e.group != "" {
			return st.accentBold.s(fit(" "+e.group, cw))
		}
		keyCell := st.key.s(fit("   "+e.keys, kw))
		if e.disabled != "" {
			d := trunc(e.desc, max(0, cw-kw))
			return keyCell + st.disabled.s(d) + st.muted.s(fit(" (disabled: "+e.disabled+")", max(0, cw-kw-width(d))))
		}
		return keyCell + st.text.s(fit(e.desc, max(0, cw-kw)))
	}
	avail := max(0, rows-len(head))
	content := head
	per := (len(entries) + cols - 1) / cols
	if cols == 2 {
		// break at a group boundary near the middle
		for i := per; i < len(entries); i++ {
			if entries[i].group != "" {
				per = i
				break
			}
		}
	}
	shown := 0
	for r := 0; r < min(per, avail); r++ {
		var line strings.Builder
		for c := 0; c < cols; c++ {
			cw := colW
			if c == cols-1 {
				cw = iw - colW*(cols-1)
			}
			i := c*per + r
			if (c == 0 && i < per || c > 0) && i < len(entries) && (c == cols-1 || i < (c+1)*per) {
				line.WriteString(cell(entries[i], cw))
				shown++
			} else {
				line.WriteString(spaces(cw))
			}
		}
		content = append(content, line.String())
	}
	if shown < len(entries) && len(content) > len(head) {
		content[len(content)-1] = st.muted.s(fit("   … "+itoa(len(entries)-shown+1)+" more — type to filter", iw))
	}
	if len(entries) == 0 {
		content = append(content, st.muted.s(fit("   no key matches", iw)))
	}
	if len(content) > rows {
		content = content[:max(0, rows)]
	}
	return m.box("Help", "type to filter · esc closes", true, w, h, content)
}

// ---- dialogs, input, status ---------------------------------------------------

// overlay draws the dialog box centred over body lines.
func (m *model) overlay(body []string, w int) {
	title, content := m.dialog.view(m, min(w-4, 72)-4)
	bw := 4
	for _, c := range content {
		bw = max(bw, ansi.StringWidth(c)+4)
	}
	bw = min(max(bw, width(title)+8, 40), w)
	inner := make([]string, len(content)+2)
	inner[0] = spaces(bw - 4)
	for i, c := range content {
		inner[i+1] = " " + c + spaces(max(0, bw-4-1-ansi.StringWidth(c)))
	}
	inner[len(inner)-1] = spaces(bw - 4)
	for i := range inner {
		inner[i] = ansi.Truncate(inner[i], bw-2, "")
		inner[i] += spaces(bw - 2 - ansi.StringWidth(inner[i]))
	}
	box := m.box(title, "", true, bw, len(inner)+2, inner)
	if len(box) > len(body) {
		box = box[:len(body)]
	}
	y := max(0, (len(body)-len(box))/2)
	x := max(0, (w-bw)/2)
	for i, b := range box {
		base := body[y+i]
		left := ansi.Truncate(base, x, "")
		left += spaces(x - ansi.StringWidth(left))
		right := ansi.TruncateLeft(base, x+bw, "")
		if m.st.plain {
			body[y+i] = left + b + right
		} else {
			body[y+i] = left + reset + b + reset + right
		}
	}
}

func (m *model) inputLine(w int) string {
	st := m.st
	v := m.sessions[m.input.id]
	label := " input"
	if v != nil {
		label = " " + v.short
	}
	hint := "  enter submit · esc cancel "
	if w < 60 {
		hint = ""
	}
	lw := width(label) + 3
	return st.accentBold.s(label+" ▸ ") + renderInput(st, m.input.ti, w-lw-width(hint), "") + st.muted.s(hint)
}

func (m *model) statusLine(w int) string {
	st := m.st
	brand := " looprig "
	store := "store " + clean(m.h.opts.StoreDir)
	if m.h.opts.StoreDir == "" {
		store = "store"
	}
	right := " " + m.st.theme.Name + " "
	if m.quitting != "" {
		msg := " " + spinner(m.frameNo) + " " + m.quitting
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
	if m.flashMsg != "" {
		mid = st.ev[m.flashCls].s(fit(m.flashMsg, rest))
	} else {
		mid = m.hints(rest)
	}
	return st.accBadge.s(brand) + " " + st.muted.s(storeTxt) + " " + mid + st.muted.s(right)
}

// hints are the most useful keys for the focused pane, as many as fit.
func (m *model) hints(w int) string {
	st := m.st
	type hk struct{ k, d string }
	var hs []hk
	v := m.selected()
	switch {
	case m.filterActive:
		hs = []hk{{"enter", "keep filter"}, {"esc", "clear"}, {"↑/↓", "move"}}
	case m.help != nil:
		hs = []hk{{"type", "filter"}, {"esc", "close"}}
	case m.focus == paneEvents:
		hs = []hk{{"↑/↓", "scroll"}, {"G", "follow"}, {"g", "top"}}
		if v != nil && v.live != nil && v.lost == nil {
			hs = append(hs, hk{"i", "input"}, hk{"I", "interrupt"})
		}
		hs = append(hs, hk{"tab", "pane"}, hk{"?", "help"})
	case m.focus == paneDetail:
		hs = []hk{{"↑/↓", "scroll"}, {"tab", "pane"}, {"?", "help"}}
	default:
		hs = []hk{{"↑/↓", "move"}, {"enter", "open"}, {"n", "new"}}
		if v != nil {
			switch {
			case v.live != nil && v.lost == nil:
				if v.f.openGate != nil {
					hs = append(hs, hk{"a/d", "approve/deny"})
				}
				hs = append(hs, hk{"i", "input"}, hk{"I", "interrupt"}, hk{"X", "shut down"})
			case v.state() == rig.StateHeld || v.state() == rig.StateLive:
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

const reset = "\x1b[0m"

type timeT = time.Time
