package tui

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/explain"
	"looprig/rig/fault"
)

// dialog is a modal box over the panes. key says what a key did
// (dialogResult); view returns its title and content lines (painted, at
// most area.w cells wide).
type dialog interface {
	key(c common, msg tea.KeyMsg, area dialogArea) dialogResult
	view(c common, area dialogArea) (title string, lines []string)
}

// dialogArea is the room of a dialog: the width of its content (a box of
// at most 72 columns, less its frame and padding) and the height of the
// panes it is drawn over.
type dialogArea struct{ w, bodyH int }

// dialogWidth is the width of a dialog's content in a window w wide.
func dialogWidth(w int) int { return min(w-4, 72) - 4 }

// dialogResult is what a key did in a dialog: whether the dialog is done
// (closed), what it asks the root to do (act, an action; nil for
// nothing), and its text input's command.
type dialogResult struct {
	done bool
	act  action
	cmd  tea.Cmd
}

// action is what a dialog asks the root to do once the user confirmed it
// (model.do): a shutdownAction, restoreAction, breakAction, deleteAction,
// createAction, restoreAllAction or quitAction.
type action any

type (
	// shutdownAction shuts session v down (X).
	shutdownAction struct{ v *sessView }
	// restoreAction restores session v, accepting its configuration drift
	// (the drift dialog), or resolving a diverged workspace as the user
	// chose (the diverged dialog).
	restoreAction struct {
		v           *sessView
		acceptDrift bool
		workspace   rig.WorkspaceChoice
	}
	// revertAction puts session v's workspace back as it was before turn
	// index (u in the changes view).
	revertAction struct {
		v     *sessView
		index int
	}
	// forkAction makes a new session that begins as session v was after
	// turn index (F in the changes view).
	forkAction struct {
		v     *sessView
		index int
	}
	// breakAction breaks session v's lease and restores it (B).
	breakAction struct{ v *sessView }
	// deleteAction deletes session v (D).
	deleteAction struct{ v *sessView }
	// createAction creates a session (n): in dir, or, with scratch, in a
	// private directory in the store; neither when the profile pins its
	// placement. worktree: in a git worktree of its own, of dir's
	// repository.
	createAction struct {
		profile, title, seed, dir string
		scratch, worktree         bool
	}
	// restoreAllAction starts R's run.
	restoreAllAction struct{ run *restoreRun }
	// quitAction quits although turns run (q).
	quitAction struct{}
)

// overlay draws dialog d centred over body lines, w wide.
func overlay(c common, d dialog, area dialogArea, body []string, w int) {
	title, content := d.view(c, area)
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
	framed := box(c.st, title, "", true, bw, len(inner)+2, inner)
	if len(framed) > len(body) {
		framed = framed[:len(body)]
	}
	y := max(0, (len(body)-len(framed))/2)
	x := max(0, (w-bw)/2)
	for i, b := range framed {
		base := body[y+i]
		left := ansi.Truncate(base, x, "")
		left += spaces(x - ansi.StringWidth(left))
		right := ansi.TruncateLeft(base, x+bw, "")
		if c.st.plain {
			body[y+i] = left + b + right
		} else {
			body[y+i] = left + reset + b + reset + right
		}
	}
}

// reset ends the SGR a body line has open where the dialog cuts into it.
const reset = "\x1b[0m"

// confirmDialog asks before something destructive. Cancel is the default
// button; enter presses the selected button; esc cancels.
type confirmDialog struct {
	title     string
	body      []string // plain (sanitized) text
	table     [][]string
	confirm   string
	danger    bool
	sel       int    // 0 = Cancel, 1 = confirm
	onConfirm action // what confirming does
}

func (d *confirmDialog) key(_ common, msg tea.KeyMsg, _ dialogArea) dialogResult {
	switch cancelOrConfirm(&d.sel, msg.String()) {
	case choseCancel:
		return dialogResult{done: true}
	case choseConfirm:
		return dialogResult{done: true, act: d.onConfirm}
	}
	return dialogResult{}
}

// choice is what a key did to a Cancel / confirm pair of buttons.
type choice int

const (
	choseNothing choice = iota // moved the selection, or was not theirs
	choseCancel                // esc, or enter on Cancel
	choseConfirm               // enter on the confirm button
)

// cancelOrConfirm handles key k for the buttons Cancel (sel 0) and a
// confirm button (sel 1): ←/h/⇧tab and →/l/tab move the selection, enter
// presses the selected one, esc cancels.
func cancelOrConfirm(sel *int, k string) choice {
	switch k {
	case "esc":
		return choseCancel
	case "left", "h", "shift+tab":
		*sel = 0
	case "right", "l", "tab":
		*sel = 1
	case "enter":
		if *sel == 1 {
			return choseConfirm
		}
		return choseCancel
	}
	return choseNothing
}

func (d *confirmDialog) view(c common, area dialogArea) (string, []string) {
	st, w := c.st, area.w
	var out []string
	for _, l := range d.body {
		out = append(out, st.text.s(trunc(l, w)))
	}
	if len(d.table) > 0 {
		out = append(out, "")
		out = append(out, renderTable(st, d.table, w)...)
	}
	out = append(out, "", buttons(st, []string{"Cancel", d.confirm}, d.sel, d.danger))
	out = append(out, st.muted.s(trunc("←/→ choose · enter press · esc cancel", w)))
	return d.title, out
}

func buttons(st *styles, labels []string, sel int, danger bool) string {
	var b strings.Builder
	for i, l := range labels {
		if i > 0 {
			b.WriteString("  ")
		}
		text := "[ " + l + " ]"
		if i == sel {
			text = "[▸" + l + "◂]" // the focus shows without colour too (NO_COLOR)
		}
		switch {
		case i == sel && i > 0 && danger:
			b.WriteString(st.errorBadge.s(text))
		case i == sel:
			b.WriteString(st.accBadge.s(text))
		default:
			b.WriteString(st.muted.s(text))
		}
	}
	return b.String()
}

// renderTable draws rows of plain cells with the first row as header.
func renderTable(st *styles, rows [][]string, w int) []string {
	if len(rows) == 0 {
		return nil
	}
	cols := len(rows[0])
	widths := make([]int, cols)
	for _, r := range rows {
		for i, c := range r {
			if i < cols {
				widths[i] = max(widths[i], min(width(c), 28))
			}
		}
	}
	var out []string
	for ri, r := range rows {
		var b strings.Builder
		used := 0
		for i := 0; i < cols && i < len(r); i++ {
			cw := widths[i]
			if used+cw > w {
				cw = max(0, w-used)
			}
			cell := fit(r[i], cw)
			switch {
			case ri == 0:
				b.WriteString(st.muted.s(cell))
			case i == cols-1 && strings.TrimSpace(r[i]) == "warn":
				b.WriteString(st.warn.s(cell))
			default:
				b.WriteString(st.text.s(cell))
			}
			used += cw
			if i < cols-1 && used+2 <= w {
				b.WriteString("  ")
				used += 2
			}
		}
		out = append(out, b.String())
	}
	return out
}

func driftRows(changes []event.Change) [][]string {
	rows := [][]string{{"FIELD", "RECORDED", "NOW", "LEVEL"}}
	for _, c := range changes {
		rows = append(rows, []string{clean(c.Field), clean(oneLineValue(c.Persisted)), clean(oneLineValue(c.Live)), clean(c.Level)})
	}
	return rows
}

// oneLineValue shows a multi-line manifest value (a gate policy) on one line.
func oneLineValue(s string) string {
	if s == "" {
		return "(none)"
	}
	return strings.ReplaceAll(s, "\n", ", ")
}

// newDriftDialog asks before restoring v with its configuration drift
// (changes, as the host's restore reported them) accepted.
func newDriftDialog(v *sessView, changes []event.Change) dialog {
	body := []string{
		"Session " + v.short + " was recorded with another configuration.",
		"Accepting restores it under the current profile and records",
		"ConfigurationAdopted (source \"tui confirm\") in its journal.",
	}
	if made := madeWhere(changes); made != "" {
		body = append(body, "Its workspace moves; the files where it worked stay there.",
			"Where it was made: looprig restore "+v.short+made)
	}
	return &confirmDialog{
		title:     "Accept configuration drift",
		body:      body,
		table:     driftRows(changes),
		confirm:   "Accept and restore",
		danger:    true,
		onConfirm: restoreAction{v: v, acceptDrift: true},
	}
}

// divergedDialog asks what to do with a session's workspace directory
// that has changes no checkpoint has (its last restore failed
// workspace_diverged): keep it, or take the checkpoint (the directory is
// moved aside, never deleted).
type divergedDialog struct {
	v    *sessView
	body []string
	sel  int // 0 Cancel, 1 Keep this directory, 2 Take the checkpoint
}

var divergedChoices = []string{"Cancel", "Keep this directory", "Take the checkpoint"}

func newDivergedDialog(v *sessView, x fault.Explanation) dialog {
	f := explain.FactsOf(x)
	body := []string{"The workspace of session " + v.short + " has changes no checkpoint has:", "  " + clean(f.Dir)}
	if l := clean(f.Lineage); l != "" {
		body = append(body, "It was the "+l+";")
	}
	body = append(body, "the session moved on to the "+clean(f.Last)+".")
	if len(f.Paths) > 0 {
		cleaned := make([]string, len(f.Paths))
		for i, p := range f.Paths {
			cleaned[i] = clean(p)
		}
		body = append(body, "Differs: "+strings.Join(cleaned, ", "))
	}
	body = append(body, "",
		"Keep: this directory becomes the session's workspace (journaled).",
		"Take the checkpoint: this directory is moved aside, never deleted,",
		"and the last checkpoint is brought back.")
	return &divergedDialog{v: v, body: body}
}

func (d *divergedDialog) key(_ common, msg tea.KeyMsg, _ dialogArea) dialogResult {
	switch msg.String() {
	case "esc":
		return dialogResult{done: true}
	case "left", "h", "shift+tab":
		d.sel = (d.sel + len(divergedChoices) - 1) % len(divergedChoices)
	case "right", "l", "tab":
		d.sel = (d.sel + 1) % len(divergedChoices)
	case "enter":
		switch d.sel {
		case 1:
			return dialogResult{done: true, act: restoreAction{v: d.v, workspace: rig.WorkspaceKeep}}
		case 2:
			return dialogResult{done: true, act: restoreAction{v: d.v, workspace: rig.WorkspaceUseCheckpoint}}
		}
		return dialogResult{done: true}
	}
	return dialogResult{}
}

func (d *divergedDialog) view(c common, area dialogArea) (string, []string) {
	st, w := c.st, area.w
	var out []string
	for _, l := range d.body {
		out = append(out, st.text.s(trunc(l, w)))
	}
	out = append(out, "", buttons(st, divergedChoices, d.sel, false))
	out = append(out, st.muted.s(trunc("←/→ choose · enter press · esc cancel", w)))
	return "Workspace diverged", out
}

// newShutdownDialog asks before shutting v down.
func newShutdownDialog(v *sessView) dialog {
	body := []string{"Shut down session " + v.short + " (" + trunc(v.listing.title, 30) + ")?"}
	if t := v.transcript.fold.Turn(); t != nil {
		body = append(body, "Its running turn "+strconv.Itoa(t.Index)+" is interrupted (recorded as shutdown).")
	}
	body = append(body, "Its host (pid "+strconv.Itoa(v.live.pid)+") stops. It can be restored later with r.")
	return &confirmDialog{title: "Shut down", body: body, confirm: "Shut down", danger: true,
		onConfirm: shutdownAction{v: v}}
}

// newRevertDialog asks before putting v's workspace back as it was before
// turn index.
func newRevertDialog(v *sessView, index int) dialog {
	body := []string{"Put the workspace of " + v.short + " back as it was before turn " + strconv.Itoa(index) + "?",
		"Only what differs is written. The files as they are now are checkpointed",
		"first: u again right after undoes the revert."}
	if v.listing.info.Engine == "claude" || v.listing.info.Engine == "codex" {
		body = append(body, "The agent's conversation is not rewound: it still remembers the turns after.")
	}
	return &confirmDialog{title: "Revert", body: body, confirm: "Revert", danger: true,
		onConfirm: revertAction{v: v, index: index}}
}

// newForkDialog asks before forking v at turn index.
func newForkDialog(v *sessView, index int) dialog {
	body := []string{"A new session that begins as " + v.short + " was after turn " + strconv.Itoa(index) + ":",
		"its files as the checkpoint after that turn, in a new directory of the store,",
		"and, for Claude Code, its conversation up to that turn. " + v.short + " is left as it is."}
	return &confirmDialog{title: "Fork", body: body, confirm: "Fork", onConfirm: forkAction{v: v, index: index}}
}

// newQuitDialog asks before quitting while turns run (running of them):
// they go on in the background.
func newQuitDialog(running int) dialog {
	return &confirmDialog{title: "Quit",
		body: []string{plural(running, "turn") + " still running.",
			"Quitting detaches: live sessions keep running in the background",
			"and their turns go on. Open looprig again to attach; X shuts one down."},
		confirm:   "Quit",
		onConfirm: quitAction{}}
}

// typedDialog asks for the session's short id before something that cannot
// be taken back, then asks for it (act). Esc cancels; a wrong id says so
// and waits.
type typedDialog struct {
	v      *sessView
	title  string
	body   []bodyLine
	action string // the enter hint: "break lease", "delete"
	act    action
	ti     textinput.Model
	err    string
}

// bodyLine is a line of a dialog's text, sanitized; a path is muted and,
// when too long, cut on the left (its end is what tells paths apart).
type bodyLine struct {
	text string
	path bool
}

func textLines(texts ...string) []bodyLine {
	out := make([]bodyLine, len(texts))
	for i, t := range texts {
		out[i] = bodyLine{text: t}
	}
	return out
}

func newTypedDialog(v *sessView, title, hint string, body []bodyLine, act action) *typedDialog {
	d := &typedDialog{v: v, title: title, action: hint, body: body, act: act, ti: newInput("", 8)}
	d.ti.Focus()
	return d
}

// newBreakDialog confirms a forced lease break of v.
func newBreakDialog(v *sessView) *typedDialog {
	holder := v.listing.holder
	if holder == "" {
		holder = "another process"
	}
	who := "Session " + v.short + " is held by " + holder + " at epoch " + strconv.FormatUint(v.epoch(), 10) + "."
	if v.state() != rig.StateHeld && v.state() != rig.StateLive {
		who = "Session " + v.short + " is free, but a turn of its earlier holder still runs here."
	}
	return newTypedDialog(v, "Break lease", "break lease", textLines(
		who,
		"Breaking takes the lease by force: that holder loses it, is fenced",
		"off its journal and turns read-only; a turn it runs on this machine",
		"is stopped (SIGTERM, then SIGKILL); this TUI restores the session.",
	), breakAction{v: v})
}

// newDeleteDialog confirms the deletion of v, whose own workspace (if it
// has one) is under workspaces.
func newDeleteDialog(v *sessView, workspaces string) *typedDialog {
	what := "Session " + v.short
	if v.listing.title != "" {
		what += " \"" + v.listing.title + "\""
	}
	what += " (" + string(v.state()) + ", " + plural(v.listing.info.Turns, "turn") + ")"
	body := textLines(what,
		"is deleted for good: its journal, its catalog entry and its own",
		"workspace directory, with every file its turns wrote there:")
	if workspaces != "" {
		body = append(body, bodyLine{text: clean(workspaces) + "/" + v.id, path: true})
	}
	body = append(body, textLines("An exclusive or shared root is not touched. This cannot be undone.")...)
	return newTypedDialog(v, "Delete session", "delete", body, deleteAction{v: v})
}

func (d *typedDialog) key(_ common, msg tea.KeyMsg, _ dialogArea) dialogResult {
	switch msg.Type {
	case tea.KeyEsc:
		return dialogResult{done: true}
	case tea.KeyEnter:
		if strings.TrimSpace(d.ti.Value()) != d.v.short {
			d.err = "type " + d.v.short + " exactly to confirm"
			return dialogResult{}
		}
		return dialogResult{done: true, act: d.act}
	}
	var r dialogResult
	d.ti, r.cmd = d.ti.Update(msg)
	d.err = ""
	return r
}

func (d *typedDialog) view(c common, area dialogArea) (string, []string) {
	st, w := c.st, area.w
	var out []string
	for _, l := range d.body {
		if l.path {
			out = append(out, st.muted.s(truncLeft(l.text, w)))
		} else {
			out = append(out, st.text.s(trunc(l.text, w)))
		}
	}
	out = append(out,
		"",
		st.muted.s("type ")+st.key.s(d.v.short)+st.muted.s(" to confirm:"),
		renderInput(st, d.ti, w, "> "),
	)
	if d.err != "" {
		out = append(out, st.errorP.s(trunc(d.err, w)))
	}
	out = append(out, "", st.muted.s(trunc("enter "+d.action+" · esc cancel", w)))
	return d.title, out
}
