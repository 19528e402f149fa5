package tui

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
)

// inputBar is the line at the bottom where input is typed: a new turn's,
// or, in turn-input mode (turn set, turninput.go), input to the running
// turn's terminal.
type inputBar struct {
	id   string
	ti   textinput.Model
	turn *turnInput // nil: enter submits a new turn
}

func newInputBar(id string) *inputBar {
	return &inputBar{id: id, ti: newInput("", 8192)}
}

// key: enter submits the input as a turn of the session, esc cancels,
// the rest edit it; in turn-input mode enter and ctrl+d send to the
// running turn instead (turnKey).
func (b *inputBar) key(m *model, msg tea.KeyMsg) tea.Cmd {
	if b.turn != nil {
		if done, cmd := b.turnKey(m, msg); done {
			return cmd
		}
	}
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
			return m.status.flash("i: "+why, clsError)
		}
		return m.h.submitCmd(v.id, v.live.c, text)
	}
	var cmd tea.Cmd
	b.ti, cmd = b.ti.Update(msg)
	b.syncMask()
	return cmd
}

// view draws the input line, w wide. In turn-input mode the prompt names
// the turn, and while the line is masked (turnInput.masked) only one • per
// character is drawn.
func (b *inputBar) view(m *model, w int) string {
	st := m.st
	if t := b.turn; t != nil {
		label := " to turn " + strconv.Itoa(t.index) + " › "
		p := st.accentBold
		switch {
		case t.known && t.echoOff:
			label, p = " password to turn "+strconv.Itoa(t.index)+" (hidden) › ", st.warn
		case t.known && !t.terminal:
			label = " to turn " + strconv.Itoa(t.index) + " (no terminal) › "
		}
		hint := "  enter send · ctrl+d eof · esc close "
		if w < 80 {
			hint = ""
		}
		label = trunc(label, max(0, w-width(hint)-4))
		return p.s(label) + renderInputMasked(st, b.ti, w-width(label)-width(hint), "", t.masked()) + st.muted.s(hint)
	}
	v := m.sessions[b.id]
	label := " input"
	if v != nil {
		label = " " + v.short
	}
	hint := "  enter submit · esc cancel "
	if w < 60 {
		hint = ""
	}
	lw := width(label) + 3
	return st.accentBold.s(label+" ▸ ") + renderInput(st, b.ti, w-lw-width(hint), "") + st.muted.s(hint)
}

// renderInput draws a text input's value with a visible cursor, scrolled so
// the cursor shows, in at most w cells. The value is sanitized.
func renderInput(st *styles, ti textinput.Model, w int, prompt string) string {
	return renderInputMasked(st, ti, w, prompt, false)
}

// renderInputMasked is renderInput; with mask, the value is never drawn:
// one • stands for each of its characters.
func renderInputMasked(st *styles, ti textinput.Model, w int, prompt string, mask bool) string {
	w -= width(prompt)
	if w < 2 {
		return trunc(prompt, w+width(prompt))
	}
	val := []rune(ti.Value())
	if mask {
		val = []rune(strings.Repeat("•", len(val)))
	}
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

func newInput(prompt string, limit int) textinput.Model {
	ti := textinput.New()
	ti.Prompt = prompt
	ti.CharLimit = limit
	return ti
}
