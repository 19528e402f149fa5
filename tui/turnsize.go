package tui

import (
	"context"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/host"
)

// The terminal size of the turns of attached sessions: the events pane's
// inner area, sent to each attached session's host when the window
// changes (at most one Resize in flight per session: attachment.resizeTo).

// resizedMsg: a Resize of an attached session's terminal was answered.
type resizedMsg struct {
	id  string
	c   *host.Client
	err error
}

// turnSize is the terminal size a turn of an attached session gets: the
// events pane's inner area (its frame and the output's indent taken off),
// as the pane shows it when it is shown.
func (m *model) turnSize() (cols, rows int) {
	g := m.geometry()
	w, h := g.eventsW, g.eventsH
	if !g.showEvt {
		w, h = m.width, g.bodyH
	}
	return max(1, w-4), max(1, h-2)
}

// resizeAll sends the window's size to the turns of every attached
// session (a window resize).
func (m *model) resizeAll() tea.Cmd {
	var cmds []tea.Cmd
	cols, rows := m.turnSize()
	for _, v := range m.sessions {
		v.transcript.screenSize = [2]int{cols, rows}
		if v.transcript.screen != nil {
			v.transcript.screen.resize(cols, rows)
		}
		cmds = append(cmds, m.h.resizeTurn(v, cols, rows))
	}
	return tea.Batch(cmds...)
}

// resizeTurn sends the turn size cols×rows to v's host when v is
// attached: at most one Resize in flight per session (the attachment
// keeps it); the latest size follows when it returns.
func (h *shared) resizeTurn(v *sessView, cols, rows int) tea.Cmd {
	if !v.attached() {
		return nil
	}
	if !v.live.resizeTo([2]int{cols, rows}) {
		return nil
	}
	return h.resizeCmd(v.id, v.live.c, cols, rows)
}

// resizeCmd resizes the terminal of session id's running turn.
func (h *shared) resizeCmd(id string, c *host.Client, cols, rows int) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(h.ctx, opTimeout)
		defer cancel()
		err := c.Resize(ctx, cols, rows)
		if err != nil && h.ctx.Err() != nil {
			return nil
		}
		return resizedMsg{id: id, c: c, err: err}
	}
}

// onResized: a Resize was answered; a size asked for meanwhile is sent now.
func (m *model) onResized(msg resizedMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || v.live.c != msg.c {
		return nil
	}
	v.live.resizing = false
	if msg.err != nil {
		m.h.log.Warn("terminal resize failed", "session", v.id, "size", v.live.sentSize, "err", msg.err)
	}
	cols, rows := m.turnSize()
	if v.live.redraw && v.transcript.screen != nil {
		v.live.redraw = false
		return m.h.redraw(v, cols, rows)
	}
	if v.live.wantSize == v.live.sentSize {
		return nil
	}
	return m.h.resizeTurn(v, cols, rows)
}
