package tui

import (
	"context"
	"strconv"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/host"
	"looprig/rig/explain"
	"looprig/rig/fault"
)

// Input to a running turn. While a turn runs in an attached session, i
// opens the input line in turn-input mode: enter sends the line and a
// newline to the turn's terminal, ctrl+d an end of file (after text, the
// text without a newline, as a terminal's ^D does), esc closes the line.
// The line stays open between lines and closes when the turn ends.
//
// While the line is open, the turn's echo state is polled (Status, every
// echoEvery): while its echo is off (a password prompt) the line shows
// one • per character and says "password". Until the first answer the
// line masks too, so a secret typed at once is never shown. What is typed
// is never logged nor shown in the events pane; the log and the status
// bar give only lengths.
//
// Sends are serialized per session (attachment.sending, queue): Bubble
// Tea runs commands concurrently, and two lines typed quickly must reach
// the turn in order.

const (
	echoEvery    = 250 * time.Millisecond
	echoTimeout  = 2 * time.Second
	inputTimeout = 10 * time.Second // the host gives up first (5 s: input_timeout)
	inputFrom    = "tui"
)

// turnSend is one send to a turn's terminal, queued per session.
type turnSend struct {
	turnID string
	index  int
	text   string // sent first when not empty
	eof    bool   // then an end of file
	quiet  bool   // keys to a full-screen program: no note when sent
}

type (
	// echoMsg: what a status poll said of the running turn's terminal.
	echoMsg struct {
		id     string
		gen    int
		status host.Status
		err    error
	}
	// echoTickMsg: time to poll the echo state again.
	echoTickMsg struct{ gen int }
	// inputSentMsg: a send to a turn's terminal ended.
	inputSentMsg struct {
		id     string
		c      *host.Client
		send   turnSend
		hidden bool // the host said the terminal's echo was off
		err    error
	}
)

// openInput opens the input line for v (i): to its running turn's
// terminal when a turn runs, its echo polled by the poll chain gen, else
// for a new turn.
func openInput(h *shared, v *sessView, gen int) (*inputBar, tea.Cmd) {
	b := newInputBar(v.id)
	focus := b.ti.Focus()
	if why := v.notMutable(); why != "" {
		b.held, b.restoreFirst = why, v.restorable()
		return b, focus
	}
	t := v.transcript.fold.Turn()
	if t == nil {
		return b, focus
	}
	b.turn = &turnInput{turnID: t.ID, index: t.Index, gen: gen}
	return b, tea.Batch(focus, h.echoCmd(v.id, v.live.c, gen))
}

// echoCmd asks the host of session id for the running turn's echo state.
func (h *shared) echoCmd(id string, c *host.Client, gen int) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(h.ctx, echoTimeout)
		defer cancel()
		st, err := c.Status(ctx)
		if err != nil && h.ctx.Err() != nil {
			return nil
		}
		return echoMsg{id: id, gen: gen, status: st, err: err}
	}
}

func echoTick(gen int) tea.Cmd {
	return tea.Tick(echoEvery, func(time.Time) tea.Msg { return echoTickMsg{gen: gen} })
}

// polled folds a status poll into the line it was for and polls again
// while the line stays open; a turn that ended closes the line (closed).
func (b *inputBar) polled(msg echoMsg) (closed bool, cmd tea.Cmd) {
	switch b.echoed(msg) {
	case echoClose:
		return b.turnEnded(), nil
	case echoPoll:
		return false, echoTick(msg.gen)
	}
	return false, nil
}

// tick polls the echo state of session v's turn again, unless the line
// changed; v gone or detached closes the line.
func (b *inputBar) tick(h *shared, msg echoTickMsg, v *sessView) (closed bool, cmd tea.Cmd) {
	if !b.polls(msg.gen) {
		return false, nil
	}
	if v == nil || !v.attached() {
		return true, nil
	}
	return false, h.echoCmd(v.id, v.live.c, msg.gen)
}

// endedWith says whether the line (nil: none) closes now that the turn of
// session v is no longer the one running (the stream said it ended): it
// closes, saying nothing (the answer of the last send may still come, and
// says more), when nothing is typed on it; a line with text stays open,
// ended, until the text is discarded (inputBar.turnEnded).
func (b *inputBar) endedWith(v *sessView) bool {
	return b != nil && b.outlived(v) && b.turnEnded()
}

// queueSend sends s to v's running turn, after the sends before it.
func (h *shared) queueSend(v *sessView, s turnSend) tea.Cmd {
	if !v.live.enqueue(s) {
		return nil
	}
	return h.inputCmd(v.id, v.live.c, s)
}

// inputCmd sends s to the running turn's terminal: its text, then an end
// of file when asked.
func (h *shared) inputCmd(id string, c *host.Client, s turnSend) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(h.ctx, inputTimeout)
		defer cancel()
		var hidden bool
		var err error
		if s.text != "" {
			hidden, err = c.SendInput(ctx, s.text, inputFrom)
		}
		if err == nil && s.eof {
			err = c.SendEOF(ctx, inputFrom)
		}
		if err != nil && h.ctx.Err() != nil {
			return nil
		}
		return inputSentMsg{id: id, c: c, send: s, hidden: hidden, err: err}
	}
}

// onInputSent: a send ended. It says so (lengths only: what was typed is
// never logged nor shown) and sends the next one queued; after a failure
// the queued ones are dropped.
func (m *model) onInputSent(msg inputSentMsg) tea.Cmd {
	v := m.sessions[msg.id]
	if v == nil || v.live.c != msg.c {
		return nil
	}
	v.live.sending = false
	s := msg.send
	n := len(s.text)
	hidden := msg.hidden // the host's word: the journal kept only the length
	if msg.err != nil {
		dropped := v.live.dropQueue()
		m.h.log.Warn("input not sent", "session", v.id, "turn", s.index, "bytes", n, "eof", s.eof, "err", msg.err)
		note := "input not sent: " + inputErrText(v, msg.err)
		if dropped > 0 {
			note += " (" + plural(dropped, "more input") + " dropped)"
		}
		return m.status.flash(note, clsError)
	}
	if s.quiet {
		return m.h.sendNext(v, nil)
	}
	var note string
	m.h.log.Info("input sent", "session", v.id, "turn", s.index, "bytes", n, "hidden", hidden, "eof", s.eof)
	switch {
	case hidden && s.eof:
		note = "sent hidden input (" + plural(n, "byte") + ") and end of file"
	case hidden:
		note = "sent hidden input (" + plural(n, "byte") + ")"
	case s.eof && n > 0:
		note = "sent " + plural(n, "byte") + " and end of file to turn " + strconv.Itoa(s.index)
	case s.eof:
		note = "sent end of file to turn " + strconv.Itoa(s.index)
	default:
		note = "sent " + plural(n, "byte") + " to turn " + strconv.Itoa(s.index)
	}
	return m.h.sendNext(v, m.status.flash(note, clsOK))
}

// sendNext starts the next queued send of v, if any still has its turn
// running, batched with cmd.
func (h *shared) sendNext(v *sessView, cmd tea.Cmd) tea.Cmd {
	if !v.attached() {
		return cmd
	}
	running := ""
	if t := v.transcript.fold.Turn(); t != nil {
		running = t.ID
	}
	next, ok := v.live.next(running)
	if !ok {
		return cmd
	}
	return tea.Batch(cmd, h.inputCmd(v.id, v.live.c, next))
}

// inputErrText says why input did not reach the turn of session v.
func inputErrText(v *sessView, err error) string {
	switch explain.Explain(err).Kind {
	case fault.KindNoTurn:
		return "no turn is running"
	case fault.KindNoTerminal:
		if v.transcript.fold.Gate() != nil {
			return "the turn waits at a gate (a approves, d denies)"
		}
		return "the turn has no terminal (profile tty = false)"
	case fault.KindInputTimeout:
		return "the turn is not reading its input"
	case fault.KindTimeout:
		return "the host did not answer within " + inputTimeout.String()
	}
	return errText(err)
}

// runPending runs the line typed with i while v was not live
// (sessView.pendingInput), once v is live here and its replay is over.
func (h *shared) runPending(v *sessView) tea.Cmd {
	if v.pendingInput == "" || v.notMutable() != "" {
		return nil
	}
	text := v.pendingInput
	v.pendingInput = ""
	return h.submitCmd(v.id, v.live.c, text)
}

// dropPending drops the line typed with i before a restore or attach of
// v that failed, so that it never runs later by surprise, and returns
// what to add to the failure's note ("" when there was none).
func dropPending(v *sessView) string {
	if v == nil || v.pendingInput == "" {
		return ""
	}
	v.pendingInput = ""
	return " — the line typed was not run"
}
