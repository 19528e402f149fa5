package tui

import (
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/explain"
	"looprig/rig/storage"
)

// R restores every crashed session: a dialog lists them (Cancel is the
// default); Restore starts a host for each, restoreAllWorkers at a time,
// each asked to restore its session only if it is still crashed once it
// holds the lease (HostRequest.OnlyIfCrashed). The dialog stays open and
// shows each outcome as it completes; esc hides it (the restores go on,
// the status bar counts them, R shows them again).
//
// Nothing is attached: the hosts run in the background, the listing and
// its probes show them live, and opening one attaches to it (as for any
// live session). A failure is the session's failed restore, shown in the
// errors strip exactly as r's (onFailed). Another process that restored
// the session first (two TUIs pressing R at once: the lease lets one
// restore it) is said calmly: the lease held by another process, or the
// session no longer crashed.

// restoreAllWorkers is how many hosts R starts at once: each start waits
// for a process to restore its session and serve it, so a few side by
// side go much faster than one after the other, without crowding a small
// machine with restores.
const restoreAllWorkers = rig.RestoreAllWorkers

// restoreAllMsg: the host for one session of an R run started (rd), or
// did not (err).
type restoreAllMsg struct {
	run *restoreRun
	i   int // the row of run
	rd  host.Ready
	err error
}

// raOutcome is where one session of an R run stands.
type raOutcome int

const (
	raWaiting    raOutcome = iota // not started yet
	raRunning                     // its host is starting
	raRestored                    // live in its own host
	raNotCrashed                  // not crashed any more: nothing was done
	raTaken                       // another process holds its lease (it restored it first)
	raFailed                      // the restore failed (the strip explains it)
)

// calm says whether the outcome is another process's doing: nothing to
// fix here.
func (o raOutcome) calm() bool { return o == raNotCrashed || o == raTaken }

// raRow is one crashed session of an R run, as listed when R was pressed.
type raRow struct {
	id, short string
	title     string // sanitized
	lastTurn  string
	updated   time.Time

	outcome raOutcome
	note    string    // sanitized detail of the outcome: the host's pid, who holds it, the failure's kind
	started time.Time // when its restore started (raRunning: the elapsed time shown)
}

type raPhase int

const (
	raAsking raPhase = iota
	raRunningPhase
	raDone
)

// restoreRun is an R: the dialog (it is one) and the run it starts. The
// commands carry it back in their messages but never read or change it:
// only Update does.
type restoreRun struct {
	rows  []*raRow
	phase raPhase
	sel   int // asking: 0 Cancel, 1 Restore
	top   int // the first row shown, once scrolled
	// scrolled: the user scrolled; until then, a running table follows
	// the restores
	scrolled bool
	next     int // the next row to start
	running  int // hosts starting
	done     int // rows with an outcome
}

// openRestoreAll opens the dialog restoring every crashed session (R); a
// run in progress (its dialog hidden) is shown again.
func (m *model) openRestoreAll() tea.Cmd {
	if r := m.status.run; r != nil && r.phase == raRunningPhase {
		m.dialog = r
		return nil
	}
	m.status.offer = false
	r := newRestoreRun(m.list.rows)
	if r == nil {
		return m.status.flash("R: no crashed sessions", clsMuted)
	}
	m.dialog = r
	return nil
}

// newRestoreRun is the R dialog asking to restore the crashed sessions of
// rows that are not busy with something else; nil when there is none.
func newRestoreRun(rows []*sessView) *restoreRun {
	var ra []*raRow
	for _, v := range rows {
		if v.state() != rig.StateCrashed || v.busy != notBusy {
			continue
		}
		ra = append(ra, &raRow{id: v.id, short: v.short, title: v.listing.title, lastTurn: lastTurnText(v.listing.info), updated: v.listing.info.Updated})
	}
	if len(ra) == 0 {
		return nil
	}
	return &restoreRun{rows: ra}
}

// lastTurnText says what the session's last turn was: running when it
// crashed (the restore closes it as interrupted), or how it ended.
func lastTurnText(info rig.SessionInfo) string {
	switch {
	case info.OpenTurn != "":
		return "#" + strconv.Itoa(info.Turn) + " running"
	case info.LastEnd != nil:
		e := info.LastEnd
		s := "#" + strconv.Itoa(e.Index) + " "
		switch {
		case e.Outcome == rig.TurnOutcomeDone:
			return s + "exit " + strconv.Itoa(e.ExitCode)
		case e.Outcome != "":
			return s + clean(string(e.Outcome))
		}
		return s + "ended"
	case info.Turns > 0:
		return "#" + strconv.Itoa(info.Turns-1)
	}
	return "none"
}

func (r *restoreRun) key(c common, msg tea.KeyMsg, area dialogArea) dialogResult {
	switch msg.String() {
	case "up", "k":
		r.scroll(c, area, -1)
		return dialogResult{}
	case "down", "j":
		r.scroll(c, area, 1)
		return dialogResult{}
	case "pgup":
		r.scroll(c, area, -r.pageRows(c, area))
		return dialogResult{}
	case "pgdown":
		r.scroll(c, area, r.pageRows(c, area))
		return dialogResult{}
	}
	switch r.phase {
	case raAsking:
		switch cancelOrConfirm(&r.sel, msg.String()) {
		case choseCancel:
			return dialogResult{done: true}
		case choseConfirm:
			return dialogResult{act: restoreAllAction{run: r}} // the dialog stays, showing the run
		}
	case raRunningPhase:
		if msg.String() == "esc" {
			return dialogResult{done: true} // hidden: the restores go on (R shows them)
		}
	case raDone:
		switch msg.String() {
		case "esc", "enter":
			return dialogResult{done: true}
		}
	}
	return dialogResult{}
}

// scroll moves the rows shown by d.
func (r *restoreRun) scroll(c common, area dialogArea, d int) {
	page := r.pageRows(c, area)
	r.top = max(0, min(r.firstShown(page)+d, len(r.rows)-page))
	r.scrolled = true
}

// firstShown is the first row shown, page rows a page: where the user
// scrolled to, else, while the restores run, a little above the first
// one still starting or waiting.
func (r *restoreRun) firstShown(page int) int {
	top := r.top
	if r.phase == raRunningPhase && !r.scrolled {
		for i, row := range r.rows {
			if row.outcome == raRunning || row.outcome == raWaiting {
				top = i - page/3
				break
			}
		}
	}
	return max(0, min(top, len(r.rows)-page))
}

// restoreAllNext starts the next rows of r (startNext), then says how
// the run ended once it did.
func (m *model) restoreAllNext(r *restoreRun) tea.Cmd {
	cmds := r.startNext(m.h, m.sessions, m.now, m.quitting != "")
	if len(cmds) > 0 {
		cmds = append(cmds, m.spin.start())
	}
	if r.ended() {
		cmds = append(cmds, m.status.flash("R: "+r.summary(), r.summaryClass()))
	}
	return tea.Batch(cmds...)
}

// startNext starts the next rows while fewer than restoreAllWorkers hosts
// are starting (none once quitting), marking their sessions (of
// sessions) busy restoring since now. A row whose session is not crashed
// any more as listed now, or that is busy with something else, is not
// started.
func (r *restoreRun) startNext(h *shared, sessions map[string]*sessView, now func() time.Time, quitting bool) []tea.Cmd {
	var cmds []tea.Cmd
	for r.running < restoreAllWorkers && r.next < len(r.rows) && !quitting {
		row := r.rows[r.next]
		i := r.next
		r.next++
		v := sessions[row.id]
		switch {
		case v == nil:
			r.finish(row, raNotCrashed, "gone from the store")
			continue
		case v.busy != notBusy:
			r.finish(row, raNotCrashed, "busy: "+v.busy.String())
			continue
		case v.state() == rig.StateLive || v.state() == rig.StateHeld:
			r.finish(row, raTaken, takenNote)
			continue
		case v.state() != rig.StateCrashed:
			r.finish(row, raNotCrashed, "no longer crashed ("+string(v.state())+")")
			continue
		}
		v.busy, v.busySince, v.failed = busyRestoring, now(), nil
		row.outcome, row.started = raRunning, v.busySince
		r.running++
		cmds = append(cmds, h.restoreAllCmd(r, i, row.id))
	}
	return cmds
}

// ended moves a running run whose every row has its outcome to its end;
// it says whether it did.
func (r *restoreRun) ended() bool {
	if r.running == 0 && r.next >= len(r.rows) && r.phase == raRunningPhase {
		r.phase = raDone
		return true
	}
	return false
}

// restoreAllCmd starts a host that restores session id if it is still
// crashed; it does not attach.
func (h *shared) restoreAllCmd(r *restoreRun, i int, id string) tea.Cmd {
	return func() tea.Msg {
		if h.ctx.Err() != nil {
			return nil // quitting: not started
		}
		rd, err := h.startHost(HostRequest{Session: id, OnlyIfCrashed: true}, restoreTimeout)
		if err == nil {
			h.log.Info("host started", "session", rd.Session, "pid", rd.PID, "epoch", rd.Epoch, "log", rd.Log, "restore_all", true)
		} else if o, detail := classifyRestoreAll(err); o.calm() {
			h.log.Info("restore all: skipped", "session", id, "outcome", o.String(), "holder", detail)
		}
		return restoreAllMsg{run: r, i: i, rd: rd, err: err}
	}
}

// classifyRestoreAll says what a failed start of an R run means: the
// session not crashed any more (the host's *rig.NotCrashedError), its
// lease held by another process (restoring or running it; detail is the
// holder, sanitized, when known), or a failure (detail is its kind).
func classifyRestoreAll(err error) (o raOutcome, detail string) {
	if err == nil {
		return raRestored, ""
	}
	switch skip, h := explain.RestoreSkipped(err); skip {
	case explain.SkipNotCrashed:
		return raNotCrashed, ""
	case explain.SkipHeld:
		who := ""
		if h.PID != 0 || h.Host != "" {
			who = clean(holderText(h))
		}
		return raTaken, who
	}
	return raFailed, diagnose(err).kind
}

// The notes of the calm outcomes.
const (
	takenNote      = "restored by another process"
	notCrashedNote = "no longer crashed"
)

func (o raOutcome) String() string {
	switch o {
	case raWaiting:
		return "waiting"
	case raRunning:
		return "running"
	case raRestored:
		return "restored"
	case raNotCrashed:
		return "not_crashed"
	case raTaken:
		return "taken"
	case raFailed:
		return "failed"
	}
	return "raOutcome(" + strconv.Itoa(int(o)) + ")"
}

// finish records a row's outcome.
func (r *restoreRun) finish(row *raRow, o raOutcome, note string) {
	row.outcome, row.note = o, note
	r.done++
}

// onRestoreAll: a host of an R run started, or did not. A failure goes
// the way r's does (onFailed: the strip shows its kind, cause and remedy);
// the next session starts.
func (m *model) onRestoreAll(msg restoreAllMsg) tea.Cmd {
	r := msg.run
	row := r.answered(msg)
	if row == nil {
		return nil
	}
	o, detail := classifyRestoreAll(msg.err)
	v := m.sessions[row.id]
	var cmds []tea.Cmd
	if o == raFailed {
		cmds = append(cmds, m.onFailed(failedMsg{id: row.id, op: opRestore, err: msg.err}))
		v = m.sessions[row.id]
	} else if v != nil && v.busy == busyRestoring {
		v.busy = notBusy
	}
	if o == raRestored && v != nil {
		v.servedHere(msg.rd, m.h.hostname, m.now())
	}
	cmds = append(cmds, m.status.flash(r.record(row, o, detail, msg.rd)))
	if o != raFailed {
		cmds = append(cmds, m.refreshList())
		if v != nil && v == m.list.selected() {
			cmds = append(cmds, m.ensureLoaded(v))
		}
	}
	cmds = append(cmds, m.restoreAllNext(r))
	return tea.Batch(cmds...)
}

// answered returns the row msg answers, its host no longer starting; nil
// when msg answers no row of r still starting.
func (r *restoreRun) answered(msg restoreAllMsg) *raRow {
	if r == nil || msg.i < 0 || msg.i >= len(r.rows) || r.rows[msg.i].outcome != raRunning {
		return nil
	}
	r.running--
	return r.rows[msg.i]
}

// record records the outcome o of row (detail: classifyRestoreAll's; rd:
// the host that serves it when restored) and returns what to flash.
func (r *restoreRun) record(row *raRow, o raOutcome, detail string, rd host.Ready) (string, lineClass) {
	note := detail
	switch o {
	case raTaken:
		note = takenNote
	case raNotCrashed:
		note = notCrashedNote
	case raRestored:
		note = "live · pid " + strconv.Itoa(rd.PID)
	}
	r.finish(row, o, note)
	progress := " · " + strconv.Itoa(r.done) + "/" + strconv.Itoa(len(r.rows))
	switch o {
	case raRestored:
		return "restored " + row.short + " at epoch " + strconv.FormatUint(rd.Epoch, 10) +
			" (host pid " + strconv.Itoa(rd.PID) + ")" + progress, clsOK
	case raFailed:
		return "restore of " + row.short + " failed: " + note + progress, clsError
	}
	if o == raTaken && detail != "" {
		note += " (" + detail + ")" // the flash names the holder; the row has no room
	}
	return row.short + ": " + note + progress, clsMuted
}

// servedHere: a host on this machine restored v and serves it. Until the
// listing says so, v is listed held by that host, as the listing will,
// and its probe has answered: it is live (opening it or r attaches).
func (v *sessView) servedHere(rd host.Ready, hostname string, now time.Time) {
	v.failed = nil
	if rd.PID <= 0 {
		return
	}
	v.listing.info.State, v.listing.info.Holder = rig.StateHeld, &storage.Holder{PID: rd.PID, Host: hostname}
	v.listing.info.Epoch = max(v.listing.info.Epoch, rd.Epoch)
	v.listing.holder = clean(holderText(*v.listing.info.Holder))
	v.listing.probe = hostProbe{key: v.listing.holding(), pid: rd.PID, at: now}
}

// counts are the outcomes so far: restored, skipped (calm) and failed.
func (r *restoreRun) counts() (restored, skipped, failed int) {
	for _, row := range r.rows {
		switch {
		case row.outcome == raRestored:
			restored++
		case row.outcome.calm():
			skipped++
		case row.outcome == raFailed:
			failed++
		}
	}
	return
}

func (r *restoreRun) summary() string {
	restored, skipped, failed := r.counts()
	s := "restored " + strconv.Itoa(restored) + " of " + plural(len(r.rows), "crashed session")
	var more []string
	if skipped > 0 {
		more = append(more, strconv.Itoa(skipped)+" restored elsewhere")
	}
	if failed > 0 {
		more = append(more, strconv.Itoa(failed)+" failed")
	}
	if len(more) > 0 {
		s += " (" + strings.Join(more, ", ") + ")"
	}
	return s
}

func (r *restoreRun) summaryClass() lineClass {
	if _, _, failed := r.counts(); failed > 0 {
		return clsError
	}
	return clsOK
}

// progress is the status bar's line while the dialog is hidden.
func (r *restoreRun) progress() string {
	return "restoring " + strconv.Itoa(r.done) + "/" + strconv.Itoa(len(r.rows)) + "…"
}

// The drawing.

// head and foot are the lines above and below the table.
func (r *restoreRun) head(c common, w int) []string {
	st := c.st
	switch r.phase {
	case raAsking:
		n := len(r.rows)
		what := plural(n, "session") + " crashed."
		if n == 1 {
			what = "1 session crashed."
		}
		text := what + " Each is restored from its journal into its own background host, " +
			strconv.Itoa(restoreAllWorkers) + " at a time; a turn that was running is closed as interrupted."
		var out []string
		for _, l := range wrapText(text, w) {
			out = append(out, st.text.s(l))
		}
		return append(out, "")
	case raRunningPhase:
		restored, skipped, failed := r.counts()
		line := c.spin + " " + r.progress()
		return []string{st.accent.s(trunc(line, w)), st.muted.s(trunc(countsText(restored, skipped, failed), w)), ""}
	}
	restored, skipped, failed := r.counts()
	p := st.ev[clsOK]
	if failed > 0 {
		p = st.errorP
	}
	return []string{p.s(trunc("done: "+countsText(restored, skipped, failed), w)), ""}
}

func countsText(restored, skipped, failed int) string {
	return strconv.Itoa(restored) + " restored · " + strconv.Itoa(skipped) + " restored elsewhere · " + strconv.Itoa(failed) + " failed"
}

func (r *restoreRun) foot(c common, w int) []string {
	st := c.st
	switch r.phase {
	case raAsking:
		return []string{"", buttons(st, []string{"Cancel", "Restore " + strconv.Itoa(len(r.rows))}, r.sel, false),
			st.muted.s(trunc("←/→ choose · enter press · esc cancel", w))}
	case raRunningPhase:
		return []string{"", st.muted.s(trunc("esc hides: the restores go on, R shows them again", w))}
	}
	out := []string{""}
	if _, _, failed := r.counts(); failed > 0 {
		for _, l := range wrapText("select a failed one in the list: the errors strip says why, r retries it", w) {
			out = append(out, st.muted.s(l))
		}
		out = append(out, "")
	}
	return append(out, buttons(st, []string{"Close"}, 0, false), st.muted.s(trunc("enter/esc close", w)))
}

// pageRows is how many table rows fit in the area.
func (r *restoreRun) pageRows(c common, area dialogArea) int {
	w := area.w
	avail := area.bodyH - 4 - len(r.head(c, w)) - len(r.foot(c, w)) - 1 // box and padding, the table's header
	if len(r.rows) > avail {
		avail-- // the "more" line
	}
	return max(1, avail)
}

func (r *restoreRun) view(c common, area dialogArea) (string, []string) {
	st, w := c.st, area.w
	out := r.head(c, w)
	page := r.pageRows(c, area)
	top := r.firstShown(page)
	end := min(len(r.rows), top+page)
	shown := r.rows[top:end]
	if r.phase == raAsking {
		out = append(out, r.askTable(c, shown, w)...)
	} else {
		out = append(out, r.outcomeTable(c, shown, w)...)
	}
	if len(r.rows) > page {
		more := strconv.Itoa(top+1) + "–" + strconv.Itoa(end) + " of " + strconv.Itoa(len(r.rows)) + " · ↑/↓ scroll"
		out = append(out, st.muted.s(trunc(more, w)))
	}
	out = append(out, r.foot(c, w)...)
	return "Restore crashed sessions", out
}

// askTable lists the sessions: id, title, last turn and when they were
// last active (the last write of their catalog entry, before the crash).
func (r *restoreRun) askTable(c common, rows []*raRow, w int) []string {
	now := c.now
	cells := make([][]string, 0, len(rows)+1)
	cells = append(cells, []string{"ID", "TITLE", "LAST TURN", "LAST ACTIVE"})
	turnW, actW := width("LAST TURN"), width("LAST ACTIVE")
	for _, row := range rows {
		turnW = max(turnW, min(width(row.lastTurn), 16))
		actW = max(actW, width(agoText(now, row.updated)))
	}
	titleW := max(5, w-8-turnW-actW-6)
	for _, row := range rows {
		cells = append(cells, []string{row.short, trunc(untitled(row.title), titleW), row.lastTurn, agoText(now, row.updated)})
	}
	return renderTable(c.st, cells, w)
}

// outcomeTable lists the sessions with their outcomes, each painted by
// what it is: failures red, another process's doing muted.
func (r *restoreRun) outcomeTable(c common, rows []*raRow, w int) []string {
	st := c.st
	outW := width("OUTCOME")
	titleW := width("TITLE")
	for _, row := range rows {
		outW = max(outW, width(r.outcomeText(c, row)))
		titleW = max(titleW, width(untitled(row.title)))
	}
	titleW = max(5, min(titleW, 24, w-8-4-min(outW, 30)))
	outW = max(0, w-8-titleW-4)
	lines := []string{st.muted.s(fit("ID", 8) + "  " + fit("TITLE", titleW) + "  " + fit("OUTCOME", outW))}
	for _, row := range rows {
		lines = append(lines, st.text.s(fit(row.short, 8)+"  "+fit(untitled(row.title), titleW)+"  ")+
			r.outcomePaint(st, row).s(fit(r.outcomeText(c, row), outW)))
	}
	return lines
}

func (r *restoreRun) outcomeText(c common, row *raRow) string {
	switch row.outcome {
	case raWaiting:
		return "· waiting"
	case raRunning:
		return c.spin + " restoring… " + dur(c.now.Sub(row.started))
	case raRestored:
		return "✓ " + row.note
	case raFailed:
		return "✗ failed: " + row.note
	}
	return "– " + row.note
}

func (r *restoreRun) outcomePaint(st *styles, row *raRow) paint {
	switch row.outcome {
	case raRunning:
		return st.accent
	case raRestored:
		return st.ev[clsOK]
	case raFailed:
		return st.errorP
	}
	return st.muted
}

func untitled(t string) string {
	if t == "" {
		return "(untitled)"
	}
	return t
}
