package tui

import (
	"path/filepath"
	"strings"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"looprig/rig"
)

// createDialog is the new-session form: profile, title, the directory the
// session lives in, seed directory. Enter anywhere accepts (defaults need
// no typing): the session works in the directory the TUI was started in,
// as `looprig new` does in the shell's.
type createDialog struct {
	profiles []profileChoice
	prof     int
	title    textinput.Model
	dir      textinput.Model
	seed     textinput.Model
	// worktree: the session gets a git worktree of its own, beside the
	// repository its directory is in (looprig new --worktree).
	worktree bool
	field    int // fieldProfile … fieldSeed
	// base is the directory the TUI was started in: a relative directory
	// typed is relative to it (the host runs in /).
	base string
	// matches are the directories the last tab offered (more than one
	// matched what is typed), shown under the field until the next key.
	matches []string
}

// The fields of the create dialog, in tab order.
const (
	fieldProfile = iota
	fieldTitle
	fieldDir
	fieldWorktree
	fieldSeed
	numCreateFields
)

// profileChoice is a profile the create dialog offers: its name and, when
// it pins a placement (rig.Profile.PlacementPinned), where it puts every
// session ("" when the dialog's directory says).
type profileChoice struct {
	name   string
	pinned string
}

// profileChoices are the configured profiles, as the create dialog offers
// them.
func (h *shared) profileChoices() []profileChoice {
	var out []profileChoice
	for _, n := range h.profileNames() {
		c := profileChoice{name: n}
		if p := h.opts.Profiles[n]; p.PlacementPinned {
			switch p.Placement {
			case rig.PlacementSession:
				c.pinned = "a private directory in the store (profile " + n + ")"
			default:
				c.pinned = string(p.Placement) + " " + p.Root + " (profile " + n + ")"
			}
		}
		out = append(out, c)
	}
	return out
}

// newCreateDialog offers profiles, the default first, and dir (where the
// TUI was started) as the session's directory.
func newCreateDialog(profiles []profileChoice, dir string) *createDialog {
	d := &createDialog{profiles: profiles, title: newInput("", 200), dir: newInput("", 4096), seed: newInput("", 1024), field: fieldTitle, base: dir}
	d.title.Placeholder = "(untitled)"
	d.dir.Placeholder = "(scratch: a private directory in the store)"
	d.dir.SetValue(dir)
	d.dir.CursorEnd()
	d.seed.Placeholder = "(none)"
	d.focusField()
	return d
}

func (d *createDialog) focusField() tea.Cmd {
	d.title.Blur()
	d.dir.Blur()
	d.seed.Blur()
	switch d.field {
	case fieldTitle:
		return d.title.Focus()
	case fieldDir:
		return d.dir.Focus()
	case fieldSeed:
		return d.seed.Focus()
	}
	return nil
}

// pinned is where the chosen profile puts every session; "" when the
// directory field says.
func (d *createDialog) pinned() string {
	if len(d.profiles) == 0 {
		return ""
	}
	return d.profiles[d.prof].pinned
}

// accept is the create the form asks for.
func (d *createDialog) accept() createAction {
	a := createAction{title: strings.TrimSpace(d.title.Value()), seed: strings.TrimSpace(d.seed.Value()), worktree: d.worktree}
	if len(d.profiles) > 0 {
		a.profile = d.profiles[d.prof].name
	}
	if d.pinned() == "" {
		a.dir = expandHome(strings.TrimSpace(d.dir.Value()))
		a.scratch = a.dir == ""
		if !a.scratch && !filepath.IsAbs(a.dir) && d.base != "" {
			a.dir = filepath.Join(d.base, a.dir)
		}
	}
	return a
}

func (d *createDialog) key(_ common, msg tea.KeyMsg, _ dialogArea) dialogResult {
	d.matches = nil
	switch msg.Type {
	case tea.KeyEsc:
		return dialogResult{done: true}
	case tea.KeyEnter:
		return dialogResult{done: true, act: d.accept()}
	case tea.KeyTab:
		if d.field == fieldDir && d.pinned() == "" {
			return dialogResult{cmd: completeDirCmd(d.dir.Value())}
		}
		d.field = (d.field + 1) % numCreateFields
		return dialogResult{cmd: d.focusField()}
	case tea.KeyDown:
		d.field = (d.field + 1) % numCreateFields
		return dialogResult{cmd: d.focusField()}
	case tea.KeyShiftTab, tea.KeyUp:
		d.field = (d.field + numCreateFields - 1) % numCreateFields
		return dialogResult{cmd: d.focusField()}
	}
	var cmd tea.Cmd
	switch d.field {
	case fieldProfile:
		switch msg.String() {
		case "left", "h":
			d.prof = (d.prof + len(d.profiles) - 1) % max(1, len(d.profiles))
		case "right", "l", " ":
			d.prof = (d.prof + 1) % max(1, len(d.profiles))
		}
	case fieldTitle:
		d.title, cmd = d.title.Update(msg)
	case fieldDir:
		if d.pinned() == "" {
			d.dir, cmd = d.dir.Update(msg)
		}
	case fieldWorktree:
		switch msg.String() {
		case "left", "h", "right", "l", " ", "x":
			d.worktree = !d.worktree
		}
	case fieldSeed:
		d.seed, cmd = d.seed.Update(msg)
	}
	return dialogResult{cmd: cmd}
}

// completed takes what a tab in the directory field found, unless the
// field changed meanwhile.
func (d *createDialog) completed(msg dirCompletedMsg) {
	if d.dir.Value() != msg.typed {
		return
	}
	if msg.to != msg.typed {
		d.dir.SetValue(msg.to)
		d.dir.CursorEnd()
	}
	d.matches = msg.matches
}

func (d *createDialog) view(c common, area dialogArea) (string, []string) {
	st, w := c.st, area.w
	label := func(i int, s string) string {
		if d.field == i {
			return st.accent.s("▸ " + s)
		}
		return st.muted.s("  " + s)
	}
	var prof strings.Builder
	for i, p := range d.profiles {
		if i > 0 {
			prof.WriteString(" ")
		}
		if i == d.prof {
			prof.WriteString(st.accBadge.s("▸" + clean(p.name) + "◂")) // the choice shows without colour too (NO_COLOR)
		} else {
			prof.WriteString(st.muted.s(" " + clean(p.name) + " "))
		}
	}
	inner := max(10, w-12)
	dir := renderInput(st, d.dir, inner, "")
	if p := d.pinned(); p != "" {
		dir = st.muted.s(trunc(clean(p), inner))
	}
	lines := []string{
		label(fieldProfile, "profile   ") + prof.String(),
		label(fieldTitle, "title     ") + renderInput(st, d.title, inner, ""),
		label(fieldDir, "directory ") + dir,
	}
	if len(d.matches) > 0 {
		lines = append(lines, st.muted.s(trunc("            "+clean(strings.Join(d.matches, "  ")), w)))
	}
	box := "[ ] no: the directory itself"
	if d.worktree {
		box = "[x] yes: a new branch beside the repository"
	}
	lines = append(lines, label(fieldWorktree, "worktree  ")+trunc(box, inner), label(fieldSeed, "seed dir  ")+renderInput(st, d.seed, inner, ""))
	note := "the session works in this directory; no other session may while it runs"
	switch {
	case d.pinned() != "":
		note = "the profile says where its sessions work"
	case strings.TrimSpace(d.dir.Value()) == "":
		note = "empty: a private scratch directory in the store"
	case d.worktree:
		note = "the session works in a git worktree of its own, made from this directory's repository"
	}
	hint := "enter create · tab/↑/↓ field · ←/→ profile · esc cancel"
	switch {
	case d.field == fieldDir && d.pinned() == "":
		hint = "enter create · tab completes · ↑/↓ field · esc cancel"
	case d.field == fieldWorktree:
		hint = "enter create · space toggles · tab/↑/↓ field · esc cancel"
	}
	lines = append(lines, st.muted.s(trunc(note, w)), "", st.muted.s(trunc(hint, w)))
	return "New session", lines
}
