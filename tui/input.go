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
	// held is why the session cannot take the line now (sessView.notMutable),
	// "" when it can. The line opens all the same and keeps the keys, so
	// that what is typed never runs as key bindings; with restoreFirst
	// (a session r restores or attaches to), enter does that and the line
	// runs once it is live (shared.runPending); else enter says why and
	// runs nothing.
	held         string
	restoreFirst bool
}

func newInputBar(id string) *inputBar {
	return &inputBar{id: id, ti: newInput("", 8192)}
}

// turnInput is the input line's turn-input mode: the turn it sends to and
// what the last poll said of its terminal.
type turnInput struct {
	turnID string
	index  int
	gen    int  // the poll chain of this line (model.inputGen, openInput)
	known  bool // a status answered
	// terminal: the turn has a terminal; echoOff: its echo is off.
	terminal, echoOff bool
	// sticky: text typed while the echo was off stays masked until it is
	// sent or erased, even when the echo comes back on meanwhile.
	sticky bool
	// ended: the turn ended while text was on the line. The line stays
	// open and keeps the keys (a password typed on must not reach the key
	// bindings, nor a new turn's line), until enter or esc discards it.
	ended bool
}

// masked says whether the line hides what is typed: echo off, not known
// yet, or text typed while it was off.
func (t *turnInput) masked() bool { return !t.known || t.echoOff || t.sticky }

// polls says whether the line is in turn-input mode with the poll chain
// gen (model.inputGen, openInput): a poll of another line is dropped.
func (b *inputBar) polls(gen int) bool {
	return b.turn != nil && !b.turn.ended && b.turn.gen == gen
}

// turnEnded is what the end of the line's turn does to the line: with
// nothing typed it closes (true); with text it stays open, ended, until
// the text is discarded (turnKey).
func (b *inputBar) turnEnded() (closed bool) {
	if b.turn == nil || b.ti.Value() == "" {
		return true
	}
	b.turn.ended = true
	return false
}

// discarded says what happened to the text typed for turn t, which
// ended before it was sent.
func discarded(t *turnInput, text string) string {
	what := plural(len([]rune(text)), "character")
	if t.masked() {
		what = "hidden input (" + what + ")"
	}
	return "turn " + strconv.Itoa(t.index) + " ended before enter: " + what + " discarded, not sent nor run"
}

// echoAnswer is what an echo poll's answer does to the line.
type echoAnswer int

const (
	echoDrop  echoAnswer = iota // not this line's: nothing
	echoPoll                    // poll again
	echoClose                   // the turn ended: close the line
)

// echoed folds what a status poll said of the turn's terminal: whether
// its echo is off (the line masks then), or that the turn ended.
func (b *inputBar) echoed(msg echoMsg) echoAnswer {
	if !b.polls(msg.gen) {
		return echoDrop
	}
	t := b.turn
	if msg.err == nil {
		if msg.status.Turn == nil || msg.status.Turn.ID != t.turnID {
			return echoClose
		}
		t.known, t.terminal, t.echoOff = true, msg.status.Terminal, msg.status.EchoOff
		b.syncMask()
	}
	return echoPoll
}

// outlived says whether the line is in turn-input mode for a turn of
// session v that no longer runs there (it ended, or v was detached).
func (b *inputBar) outlived(v *sessView) bool {
	if b.turn == nil || b.id != v.id {
		return false
	}
	t := v.transcript.fold.Turn()
	return t == nil || t.ID != b.turn.turnID || !v.attached()
}

// inputAction is what a key typed into the input line asks of the root.
type inputAction struct {
	close  bool   // close the line
	submit string // submit a new turn with this input ("" for none)
	// restoreThen: restore (or attach to) the session, then submit this.
	restoreThen string
	send        *turnSend // send this to the running turn, after the sends before it
	flash       string    // say this went wrong ("" for nothing)
	cmd         tea.Cmd   // the text input's own
}

// key is a key typed into the line for session v (nil: it is gone):
// enter submits the input as a turn of the session, esc cancels, the rest
// edit it; in turn-input mode enter and ctrl+d send to the running turn
// instead (turnKey).
func (b *inputBar) key(msg tea.KeyMsg, v *sessView) inputAction {
	if b.turn != nil {
		if a, handled := b.turnKey(msg, v); handled {
			return a
		}
	}
	switch msg.Type {
	case tea.KeyEsc:
		return inputAction{close: true}
	case tea.KeyEnter:
		text := b.ti.Value()
		if strings.TrimSpace(text) == "" || v == nil {
			return inputAction{close: true}
		}
		if why := v.notMutable(); why != "" {
			if b.restoreFirst && v.restorable() {
				return inputAction{close: true, restoreThen: text}
			}
			return inputAction{close: true, flash: "i: " + why + " — the line was not run"}
		}
		return inputAction{close: true, submit: text}
	}
	var a inputAction
	b.ti, a.cmd = b.ti.Update(msg)
	b.syncMask()
	return a
}

// turnKey handles a key of the input line in turn-input mode for session
// v: enter sends the line, ctrl+d an end of file; other keys are not its
// (handled false).
func (b *inputBar) turnKey(msg tea.KeyMsg, v *sessView) (a inputAction, handled bool) {
	t := b.turn
	if t.ended {
		switch msg.Type {
		case tea.KeyEnter, tea.KeyCtrlD, tea.KeyEsc:
			return inputAction{close: true, flash: discarded(t, b.ti.Value())}, true
		}
		return inputAction{}, false
	}
	switch msg.Type {
	case tea.KeyEnter, tea.KeyCtrlD:
	default:
		return inputAction{}, false
	}
	typed := b.ti.Value()
	text := typed
	eof := msg.Type == tea.KeyCtrlD
	if !eof {
		text += "\n"
	}
	b.ti.SetValue("")
	b.syncMask()
	if v == nil {
		return inputAction{close: true}, true
	}
	if why := v.notMutable(); why != "" {
		return inputAction{flash: "input not sent: " + why}, true
	}
	if ot := v.transcript.fold.Turn(); ot == nil || ot.ID != t.turnID {
		return inputAction{close: true, flash: discarded(t, typed)}, true
	}
	return inputAction{send: &turnSend{turnID: t.turnID, index: t.index, text: text, eof: eof}}, true
}

// syncMask keeps text typed while the echo was off masked (sticky) until
// the line is empty again.
func (b *inputBar) syncMask() {
	t := b.turn
	if t == nil {
		return
	}
	switch {
	case b.ti.Value() == "":
		t.sticky = false
	case t.known && t.echoOff:
		t.sticky = true
	}
}

// view draws the input line for session v (nil: it is gone), w wide. In
// turn-input mode the prompt names the turn, and while the line is masked
// (turnInput.masked) only one • per character is drawn.
func (b *inputBar) view(c common, v *sessView, w int) string {
	st := c.st
	if t := b.turn; t != nil {
		label := " to turn " + strconv.Itoa(t.index) + " › "
		p := st.accentBold
		hint := "  enter send · ctrl+d eof · esc close "
		switch {
		case t.ended:
			label, p = " turn "+strconv.Itoa(t.index)+" ended · not sent › ", st.warn
			hint = "  enter or esc discards "
		case t.known && t.echoOff:
			label, p = " password to turn "+strconv.Itoa(t.index)+" (hidden) › ", st.warn
		case t.known && !t.terminal:
			label = " to turn " + strconv.Itoa(t.index) + " (no terminal) › "
		}
		if w < 80 {
			hint = ""
		}
		label = trunc(label, max(0, w-width(hint)-4))
		return p.s(label) + renderInputMasked(st, b.ti, w-width(label)-width(hint), "", t.masked()) + st.muted.s(hint)
	}
	// It says "new turn": text meant for a turn that just ended must not
	// run as a command unnoticed.
	label := " new turn"
	if v != nil {
		label = " new turn in " + v.short
	}
	hint := "  enter submit · esc cancel "
	if b.held != "" {
		label += " (" + b.held + ")"
		hint = "  enter: nothing runs · esc cancel "
		if b.restoreFirst {
			label = " new turn in " + v.short + " (not live)"
			hint = "  enter restores it and runs this · esc cancel "
		}
		if w < 60 {
			hint = ""
		}
		label = trunc(label, max(0, w-width(hint)-16))
		lw := width(label) + 3
		return st.warn.s(label+" ▸ ") + renderInput(st, b.ti, w-lw-width(hint), "") + st.muted.s(hint)
	}
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
