package cli

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"looprig/internal/termrender"
	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/search"
)

// Exit codes of search, as grep's: 0 a line matched, 1 none did, 2 an
// error (a usage error included).
const (
	exitSearchNone  = 1
	exitSearchError = 2
)

// searchFlags are search's own flags.
type searchFlags struct {
	session, since, kind, engine, state string
	context                             int
	reindex, update                     bool
}

var cmdSearch = &command{
	name: "search", brief: "find lines of every session: commands, output, gates, agents", help: helpSearch,
	json: true, needs: needsStore, interrupts: true,
	flags: func(fs *flag.FlagSet, o *opts) {
		f := &o.search
		fs.StringVar(&f.session, "session", "", "search this session only (an id or a unique prefix)")
		fs.StringVar(&f.since, "since", "", "lines from this long ago on (2d, 3h, 30m) or since a date (2006-01-02)")
		fs.StringVar(&f.kind, "kind", "", "command, output, gate or agent (comma-separated)")
		fs.StringVar(&f.engine, "engine", "", "sessions of this engine only (shell, claude, ...)")
		fs.StringVar(&f.state, "state", "", "sessions in this state only (live, held, idle, crashed, broken)")
		fs.IntVar(&f.context, "C", 0, "lines of the same turn to show before and after each hit")
		fs.BoolVar(&f.reindex, "reindex", false, "rebuild the index from the journals first")
		fs.BoolVar(&f.update, "update", false, "bring the index up to date (with --session, that session's only) and search nothing")
	},
	run: runSearch,
}

func runSearch(c *call) int {
	fail := func(err error) int {
		c.fail(err)
		return exitSearchError
	}
	f := c.search
	text := strings.Join(c.args, " ")
	if c.dash {
		text = strings.TrimSpace(text + " " + strings.Join(c.input, " "))
	}
	if f.update {
		if text != "" || f.reindex || f.since != "" || f.kind != "" || f.engine != "" || f.state != "" || f.context != 0 || c.json {
			return fail(usageErr(c.cmd, "--update takes no query and no flag but --session"))
		}
		if f.session != "" {
			return c.updateSessionIndex()
		}
	}
	var q *search.Query
	if text != "" || !f.reindex && !f.update {
		var err error
		if q, err = search.ParseQuery(text); err != nil {
			return fail(usageErr(c.cmd, err.Error()))
		}
	}
	filter, err := c.searchFilter()
	if err != nil {
		return fail(err)
	}
	ix, err := search.Open(c.ctx, c.st, search.Options{Notes: c.stderr})
	if err != nil {
		return fail(err)
	}
	defer ix.Close()
	if f.reindex {
		if err := ix.Reset(c.ctx); err != nil {
			return fail(err)
		}
	}
	// The sessions by their leases alone: a catch-up needs only whether
	// each journal may have grown, and the catalog entries, most of a
	// listing's cost, are read for the sessions printed (hitPrinter). The
	// index keeps that listing while the store stands still
	// (Index.Sessions). --engine and --state ask what only the entries
	// say.
	var sessions []search.Session
	var infos []rig.SessionInfo
	if f.engine != "" || f.state != "" {
		infos, err = rig.ListSessions(c.ctx, c.st, c.holderLiveness())
		sessions = search.SessionsOf(infos)
	} else {
		sessions, err = ix.Sessions(c.ctx, func(ctx context.Context) ([]search.Session, error) {
			leases, err := rig.ListLeases(ctx, c.st, c.holderLiveness())
			return search.SessionsOfLeases(leases), err
		})
	}
	if err != nil {
		return fail(fmt.Errorf("list sessions of %s: %w", c.st.Dir(), err))
	}
	var p *hitPrinter
	if q != nil && len(sessions) > 0 {
		if filter.Sessions, err = c.searchSessions(infos); err != nil {
			return fail(err)
		}
		p = newHitPrinter(c, infos, f.context > 0)
		defer p.out.Flush()
	}
	start := time.Now()
	bar := newIndexProgress(c.stderr)
	var st search.Stats
	if p == nil {
		st, err = ix.Update(c.ctx, sessions, bar.update)
	} else {
		st, err = ix.Find(c.ctx, sessions, q, filter, bar.update, func() { p.hits = 0 }, p.print)
	}
	bar.finish()
	if err == nil && (f.reindex || st.Rebuilt) {
		size, _ := ix.Size()
		fmt.Fprintf(c.stderr, "search: indexed %s of %s in %s (index %s)\n",
			plural(int(st.Lines), "line"), plural(st.Sessions, "session"), roundDuration(time.Since(start)), byteSize(size))
	}
	switch {
	case err != nil && c.ctx.Err() != nil:
		return exitSearchError
	case err != nil:
		return fail(err)
	case q == nil:
		return exitOK
	case len(sessions) == 0:
		fmt.Fprintf(c.stderr, "looprig: no sessions in %s: nothing to search\n", textsafe.Line(c.st.Dir()))
		return exitSearchNone
	case p.hits == 0:
		return exitSearchNone
	}
	return exitOK
}

// indexProgress draws "search: indexing the journals: 12 of 40 sessions"
// on a terminal once an update has taken progressAfter; finish clears it.
type indexProgress struct {
	w     io.Writer
	start time.Time
	drawn bool
}

// newIndexProgress returns a progress line on w when w is a terminal,
// else nil (whose update and finish do nothing).
func newIndexProgress(w io.Writer) *indexProgress {
	if f, ok := w.(*os.File); !ok || !isTerminal(f) {
		return nil
	}
	return &indexProgress{w: w, start: time.Now()}
}

func (b *indexProgress) update(done, total int) {
	if b == nil || time.Since(b.start) < progressAfter {
		return
	}
	fmt.Fprintf(b.w, "\r\x1b[Ksearch: indexing the journals: %d of %d sessions", done, total)
	b.drawn = true
}

func (b *indexProgress) finish() {
	if b != nil && b.drawn {
		fmt.Fprint(b.w, "\r\x1b[K")
	}
}

// searchFilter is the filter --since and --kind give.
func (c *call) searchFilter() (search.Filter, error) {
	f := search.Filter{Context: max(c.search.context, 0)}
	if s := c.search.since; s != "" {
		since, err := parseSince(s, time.Now())
		if err != nil {
			return f, usageErr(c.cmd, err.Error())
		}
		f.Since = since
	}
	if c.search.kind != "" {
		for k := range strings.SplitSeq(c.search.kind, ",") {
			kind, err := search.ParseKind(strings.TrimSpace(k))
			if err != nil {
				return f, usageErr(c.cmd, "--kind: "+err.Error())
			}
			f.Kinds = append(f.Kinds, kind)
		}
	}
	return f, nil
}

// searchSessions are the sessions --session, --engine and --state leave
// (infos: the listing, when --engine or --state is given); nil for all.
func (c *call) searchSessions(infos []rig.SessionInfo) (map[uuid.UUID]bool, error) {
	f := c.search
	if f.session == "" && f.engine == "" && f.state == "" {
		return nil, nil
	}
	states := []rig.SessionState{rig.StateLive, rig.StateHeld, rig.StateIdle, rig.StateCrashed, rig.StateBroken}
	if f.state != "" && !slices.Contains(states, rig.SessionState(f.state)) {
		return nil, usageErr(c.cmd, fmt.Sprintf("--state %q: want live, held, idle, crashed or broken", f.state))
	}
	var only string
	if f.session != "" {
		id, err := rig.FindSession(c.ctx, c.st, f.session)
		if err != nil {
			return nil, err
		}
		only = id.String()
	}
	out := map[uuid.UUID]bool{}
	if f.engine == "" && f.state == "" {
		id, err := uuid.Parse(only)
		if err != nil {
			return nil, err
		}
		out[id] = true
		return out, nil
	}
	for _, in := range infos {
		if only != "" && in.ID != only || f.engine != "" && in.Engine != f.engine || f.state != "" && string(in.State) != f.state {
			continue
		}
		if id, err := uuid.Parse(in.ID); err == nil {
			out[id] = true
		}
	}
	return out, nil
}

// parseSince reads --since: a duration back from now ("2d", "3h", "90m",
// "1w", or Go's "1h30m") or a date ("2006-01-02", local).
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	if len(s) > 1 {
		unit := map[byte]time.Duration{'d': 24 * time.Hour, 'w': 7 * 24 * time.Hour}[s[len(s)-1]]
		if n, err := strconv.Atoi(s[:len(s)-1]); err == nil && unit > 0 && n >= 0 {
			return now.Add(-time.Duration(n) * unit), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("--since %q: want a duration (2d, 3h, 30m, 1w) or a date (2006-01-02)", s)
	}
	return now.Add(-d), nil
}

// hitPrinter prints hits: one line each for people, highlighted on a
// terminal, or one JSON object each.
type hitPrinter struct {
	e      *env
	c      *call
	out    *bufio.Writer
	titles map[uuid.UUID]string // read as sessions are printed (title)
	color  bool
	groups bool // context lines are shown: "--" between hits
	hits   int
}

// newHitPrinter prints for c; the titles of infos (a listing, or none)
// are known, the others read from the catalog as they are printed.
func newHitPrinter(c *call, infos []rig.SessionInfo, groups bool) *hitPrinter {
	e := c.env
	p := &hitPrinter{e: e, c: c, out: bufio.NewWriter(e.stdout), titles: map[uuid.UUID]string{}, groups: groups}
	p.color = !e.json && outputProfile(e.stdout) != termrender.NoColor
	for _, in := range infos {
		if id, err := uuid.Parse(in.ID); err == nil {
			p.titles[id] = in.Title
		}
	}
	return p
}

// title is session id's title from its catalog entry, read once; "" when
// it has none or the entry cannot be read (the hit is printed all the
// same).
func (p *hitPrinter) title(id uuid.UUID) string {
	t, ok := p.titles[id]
	if !ok {
		if c, err := rig.ReadCatalog(p.c.ctx, p.c.st, id.String()); err == nil {
			t = c.Title
		}
		p.titles[id] = t
	}
	return t
}

func (p *hitPrinter) print(h search.Hit) error {
	p.hits++
	if p.e.json {
		o := newObj().set("session", h.Session.String()).set("short_id", rig.ShortID(h.Session.String())).
			set("title", p.title(h.Session)).set("turn", h.Turn).set("kind", h.Kind.String()).
			set("at", h.At.UTC().Format(time.RFC3339Nano)).set("text", h.Text).set("match", matchJSON(h.Match))
		if p.groups {
			o.set("before", lineTexts(h.Before)).set("after", lineTexts(h.After))
		}
		_, err := p.out.Write(append(jsonBytes(o), '\n'))
		return err
	}
	if p.groups && p.hits > 1 {
		p.out.WriteString("--\n")
	}
	for _, l := range h.Before {
		p.line(h.Session, l, "-", nil)
	}
	p.line(h.Session, h.Line, ":", h.Match)
	for _, l := range h.After {
		p.line(h.Session, l, "-", nil)
	}
	return nil
}

// line prints "SHORTID TITLE  #TURN  TIME  KIND: TEXT" (sep "-" for a
// context line), the matched ranges highlighted on a terminal.
func (p *hitPrinter) line(sess uuid.UUID, l search.Line, sep string, match [][2]int) {
	turn := "-"
	if l.Turn >= 0 {
		turn = "#" + strconv.Itoa(l.Turn)
	}
	title := p.title(sess)
	if title == "" {
		title = "-"
	}
	fmt.Fprintf(p.out, "%s %-16s %4s  %s  %-9s", rig.ShortID(sess.String()), clip(textsafe.Line(title), 16), turn,
		l.At.Local().Format("2006-01-02 15:04"), l.Kind.String()+sep)
	p.out.WriteString(highlight(l.Text, match, p.color))
	p.out.WriteByte('\n')
}

// highlight is text made safe to print, the ranges of match in bold red
// when color.
func highlight(text string, match [][2]int, color bool) string {
	if !color || len(match) == 0 {
		return textsafe.Line(text)
	}
	var b strings.Builder
	at := 0
	for _, m := range match {
		if m[0] < at || m[1] > len(text) || m[0] >= m[1] {
			continue
		}
		b.WriteString(textsafe.Line(text[at:m[0]]))
		b.WriteString("\x1b[1;31m" + textsafe.Line(text[m[0]:m[1]]) + "\x1b[0m")
		at = m[1]
	}
	b.WriteString(textsafe.Line(text[at:]))
	return b.String()
}

func matchJSON(m [][2]int) [][]int {
	out := make([][]int, len(m))
	for i, r := range m {
		out[i] = []int{r[0], r[1]}
	}
	return out
}

func lineTexts(lines []search.Line) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.Text
	}
	return out
}
