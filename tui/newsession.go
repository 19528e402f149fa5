package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
)

// createDialog is the new-session form: profile, title, seed directory.
// Enter anywhere accepts (defaults need no typing).
type createDialog struct {
	profiles []string
	prof     int
	title    textinput.Model
	seed     textinput.Model
	field    int // 0 profile, 1 title, 2 seed
}

// newCreateDialog offers profiles, the default first.
func newCreateDialog(profiles []string) *createDialog {
	d := &createDialog{profiles: profiles, title: newInput("", 200), seed: newInput("", 1024), field: 1}
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

func (d *createDialog) key(_ common, msg tea.KeyMsg, _ dialogArea) dialogResult {
	switch msg.Type {
	case tea.KeyEsc:
		return dialogResult{done: true}
	case tea.KeyEnter:
		profile := ""
		if len(d.profiles) > 0 {
			profile = d.profiles[d.prof]
		}
		return dialogResult{done: true, act: createAction{profile: profile,
			title: strings.TrimSpace(d.title.Value()), seed: strings.TrimSpace(d.seed.Value())}}
	case tea.KeyTab, tea.KeyDown:
		d.field = (d.field + 1) % 3
		return dialogResult{cmd: d.focusField()}
	case tea.KeyShiftTab, tea.KeyUp:
		d.field = (d.field + 2) % 3
		return dialogResult{cmd: d.focusField()}
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
	return dialogResult{cmd: cmd}
}

func (d *createDialog) view(c common, area dialogArea) (string, []string) {
	st, w := c.st, area.w
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
