package tui

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
)

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

// key: esc clears the filter, then closes; ? closes; the rest filter.
func (hv *helpView) key(msg tea.KeyMsg) (closed bool, cmd tea.Cmd) {
	switch {
	case msg.Type == tea.KeyEsc:
		if hv.ti.Value() != "" {
			hv.ti.SetValue("")
			return false, nil
		}
		return true, nil
	case msg.String() == "?" && hv.ti.Value() == "":
		return true, nil
	}
	hv.ti, cmd = hv.ti.Update(msg)
	return false, cmd
}

// entries returns the help lines of keys k that match the filter; the
// keys that change a session say they are disabled, and why (disabled,
// "" when they are not).
func (hv *helpView) entries(k keyMap, disabled string) []helpEntry {
	f := strings.ToLower(strings.TrimSpace(hv.ti.Value()))
	why := disabled
	mut := map[string]bool{}
	for _, b := range k.mutating() {
		mut[b.Help().Key] = true
	}
	var out []helpEntry
	for _, g := range k.helpGroups() {
		var group []helpEntry
		for _, b := range g.keys {
			e := helpEntry{keys: b.Help().Key, desc: b.Help().Desc}
			if mut[e.keys] && why != "" {
				e.disabled = why
			}
			if f != "" && !strings.Contains(strings.ToLower(e.keys), f) && !strings.Contains(strings.ToLower(e.desc), f) &&
				!strings.Contains(strings.ToLower(g.title), f) {
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

// helpDisabled is why the keys that change a session do nothing for v
// (nil: none is selected); "" when they act.
func helpDisabled(v *sessView) string {
	if v == nil {
		return "no session selected"
	}
	return v.notMutable()
}

type helpEntry struct {
	group    string
	keys     string
	desc     string
	disabled string
}

// view draws the help screen in place of the panes, w×h with its frame;
// disabled is why the keys that change a session do not (helpDisabled).
func (hv *helpView) view(c common, disabled string, w, h int) []string {
	st := c.st
	iw := w - 2
	rows := h - 2
	head := []string{renderInput(st, hv.ti, iw, " "),
		st.muted.s(fit(" states: ● live  ◆ held  ○ idle  ✗ crashed  ⊘ broken — read by glyph and word, colour only helps", iw))}
	entries := hv.entries(c.keys, disabled)
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
		content[len(content)-1] = st.muted.s(fit("   … "+strconv.Itoa(len(entries)-shown+1)+" more — type to filter", iw))
	}
	if len(entries) == 0 {
		content = append(content, st.muted.s(fit("   no key matches", iw)))
	}
	if len(content) > rows {
		content = content[:max(0, rows)]
	}
	return box(st, "Help", "type to filter · esc closes", true, w, h, content)
}
