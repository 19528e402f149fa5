package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"looprig/rig"
)

// dialog is a modal box over the panes. key reports whether the dialog is
// done; view returns its content lines (painted, at most w cells wide).
type dialog interface {
	key(m *model, msg tea.KeyMsg) (done bool, cmd tea.Cmd)
	view(m *model, w int) (title string, lines []string)
}

// ---- confirm ----------------------------------------------------------------------

// confirmDialog asks before something destructive. Cancel is the default
// button; enter presses the selected button; esc cancels.
type confirmDialog struct {
	title     string
	body      []string // plain (sanitized) text
	table     [][]string
	confirm   string
	danger    bool
	sel       int // 0 = Cancel, 1 = confirm
	onConfirm func(m *model) tea.Cmd
}

func (d *confirmDialog) key(m *model, msg tea.KeyMsg) (bool, tea.Cmd) {
	switch msg.String() {
	case "esc":
		return true, nil
	case "left", "h", "shift+tab":
		d.sel = 0
	case "right", "l", "tab":
		d.sel = 1
	case "enter":
		if d.sel == 1 {
			return true, d.onConfirm(m)
		}
		return true, nil
	}
	return false, nil
}

func (d *confirmDialog) view(m *model, w int) (string, []string) {
	st := m.st
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

func driftRows(rj *rig.RestoreRejectedError) [][]string {
	rows := [][]string{{"FIELD", "RECORDED", "NOW", "LEVEL"}}
	for _, c := range rj.Assessment.Changes {
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

func newDriftDialog(v *sessView, rj *rig.RestoreRejectedError) dialog {
	return &confirmDialog{
		title: "Accept configuration drift",
		body: []string{
			"Session " + v.short + " was recorded with another configuration.",
			"Accepting restores it under the current profile and records",
			"ConfigurationAdopted (source \"tui confirm\") in its journal.",
		},
		table:   driftRows(rj),
		confirm: "Accept and restore",
		danger:  true,
		onConfirm: func(m *model) tea.Cmd {
			return m.startRestore(v, true)
		},
	}
}

// ---- typed confirmation (break lease, delete) ----------------------------------------

// typedDialog asks for the session's short id before something that cannot
// be taken back, then runs it. Esc cancels; a wrong id says so and waits.
type typedDialog struct {
	v      *sessView
	title  string
	body   []bodyLine
	action string // the enter hint: "break lease", "delete"
	run    func(m *model, v *sessView) tea.Cmd
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

func newTypedDialog(v *sessView, title, action string, body []bodyLine, run func(m *model, v *sessView) tea.Cmd) *typedDialog {
	d := &typedDialog{v: v, title: title, action: action, body: body, run: run, ti: newInput("", 8)}
	d.ti.Focus()
	return d
}

// newBreakDialog confirms a forced lease break of v.
func newBreakDialog(v *sessView) *typedDialog {
	holder := v.holder
	if holder == "" {
		holder = "another process"
	}
	return newTypedDialog(v, "Break lease", "break lease", textLines(
		"Session "+v.short+" is held by "+holder+" at epoch "+u64(v.epoch())+".",
		"Breaking takes the lease by force: that holder loses it, is fenced",
		"off its journal and turns read-only; this TUI restores the session.",
	), func(m *model, v *sessView) tea.Cmd {
		v.busy, v.busySince, v.restoreErr = "breaking the lease", m.now(), nil
		return tea.Batch(m.breakCmd(v.id, v.info.Profile), m.startSpin())
	})
}

// newDeleteDialog confirms the deletion of v, whose own workspace (if it
// has one) is under workspaces.
func newDeleteDialog(v *sessView, workspaces string) *typedDialog {
	what := "Session " + v.short
	if v.title != "" {
		what += " \"" + v.title + "\""
	}
	what += " (" + string(v.state()) + ", " + plural(v.info.Turns, "turn") + ")"
	body := textLines(what,
		"is deleted for good: its journal, its catalog entry and its own",
		"workspace directory, with every file its turns wrote there:")
	if workspaces != "" {
		body = append(body, bodyLine{text: clean(workspaces) + "/" + v.id, path: true})
	}
	body = append(body, textLines("An exclusive or shared root is not touched. This cannot be undone.")...)
	return newTypedDialog(v, "Delete session", "delete", body, func(m *model, v *sessView) tea.Cmd {
		v.busy, v.busySince = "deleting", m.now()
		return tea.Batch(m.deleteCmd(v.id), m.startSpin())
	})
}

func (d *typedDialog) key(m *model, msg tea.KeyMsg) (bool, tea.Cmd) {
	switch msg.Type {
	case tea.KeyEsc:
		return true, nil
	case tea.KeyEnter:
		if strings.TrimSpace(d.ti.Value()) != d.v.short {
			d.err = "type " + d.v.short + " exactly to confirm"
			return false, nil
		}
		return true, d.run(m, d.v)
	}
	var cmd tea.Cmd
	d.ti, cmd = d.ti.Update(msg)
	d.err = ""
	return false, cmd
}

func (d *typedDialog) view(m *model, w int) (string, []string) {
	st := m.st
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

// ---- new session ------------------------------------------------------------------

// createDialog is the new-session form: profile, title, seed directory.
// Enter anywhere accepts (defaults need no typing).
type createDialog struct {
	profiles []string
	prof     int
	title    textinput.Model
	seed     textinput.Model
	field    int // 0 profile, 1 title, 2 seed
}

func newCreateDialog(m *model) *createDialog {
	d := &createDialog{profiles: m.profileNames(), title: newInput("", 200), seed: newInput("", 1024), field: 1}
	d.title.Placeholder = "(untitled)"
	d.seed.Placeholder = "(none)"
	d.focusField()
	return d
}

func (d *createDialog) focusField() tea.Cmd {
	d.title.Blur()
	d.seed.Blur()
	switch d.field {
	case 1:
		return d.title.Focus()
	case 2:
		return d.seed.Focus()
	}
	return nil
}

func (d *createDialog) key(m *model, msg tea.KeyMsg) (bool, tea.Cmd) {
	switch msg.Type {
	case tea.KeyEsc:
		return true, nil
	case tea.KeyEnter:
		profile := ""
		if len(d.profiles) > 0 {
			profile = d.profiles[d.prof]
		}
		m.creating++
		return true, tea.Batch(m.createCmd(profile, strings.TrimSpace(d.title.Value()), strings.TrimSpace(d.seed.Value())),
			m.flash("creating a "+profile+" session…", clsMuted), m.startSpin())
	case tea.KeyTab, tea.KeyDown:
		d.field = (d.field + 1) % 3
		return false, d.focusField()
	case tea.KeyShiftTab, tea.KeyUp:
		d.field = (d.field + 2) % 3
		return false, d.focusField()
	}
	var cmd tea.Cmd
	switch d.field {
	case 0:
		switch msg.String() {
		case "left", "h":
			d.prof = (d.prof + len(d.profiles) - 1) % max(1, len(d.profiles))
		case "right", "l", " ":
			d.prof = (d.prof + 1) % max(1, len(d.profiles))
		}
	case 1:
		d.title, cmd = d.title.Update(msg)
	case 2:
		d.seed, cmd = d.seed.Update(msg)
	}
	return false, cmd
}

func (d *createDialog) view(m *model, w int) (string, []string) {
	st := m.st
	label := func(i int, s string) string {
		mark := "  "
		if d.field == i {
			return st.accent.s("▸ " + s)
		}
		return st.muted.s(mark + s)
	}
	var prof strings.Builder
	for i, p := range d.profiles {
		if i > 0 {
			prof.WriteString(" ")
		}
		if i == d.prof {
			prof.WriteString(st.accBadge.s(" " + clean(p) + " "))
		} else {
			prof.WriteString(st.muted.s(" " + clean(p) + " "))
		}
	}
	inner := max(10, w-10)
	lines := []string{
		label(0, "profile  ") + prof.String(),
		label(1, "title    ") + renderInput(st, d.title, inner, ""),
		label(2, "seed dir ") + renderInput(st, d.seed, inner, ""),
		"",
		st.muted.s(trunc("enter create · tab/↑/↓ field · ←/→ profile · esc cancel", w)),
	}
	return "New session", lines
}

// ---- input line -------------------------------------------------------------------

// inputBar is the line at the bottom where a turn's input is typed.
type inputBar struct {
	id string
	ti textinput.Model
}

func newInputBar(id string) *inputBar {
	return &inputBar{id: id, ti: newInput("", 8192)}
}

func (b *inputBar) key(m *model, msg tea.KeyMsg) tea.Cmd {
	switch msg.Type {
	case tea.KeyEsc:
		m.input = nil
		return nil
	case tea.KeyEnter:
		m.input = nil
		v := m.sessions[b.id]
		text := b.ti.Value()
		if strings.TrimSpace(text) == "" {
			return nil
		}
		if v == nil {
			return nil
		}
		if why := v.notMutable(); why != "" {
			return m.flash("i: "+why, clsError)
		}
		return m.submitCmd(v.id, v.live, text)
	}
	var cmd tea.Cmd
	b.ti, cmd = b.ti.Update(msg)
	return cmd
}

// renderInput draws a text input's value with a visible cursor, scrolled so
// the cursor shows, in at most w cells. The value is sanitized.
func renderInput(st *styles, ti textinput.Model, w int, prompt string) string {
	w -= width(prompt)
	if w < 2 {
		return trunc(prompt, w+width(prompt))
	}
	val := []rune(ti.Value())
	pos := min(ti.Position(), len(val))
	if len(val) == 0 && ti.Placeholder != "" && !ti.Focused() {
		return prompt + st.muted.s(fit(ti.Placeholder, w))
	}
	// Window of runes around the cursor (one cell per rune is close enough
	// for input typed by hand; fit below keeps the width exact).
	start := 0
	if pos >= w-1 {
		start = pos - (w - 2)
	}
	before := clean(string(val[start:pos]))
	cur := " "
	if pos < len(val) {
		cur = clean(string(val[pos]))
	}
	after := ""
	if pos+1 < len(val) {
		after = clean(string(val[pos+1:]))
	}
	var b strings.Builder
	b.WriteString(prompt)
	used := width(before)
	b.WriteString(st.text.s(before))
	if ti.Focused() {
		cw := width(cur)
		if st.plain {
			// no styling available: show the cursor as a block
			b.WriteString("█")
			cw = 1
			if cur != " " {
				after = cur + after
			}
		} else {
			b.WriteString(st.accBadge.s(cur))
		}
		used += cw
	} else {
		after = cur + after
	}
	rest := fit(after, max(0, w-used))
	b.WriteString(st.text.s(rest))
	return b.String()
}

// ---- help -----------------------------------------------------------------------------

// helpView is the help screen: every key with what it does, disabled keys
// with why; typing filters it.
type helpView struct {
	ti textinput.Model
}

func newHelp() *helpView {
	h := &helpView{ti: newInput("filter: ", 64)}
	h.ti.Focus()
	return h
}

func (h *helpView) key(m *model, msg tea.KeyMsg) tea.Cmd {
	switch {
	case msg.Type == tea.KeyEsc:
		if h.ti.Value() != "" {
			h.ti.SetValue("")
			return nil
		}
		m.help = nil
		return nil
	case msg.String() == "?" && h.ti.Value() == "":
		m.help = nil
		return nil
	}
	var cmd tea.Cmd
	h.ti, cmd = h.ti.Update(msg)
	return cmd
}

// entries returns the help lines that match the filter.
func (h *helpView) entries(m *model) []helpEntry {
	f := lower(strings.TrimSpace(h.ti.Value()))
	var why string
	if v := m.selected(); v != nil {
		why = v.notMutable()
	} else {
		why = "no session selected"
	}
	mut := map[string]bool{}
	for _, b := range m.keys.mutating() {
		mut[b.Help().Key] = true
	}
	var out []helpEntry
	for _, g := range m.keys.helpGroups() {
		var group []helpEntry
		for _, b := range g.keys {
			e := helpEntry{keys: b.Help().Key, desc: b.Help().Desc}
			if mut[e.keys] && why != "" {
				e.disabled = why
			}
			if f != "" && !contains(lower(e.keys), f) && !contains(lower(e.desc), f) && !contains(lower(g.title), f) {
				continue
			}
			group = append(group, e)
		}
		if len(group) > 0 {
			out = append(out, helpEntry{group: g.title})
			out = append(out, group...)
		}
	}
	return out
}

type helpEntry struct {
	group    string
	keys     string
	desc     string
	disabled string
}
