package tui

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"looprig/search"
)

// searchView searches every line of every session (package search: the
// index beside the store, brought up to date first) as the query is
// typed, in place of the panes as the changes view is: s opens it, the
// results come grouped by session as each keystroke is searched (but
// for a query the index cannot narrow: after a pause, searchDebounce),
// ↑↓ choose a hit, enter selects its session in the
// list and focuses its events, esc closes. The / filter of the list is
// another thing (sessions by name, needs:me) and stays as it is.
type searchView struct {
	ti        textinput.Model
	gen       int // of the last query typed; an older answer is dropped
	searching bool
	shown     string // the query the rows answer
	rows      []searchRow
	hits      int
	more      bool // the search stopped at searchMax hits
	// following: the first hits are shown and the search goes on for
	// the rest (up to searchMax).
	following bool
	took      time.Duration
	err       string
	cursor    int // a row that is a hit, -1 when none
	top       int
	// mu makes this view's searches take turns: each opens the index,
	// which one process holds at a time.
	mu *sync.Mutex
	// cache keeps the blocks this view's searches decompressed: each
	// keystroke searches, and reads mostly the blocks the one before it
	// read. It goes with the view.
	cache *search.BlockCache
	// cancel ends the search running, if any: a new query, or the view
	// closed, stops it.
	cancel context.CancelFunc
}

// searchRow is a session's header or one of its hits.
type searchRow struct {
	header bool
	id     string
	text   string // the header's or the hit's line, safe to draw
	match  [][2]int
	line   string // the hit's text, safe to draw (what the events pane shows)
}

// searchMsg answers the search of gen.
type searchMsg struct {
	gen   int
	query string
	hits  []search.Hit
	names map[string]string // session id -> "SHORTID title"
	more  bool              // it stopped at searchMax hits
	// rest, set on the first searchFirst hits of a query that has more,
	// waits for the search's whole answer.
	rest tea.Cmd
	took time.Duration
	err  error
}

// searchTickMsg ends the wait after a keystroke of gen.
type searchTickMsg struct{ gen int }

const (
	// searchDebounce is how long the view waits after a keystroke before
	// it searches a query the index cannot narrow (search.Query.Narrowed:
	// one that reads every block), so that typing the first characters
	// of a word does not read them all at each one. A query it narrows is
	// searched at once, the search before it stopped.
	searchDebounce = 150 * time.Millisecond
	// searchFirst is how many hits a search gives first, a screenful and
	// more, when there are more: the search goes on for the rest, up to
	// searchMax. The hits of a rare word are each in a block of their
	// own, so the first screenful comes after decompressing a third of
	// what all of them need at 300 hits.
	searchFirst = 100
	// searchMax bounds the hits shown.
	searchMax = 500
	// searchCacheBytes bounds the blocks the view keeps decompressed
	// (search.BlockCache): about 850 blocks of 28 KiB of text and their
	// lines' ranges, nearly three times the 300 blocks of a rare word's
	// hits at 1,000 sessions.
	searchCacheBytes = 32 << 20
	// searchTimeout bounds a search, the index's update included: the
	// first one reads every journal (what it read is kept if it stops).
	searchTimeout = 5 * time.Minute
)

// searchKey opens the view.
var searchKey = key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "search every line of every session"))

var errSearchFull = errors.New("enough hits")

func openSearch() *searchView {
	sv := &searchView{ti: newInput("search: ", 256), cursor: -1, mu: &sync.Mutex{}, cache: search.NewBlockCache(searchCacheBytes)}
	sv.ti.Focus()
	return sv
}

// searchResult is what a key did: it closed the view, or chose the hit of
// session id.
type searchResult struct {
	closed bool
	choose string
	line   string        // the chosen hit's text
	query  *search.Query // the query it answers, for n/N
	cmd    tea.Cmd
}

// key: esc closes the view (its search stopped); enter chooses the hit under
// the cursor; ↑↓ pgup pgdn move among the hits; the rest edit the query,
// which is searched at once, or searchDebounce after the last edit when
// the index cannot narrow it.
func (sv *searchView) key(msg tea.KeyMsg, rows int) searchResult {
	switch msg.String() {
	case "esc":
		sv.stop()
		return searchResult{closed: true}
	case "enter":
		if sv.cursor >= 0 && sv.cursor < len(sv.rows) {
			sv.stop()
			r := sv.rows[sv.cursor]
			q, _ := search.ParseQuery(sv.shown)
			return searchResult{closed: true, choose: r.id, line: r.line, query: q}
		}
		return searchResult{}
	case "up":
		sv.moveCursor(-1, rows)
		return searchResult{}
	case "down":
		sv.moveCursor(1, rows)
		return searchResult{}
	case "pgup":
		sv.moveCursor(-rows, rows)
		return searchResult{}
	case "pgdown":
		sv.moveCursor(rows, rows)
		return searchResult{}
	}
	before := sv.ti.Value()
	var cmd tea.Cmd
	sv.ti, cmd = sv.ti.Update(msg)
	if sv.ti.Value() == before {
		return searchResult{cmd: cmd}
	}
	sv.gen++
	gen := sv.gen
	if q, err := search.ParseQuery(strings.TrimSpace(sv.ti.Value())); err == nil && q.Narrowed() {
		// The index narrows it to a few blocks: at once, the search
		// before it stopped (ticked).
		return searchResult{cmd: tea.Batch(cmd, func() tea.Msg { return searchTickMsg{gen: gen} })}
	}
	tick := tea.Tick(searchDebounce, func(time.Time) tea.Msg { return searchTickMsg{gen: gen} })
	return searchResult{cmd: tea.Batch(cmd, tick)}
}

// ticked searches when msg ends the wait after the last keystroke.
func (sv *searchView) ticked(h *shared, msg searchTickMsg) tea.Cmd {
	if msg.gen != sv.gen {
		return nil
	}
	q := strings.TrimSpace(sv.ti.Value())
	if q == "" {
		sv.rows, sv.hits, sv.err, sv.shown, sv.cursor, sv.searching = nil, 0, "", "", -1, false
		return nil
	}
	sv.searching, sv.following = true, false
	sv.stop()
	ctx, cancel := context.WithTimeout(h.ctx, searchTimeout)
	sv.cancel = cancel
	return h.searchCmd(ctx, cancel, sv.mu, sv.cache, sv.gen, q)
}

// stop ends the search running, if any.
func (sv *searchView) stop() {
	if sv.cancel != nil {
		sv.cancel()
		sv.cancel = nil
	}
}

// moveCursor moves the cursor by n hits (headers skipped), keeping it
// within rows lines of the top.
func (sv *searchView) moveCursor(n, rows int) {
	if sv.cursor < 0 {
		return
	}
	step := 1
	if n < 0 {
		step, n = -1, -n
	}
	for ; n > 0; n-- {
		next := sv.cursor + step
		for next >= 0 && next < len(sv.rows) && sv.rows[next].header {
			next += step
		}
		if next < 0 || next >= len(sv.rows) {
			break
		}
		sv.cursor = next
	}
	if sv.cursor-1 < sv.top { // the hit's header in view too
		sv.top = max(0, sv.cursor-1)
	}
	if sv.cursor >= sv.top+rows {
		sv.top = sv.cursor - rows + 1
	}
}

// answered folds the answer to a search; an answer to an older query is
// dropped. The first hits of a query that has more are shown while the
// search goes on (the wait for its whole answer is returned); the cursor
// stays on its hit when the rest comes.
func (sv *searchView) answered(msg searchMsg) tea.Cmd {
	if msg.gen != sv.gen {
		return nil
	}
	var kept searchRow
	offset := 0
	if sv.cursor >= 0 && sv.cursor < len(sv.rows) && sv.shown == msg.query {
		kept, offset = sv.rows[sv.cursor], sv.cursor-sv.top
	}
	sv.searching, sv.shown, sv.took, sv.more = false, msg.query, msg.took, msg.more
	sv.rows, sv.hits, sv.cursor, sv.top, sv.err = nil, len(msg.hits), -1, 0, ""
	sv.following = msg.err == nil && msg.rest != nil
	if msg.err != nil {
		sv.err = errText(msg.err)
		return nil
	}
	sv.group(msg)
	if kept.id != "" {
		for i, r := range sv.rows {
			if !r.header && r.id == kept.id && r.text == kept.text {
				sv.cursor, sv.top = i, max(0, i-offset)
				break
			}
		}
	}
	if sv.following {
		return msg.rest
	}
	return nil
}

// group makes the rows of msg's hits: grouped by session, in the order
// each session first matched; the cursor on the first hit.
func (sv *searchView) group(msg searchMsg) {
	var order []string
	by := map[string][]search.Hit{}
	for _, h := range msg.hits {
		id := h.Session.String()
		if _, ok := by[id]; !ok {
			order = append(order, id)
		}
		by[id] = append(by[id], h)
	}
	for _, id := range order {
		sv.rows = append(sv.rows, searchRow{header: true, id: id, text: clean(msg.names[id])})
		for _, h := range by[id] {
			turn := "  -"
			if h.Turn >= 0 {
				turn = "#" + strconv.Itoa(h.Turn)
			}
			prefix := "  " + turn + " " + h.Kind.String() + "  "
			r := searchRow{id: id, text: prefix + clean(h.Text), line: clean(h.Text)}
			if clean(h.Text) == h.Text { // offsets still hold
				for _, m := range h.Match {
					r.match = append(r.match, [2]int{m[0] + len(prefix), m[1] + len(prefix)})
				}
			}
			sv.rows = append(sv.rows, r)
			if sv.cursor < 0 {
				sv.cursor = len(sv.rows) - 1
			}
		}
	}
}

// searchCmd brings the index up to date and searches query within ctx
// (cancel releases it), one search of the view at a time (mu). Its
// first answer is the whole one, or the first searchFirst hits of a
// query that has more, whose rest waits for the whole one: the search
// runs on in a goroutine of its own, which ends with it (ctx), its
// answers buffered so that it never waits for a reader.
func (h *shared) searchCmd(ctx context.Context, cancel context.CancelFunc, mu *sync.Mutex, cache *search.BlockCache, gen int, query string) tea.Cmd {
	return func() tea.Msg {
		answers := make(chan searchMsg, 2)
		go func() {
			defer cancel()
			answers <- h.search(ctx, mu, cache, gen, query, answers)
		}()
		return <-answers
	}
}

// search is searchCmd's search: it sends the first searchFirst hits on
// answers when there are more, and returns the whole answer.
func (h *shared) search(ctx context.Context, mu *sync.Mutex, cache *search.BlockCache, gen int, query string, answers chan searchMsg) searchMsg {
	msg := searchMsg{gen: gen, query: query}
	q, err := search.ParseQuery(query)
	if err != nil {
		msg.err = err
		return msg
	}
	mu.Lock()
	defer mu.Unlock()
	t0 := time.Now()
	// The list pane's listing: read again only when the store changed
	// (rig.Lister), its liveness from the process table.
	infos, _, err := h.lister.List(ctx)
	if err != nil {
		msg.err = err
		return msg
	}
	msg.names = make(map[string]string, len(infos))
	for _, in := range infos {
		msg.names[in.ID] = in.ShortID() + " " + in.Title
	}
	ix, err := search.Open(ctx, h.store, search.Options{Dir: h.opts.SearchDir, Cache: cache})
	if err != nil {
		msg.err = err
		return msg
	}
	defer ix.Close()
	sent := false // the first hits, once: the whole answer follows them
	_, err = ix.Find(ctx, search.SessionsOf(infos), q, search.Filter{}, nil, func() { msg.hits = nil }, func(hit search.Hit) error {
		switch {
		case len(msg.hits) == searchMax:
			msg.more = true
			return errSearchFull
		case len(msg.hits) == searchFirst && !sent:
			first := msg
			first.hits, first.took = slices.Clone(msg.hits), time.Since(t0)
			first.rest = func() tea.Msg { return <-answers }
			answers <- first
			sent = true
		}
		msg.hits = append(msg.hits, hit)
		return nil
	})
	if err != nil && !errors.Is(err, errSearchFull) {
		msg.err = err
	}
	msg.took = time.Since(t0)
	return msg
}

// view draws the view w×h with its frame; only the visible rows.
func (sv *searchView) view(st *styles, w, h int) []string {
	iw, rows := w-2, h-2
	ti := sv.ti
	ti.Width = max(1, iw-len(ti.Prompt)-2)
	content := []string{fit(" "+ti.View(), iw)}
	var status string
	cls := st.muted
	switch {
	case sv.err != "":
		status, cls = " "+sv.err, st.errorP
	case sv.searching:
		status = " searching…"
	case sv.following:
		status = " the first " + plural(sv.hits, "hit") + " in " + plural(sv.sessions(), "session") + " · " + sv.took.Round(time.Millisecond).String() + " · looking for more…"
	case sv.shown == "":
		status = " words (all of them, any case), \"a phrase\" or /regexp/"
	case sv.hits == 0:
		status = " no line matches"
	default:
		status = " " + plural(sv.hits, "hit") + " in " + plural(sv.sessions(), "session") + " · " + sv.took.Round(time.Millisecond).String()
		if sv.more {
			status += " · the first " + strconv.Itoa(searchMax) + " only"
		}
	}
	content = append(content, cls.s(fit(status, iw)))
	list := max(0, rows-len(content))
	for i := sv.top; i < len(sv.rows) && i < sv.top+list; i++ {
		r := sv.rows[i]
		switch {
		case r.header:
			content = append(content, st.accentBold.s(fit(" "+r.text, iw)))
		case i == sv.cursor:
			content = append(content, st.sel.s(fit(" "+r.text, iw)))
		default:
			content = append(content, searchLine(st, r, iw))
		}
	}
	return box(st, "Search", "↑↓ choose · enter: the session · esc closes", true, w, h, content)
}

// searchLine draws a hit, what matched in the accent colour (when the
// line fits: a cut line is drawn plain).
func searchLine(st *styles, r searchRow, w int) string {
	t := " " + r.text
	if len(r.match) == 0 || width(t) > w {
		return st.text.s(fit(t, w))
	}
	var b strings.Builder
	at := 0
	for _, m := range r.match {
		s, e := m[0]+1, m[1]+1
		if s < at || e > len(t) {
			continue
		}
		b.WriteString(st.text.s(t[at:s]))
		b.WriteString(st.accentBold.s(t[s:e]))
		at = e
	}
	b.WriteString(st.text.s(t[at:]))
	return b.String() + spaces(w-width(t))
}

// sessions counts the sessions of the rows.
func (sv *searchView) sessions() int {
	n := 0
	for _, r := range sv.rows {
		if r.header {
			n++
		}
	}
	return n
}

// searchJump is a hit chosen in the search view: once its session's
// events pane holds the hit's line (the journal may still be loading),
// the pane is scrolled back to show it, the line at the pane's bottom.
// It gives up after searchJumpTries messages.
type searchJump struct {
	id, line string
	tries    int
}

const searchJumpTries = 500

// try scrolls v's events to the newest line holding the hit's text, and
// says whether it is done (found, or given up).
func (j *searchJump) try(v *sessView) bool {
	j.tries++
	if v == nil || j.line == "" {
		return j.tries >= searchJumpTries
	}
	t := &v.transcript
	for i := t.ring.len() - 1; i >= 0; i-- {
		if strings.Contains(ansi.Strip(t.ring.at(i).text), j.line) {
			t.showHit(i)
			return true
		}
	}
	return j.tries >= searchJumpTries
}
