package tui

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"looprig/rig"
)

// sessionList is the sessions pane: every session newest first, the rows
// that pass the filter, the cursor among them, and the filter line.
type sessionList struct {
	rows   []*sessView // every session, newest first
	vis    []*sessView // rows passing the filter
	cursor int
	top    int // first row shown

	filter       string
	filterInput  textinput.Model
	filterActive bool // the filter line has the keys

	settleGen int // bumped by every move; the selection's journal is read once it settles

	// listed: a listing arrived; err: the last one failed (the pane says
	// so while it has no rows).
	listed bool
	err    error

	// seen is what the user looked at: the rows' TURN marks and the
	// needs:me filter read it (attention.go).
	seen *seenState
}

// listSpace is the room the sessions pane has: the height of its pane
// when it is shown, else (a narrow window shows another pane, or none)
// the rows a page moves by.
type listSpace struct {
	shown bool
	paneH int // the pane's height, frame included, when shown
	rows  int // the rows of a page when not shown
}

// rowsShown is how many session rows the pane shows in s: its height
// less the frame, the header and the filter line while it is open.
func (l *sessionList) rowsShown(s listSpace) int {
	if !s.shown {
		return s.rows
	}
	return max(0, s.paneH-3-boolInt(l.filterActive))
}

// shownIDs are the ids of the rows on screen in s, the selection's
// included: the sessions whose holders the lister asks about between
// listings (rig.Lister.Show).
func (l *sessionList) shownIDs(s listSpace) []string {
	ids := []string{}
	for i := l.top; i < len(l.vis) && i < l.top+l.rowsShown(s); i++ {
		ids = append(ids, l.vis[i].id)
	}
	if v := l.selected(); v != nil {
		ids = append(ids, v.id)
	}
	return ids
}

func (l *sessionList) selected() *sessView {
	if l.cursor >= 0 && l.cursor < len(l.vis) {
		return l.vis[l.cursor]
	}
	return nil
}

// resort orders the sessions (newest first, by creation) and reapplies the
// filter, keeping the selection on the same session.
func (l *sessionList) resort(sessions map[string]*sessView) {
	var keep string
	if s := l.selected(); s != nil {
		keep = s.id
	}
	l.rows = l.rows[:0]
	for _, v := range sessions {
		l.rows = append(l.rows, v)
	}
	sort.Slice(l.rows, func(i, j int) bool {
		a, b := l.rows[i], l.rows[j]
		if !a.listing.info.Created.Equal(b.listing.info.Created) {
			return a.listing.info.Created.After(b.listing.info.Created)
		}
		return a.id < b.id
	})
	l.refilter(keep)
}

// refilter reapplies the filter, keeping the cursor on session keep.
func (l *sessionList) refilter(keep string) {
	l.vis = l.vis[:0]
	f := strings.ToLower(l.filter)
	if matchesNeeds(f) && l.seen != nil {
		l.vis = oldestNeeding(l.vis, l.rows, l.seen)
	} else {
		for _, v := range l.rows {
			if f == "" || matches(v, f) {
				l.vis = append(l.vis, v)
			}
		}
	}
	l.cursor = 0
	if keep != "" {
		for i, v := range l.vis {
			if v.id == keep {
				l.cursor = i
				break
			}
		}
	}
	l.clampCursor()
}

// matches says whether the lower-cased filter f matches v.
func matches(v *sessView, f string) bool {
	return strings.Contains(strings.ToLower(v.listing.title), f) || strings.Contains(v.id, f) ||
		strings.Contains(string(v.state()), f) || strings.Contains(strings.ToLower(v.listing.info.Profile), f) ||
		strings.Contains(strings.ToLower(v.listing.holder), f)
}

func (l *sessionList) clampCursor() {
	if l.cursor >= len(l.vis) {
		l.cursor = len(l.vis) - 1
	}
	if l.cursor < 0 {
		l.cursor = 0
	}
}

// keepVisible scrolls the list so the cursor row is one of the rows shown.
func (l *sessionList) keepVisible(s listSpace) {
	rows := l.rowsShown(s)
	l.clampCursor()
	if rows <= 0 {
		return
	}
	if l.cursor < l.top {
		l.top = l.cursor
	}
	if l.cursor >= l.top+rows {
		l.top = l.cursor - rows + 1
	}
	if l.top > max(0, len(l.vis)-rows) {
		l.top = max(0, len(l.vis)-rows)
	}
	if l.top < 0 {
		l.top = 0
	}
}

// move moves the cursor by a movement key; it reports whether the
// selection changed (settle then reads the new selection's journal once
// the cursor rests).
func (l *sessionList) move(k keyMap, msg tea.KeyMsg, s listSpace) bool {
	if len(l.vis) == 0 {
		return false
	}
	prev := l.cursor
	page := max(1, l.rowsShown(s)-1)
	switch {
	case key.Matches(msg, k.Up):
		l.cursor--
	case key.Matches(msg, k.Down):
		l.cursor++
	case key.Matches(msg, k.PageUp):
		l.cursor -= page
	case key.Matches(msg, k.PageDown):
		l.cursor += page
	case key.Matches(msg, k.Top):
		l.cursor = 0
	case key.Matches(msg, k.Bottom):
		l.cursor = len(l.vis) - 1
	}
	l.keepVisible(s)
	return l.cursor != prev
}

// settle starts the wait after a move of the selection: when no other
// move follows within it, the root reads the selection's journal
// (settled).
func (l *sessionList) settle() tea.Cmd {
	l.settleGen++
	return settle(l.settleGen)
}

// settled says whether msg ends the wait of the last move.
func (l *sessionList) settled(msg settleMsg) bool { return msg.gen == l.settleGen }

// selectID moves the cursor to session id, if it is shown.
func (l *sessionList) selectID(id string, s listSpace) {
	for i, v := range l.vis {
		if v.id == id {
			l.cursor = i
			l.keepVisible(s)
			return
		}
	}
}

// setFilter filters the rows by f, keeping the selection when it passes.
func (l *sessionList) setFilter(f string, s listSpace) {
	var keep string
	if v := l.selected(); v != nil {
		keep = v.id
	}
	l.filter = f
	l.refilter(keep)
	l.keepVisible(s)
}

// shows says whether v is one of the rows passing the filter.
func (l *sessionList) shows(v *sessView) bool {
	for _, w := range l.vis {
		if w == v {
			return true
		}
	}
	return false
}

// openFilter gives the keys to the filter line, starting from the filter
// in force.
func (l *sessionList) openFilter() tea.Cmd {
	l.filterActive = true
	l.filterInput.SetValue(l.filter)
	l.filterInput.CursorEnd()
	return l.filterInput.Focus()
}

func (l *sessionList) closeFilter() {
	l.filterActive = false
	l.filterInput.Blur()
}

// filterKey is a key typed into the filter line: enter keeps the filter,
// esc clears it, ↑/↓ move in the list (moved: the selection changed), the
// rest edit it.
func (l *sessionList) filterKey(k keyMap, msg tea.KeyMsg, s listSpace) (moved bool, cmd tea.Cmd) {
	switch msg.Type {
	case tea.KeyEnter:
		l.closeFilter()
		return false, nil
	case tea.KeyEsc:
		l.closeFilter()
		l.setFilter("", s)
		return false, nil
	case tea.KeyUp, tea.KeyDown:
		return l.move(k, msg, s), nil
	}
	l.filterInput, cmd = l.filterInput.Update(msg)
	if v := l.filterInput.Value(); v != l.filter {
		l.setFilter(v, s)
	}
	return false, cmd
}

// listCols are the widths of the list's columns that vary.
type listCols struct {
	turn, title, epoch, holder, act int
}

// turnWidth is the TURN column's: a glyph and a word or an age
// ("? gate 12m", "✗ exit 127").
const turnWidth = 11

func listColumns(iw int) listCols {
	// fixed: cursor 2, state 10, id 9
	c := listCols{turn: turnWidth, epoch: 6, holder: 20, act: 5}
	rest := iw - 2 - 10 - 9
	if rest-c.turn-c.epoch-c.holder-c.act < 16 {
		c.holder = 0
	}
	if rest-c.turn-c.epoch-c.holder-c.act < 12 {
		c.act = 0
	}
	if rest-c.turn-c.epoch-c.holder-c.act < 10 {
		c.epoch = 0
	}
	if rest-c.turn-c.epoch-c.holder-c.act < 8 {
		c.turn = 0
	}
	c.title = max(0, rest-c.turn-c.epoch-c.holder-c.act)
	return c
}

// view draws the sessions pane, w×h with its frame.
func (l *sessionList) view(c common, focused bool, w, h int) []string {
	st := c.st
	iw := w - 2
	rows := max(0, h-3-boolInt(l.filterActive))
	content := make([]string, 0, h-2)
	if l.filterActive {
		content = append(content, renderInput(st, l.filterInput, iw, "/ "))
	}
	cols := listColumns(iw)
	hdr := "  " + fit("STATE", 10) + fit("ID", 9)
	if cols.turn > 0 {
		hdr += fit("TURN", cols.turn)
	}
	hdr += fit("TITLE", cols.title)
	if cols.epoch > 0 {
		hdr += padLeft("EPOCH", cols.epoch-1) + " "
	}
	if cols.holder > 0 {
		hdr += fit("HOLDER", cols.holder)
	}
	if cols.act > 0 {
		hdr += padLeft("LAST", cols.act)
	}
	content = append(content, st.muted.s(fit(hdr, iw)))
	top := l.top
	if l.cursor < top {
		top = l.cursor
	}
	if rows > 0 && l.cursor >= top+rows {
		top = l.cursor - rows + 1
	}
	top = max(0, top)
	now := c.now
	for i := top; i < len(l.vis) && i < top+rows; i++ {
		v := l.vis[i]
		mark, cls := turnMark(l.seen, v, now)
		content = append(content, listRow(st, v, i == l.cursor, iw, cols, now, mark, cls))
	}
	if len(l.vis) == 0 && rows > 0 {
		msg := "no sessions yet — n creates one"
		switch {
		case !l.listed && l.err == nil:
			msg = "reading the store…"
		case l.err != nil:
			msg = "cannot list sessions: " + errText(l.err)
		case matchesNeeds(strings.ToLower(l.filter)):
			msg = "no session is waiting for you — esc clears the filter"
		case l.filter != "":
			msg = "no session matches " + strconv.Quote(l.filter) + " — esc clears the filter"
		}
		content = append(content, st.muted.s(fit("  "+msg, iw)))
	}
	title := "Sessions"
	right := strconv.Itoa(len(l.rows))
	if len(l.vis) > 0 {
		right = strconv.Itoa(l.cursor+1) + "/" + strconv.Itoa(len(l.vis))
	}
	if l.filter != "" && !l.filterActive {
		title += " /" + clean(l.filter)
	}
	if l.err != nil {
		right = "list failed"
	}
	return box(st, title, right, focused, w, h, content)
}

// listRow draws a session's row; mark is its TURN column (turnMark).
func listRow(st *styles, v *sessView, selected bool, iw int, c listCols, now time.Time, mark string, cls lineClass) string {
	state := v.state()
	cur := "  "
	if selected {
		cur = "▸ "
	}
	word := stateGlyph(state) + " " + fit(stateWord(state), 7) + " "
	title := v.listing.title
	if title == "" {
		title = "(untitled)"
	}
	if v.busy != notBusy {
		title = "⟳ " + title
	}
	turn := ""
	if c.turn > 0 {
		turn = fit(mark, c.turn-1) + " "
	}
	parts := [7]string{cur, word, fit(v.short, 8) + " ", turn, fit(title, c.title), "", ""}
	var tail strings.Builder
	if c.epoch > 0 {
		tail.WriteString(padLeft(strconv.FormatUint(v.epoch(), 10), c.epoch-1) + " ")
	}
	if c.holder > 0 {
		h := v.listing.holder
		switch {
		case state == rig.StateLive:
			h = "live · pid " + strconv.Itoa(v.hostPID())
		case v.listing.probe.stopped:
			h = "not answering" // its pid: the detail pane
		}
		tail.WriteString(fit(h, c.holder))
	}
	if c.act > 0 {
		tail.WriteString(padLeft(ago(now, v.lastActivity()), c.act))
	}
	parts[5] = tail.String()
	used := 2 + 10 + 9 + c.turn + c.title + c.epoch + c.holder + c.act
	parts[6] = spaces(iw - used)
	if selected {
		return st.sel.s(strings.Join(parts[:], ""))
	}
	sp := st.state[state]
	turnPaint := st.ev[cls]
	if mark == "" {
		turnPaint = st.muted
	}
	return parts[0] + sp.s(parts[1]) + st.muted.s(parts[2]) + turnPaint.s(parts[3]) + st.text.s(parts[4]) + st.muted.s(parts[5]) + parts[6]
}
