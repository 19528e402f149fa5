package tui

import (
	"context"
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/host"
)

// Focus on a full-screen program. While the selected, attached session's
// turn shows its screen (screen.go), f focuses it: every key, ctrl+c
// included, goes to the program as a terminal would send it, until
// ctrl+] (leaveScreenKey) gives the keys back to looprig. A running turn
// with no screen gets one from f (a program that draws on the main
// screen, such as top), until ctrl+] or the turn's end. When the
// program ends meanwhile, the next key only gives them back, so a key
// meant for the program never reaches looprig's own bindings (a q typed
// to quit less must not quit looprig as well).
//
// The keys are sent as input to the turn's terminal, queued per session
// with the input line's sends (turninput.go), quietly: no status note per
// key. Programs that draw a screen turn their terminal's echo off, so the
// host journals each send as hidden input, its length only.

const leaveScreenKey = tea.KeyCtrlCloseBracket

// screenFocus is the session whose full-screen program has the keys: the
// component (nil when looprig has the keys) owns which session and turn
// they go to; focusOn makes one, session finds its session again, key
// says what a key does. The root routes the keys and sends what key
// returns with the input line's sends (screenKey, shared.queueSend).
type screenFocus struct {
	id     string
	turnID string
}

// focusOn gives the keys to the full-screen program of v (f): the focus,
// or nil and why not (note). A turn whose program draws on the main
// screen (top, watch) has no screen yet: f opens one at cols×rows, filled
// in from the program's next redraw (redraw: the root asks the program
// to draw again).
func focusOn(v *sessView, cols, rows int) (f *screenFocus, redraw bool, note string) {
	switch {
	case !v.takesCommands():
		return nil, false, "not attached to its host: r attaches"
	case v.transcript.screen == nil && v.transcript.fold.Turn() == nil:
		return nil, false, "no turn is running (i submits one)"
	case v.transcript.screen == nil:
		v.transcript.screen = newTurnScreen(v.transcript.fold.Turn().ID, cols, rows)
		if v.transcript.screen == nil {
			return nil, false, "the screen could not be opened"
		}
		v.transcript.screen.opened = true
		redraw = true
	}
	v.transcript.follow, v.transcript.scroll = true, 0
	return &screenFocus{id: v.id, turnID: v.transcript.screen.turnID}, redraw, "keys go to the program · ctrl+] gives them back"
}

// redraw makes the program of v's turn draw its whole screen again: the
// terminal shrinks by a row and grows back, so the program gets SIGWINCH
// twice and redraws for the size it ends with. A screen opened in the
// middle of a program's output starts empty; this fills it.
func (h *shared) redraw(v *sessView, cols, rows int) tea.Cmd {
	if rows < 2 {
		return nil
	}
	if !v.live.redrawTo([2]int{cols, rows}) {
		return nil // after the resize in flight (onResized)
	}
	return h.redrawCmd(v.id, v.live.c, cols, rows)
}

// redrawCmd shrinks the terminal of session id's turn by a row and grows
// it back to cols×rows (shared.redraw).
func (h *shared) redrawCmd(id string, c *host.Client, cols, rows int) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(h.ctx, opTimeout)
		defer cancel()
		err := c.Resize(ctx, cols, rows-1)
		if err == nil {
			err = c.Resize(ctx, cols, rows)
		}
		if err != nil && h.ctx.Err() != nil {
			return nil
		}
		return resizedMsg{id: id, c: c, err: err}
	}
}

// session returns the session whose program has the keys and still
// shows its screen, or nil when the focus is gone (the program or its
// turn ended, the host went away) or there is none (f nil).
func (f *screenFocus) session(sessions map[string]*sessView) *sessView {
	if f == nil {
		return nil
	}
	v := sessions[f.id]
	if v == nil || v.transcript.screen == nil || v.transcript.screen.turnID != f.turnID || !v.takesCommands() ||
		v.transcript.fold.Turn() == nil || v.transcript.fold.Turn().ID != f.turnID {
		return nil
	}
	return v
}

// key is a key while the program of session v has the keys (v nil: it
// ended). ctrl+] gives them back, and so does any key once the program
// ended (leave, saying so in note); any other key goes to the program
// (send; nil when the key sends nothing). ctrl+] closes a screen f opened
// that is not on the alternate screen: back to the transcript.
func (f *screenFocus) key(msg tea.KeyMsg, v *sessView) (send *turnSend, leave bool, note string) {
	if v == nil {
		return nil, true, "the full-screen program ended: keys go to looprig again"
	}
	scr := v.transcript.screen
	if msg.Type == leaveScreenKey {
		if scr.opened && !scr.emu.IsAltScreen() {
			v.transcript.screen = nil // back to the transcript
		}
		return nil, true, "keys go to looprig again (f gives them to the program)"
	}
	b := keyBytes(msg, scr.appCursor)
	if msg.Paste && scr.bracketedPaste {
		b = append(append([]byte("\x1b[200~"), b...), "\x1b[201~"...)
	}
	if len(b) == 0 {
		return nil, false, ""
	}
	return &turnSend{turnID: scr.turnID, index: v.transcript.fold.Turn().Index, text: string(b), quiet: true}, false, ""
}

// screenKey gives a key to the full-screen program that has the keys.
func (m *model) screenKey(msg tea.KeyMsg) tea.Cmd {
	v := m.screenFocus.session(m.sessions)
	send, leave, note := m.screenFocus.key(msg, v)
	switch {
	case leave:
		m.screenFocus = nil
		return m.status.flash(note, clsOK)
	case send != nil:
		return m.h.queueSend(v, *send)
	}
	return nil
}

// keyBytes is what a terminal sends for key k: its text, its control
// character, or its escape sequence (xterm's), with ESC before it for
// alt. appCursor selects the application cursor keys (ESC O A). Keys with
// no such bytes give nil.
func keyBytes(k tea.KeyMsg, appCursor bool) []byte {
	var b []byte
	switch {
	case k.Type == tea.KeyRunes:
		for _, r := range k.Runes {
			b = utf8.AppendRune(b, r)
		}
		if k.Paste {
			return b
		}
	case k.Type == tea.KeySpace:
		b = []byte{' '}
	case k.Type >= 0 && k.Type <= 127:
		// The control keys are their own codes: ctrl+a is 1, enter 13,
		// tab 9, esc 27, backspace 127.
		b = []byte{byte(k.Type)}
	default:
		seq, ok := keySeqs[k.Type]
		if !ok {
			return nil
		}
		if appCursor {
			if app, ok := appCursorSeqs[k.Type]; ok {
				seq = app
			}
		}
		b = []byte(seq)
	}
	if k.Alt {
		b = append([]byte{0x1b}, b...)
	}
	return b
}

// keySeqs are xterm's sequences for the keys that have one.
var keySeqs = map[tea.KeyType]string{
	tea.KeyUp: "\x1b[A", tea.KeyDown: "\x1b[B", tea.KeyRight: "\x1b[C", tea.KeyLeft: "\x1b[D",
	tea.KeyHome: "\x1b[H", tea.KeyEnd: "\x1b[F",
	tea.KeyShiftTab: "\x1b[Z",
	tea.KeyInsert:   "\x1b[2~", tea.KeyDelete: "\x1b[3~", tea.KeyPgUp: "\x1b[5~", tea.KeyPgDown: "\x1b[6~",
	tea.KeyCtrlPgUp: "\x1b[5;5~", tea.KeyCtrlPgDown: "\x1b[6;5~",
	tea.KeyShiftUp: "\x1b[1;2A", tea.KeyShiftDown: "\x1b[1;2B", tea.KeyShiftRight: "\x1b[1;2C", tea.KeyShiftLeft: "\x1b[1;2D",
	tea.KeyShiftHome: "\x1b[1;2H", tea.KeyShiftEnd: "\x1b[1;2F",
	tea.KeyCtrlUp: "\x1b[1;5A", tea.KeyCtrlDown: "\x1b[1;5B", tea.KeyCtrlRight: "\x1b[1;5C", tea.KeyCtrlLeft: "\x1b[1;5D",
	tea.KeyCtrlHome: "\x1b[1;5H", tea.KeyCtrlEnd: "\x1b[1;5F",
	tea.KeyCtrlShiftUp: "\x1b[1;6A", tea.KeyCtrlShiftDown: "\x1b[1;6B", tea.KeyCtrlShiftRight: "\x1b[1;6C", tea.KeyCtrlShiftLeft: "\x1b[1;6D",
	tea.KeyCtrlShiftHome: "\x1b[1;6H", tea.KeyCtrlShiftEnd: "\x1b[1;6F",
	tea.KeyF1: "\x1bOP", tea.KeyF2: "\x1bOQ", tea.KeyF3: "\x1bOR", tea.KeyF4: "\x1bOS",
	tea.KeyF5: "\x1b[15~", tea.KeyF6: "\x1b[17~", tea.KeyF7: "\x1b[18~", tea.KeyF8: "\x1b[19~",
	tea.KeyF9: "\x1b[20~", tea.KeyF10: "\x1b[21~", tea.KeyF11: "\x1b[23~", tea.KeyF12: "\x1b[24~",
}

// appCursorSeqs replace keySeqs' while the program asked for application
// cursor keys (DECCKM).
var appCursorSeqs = map[tea.KeyType]string{
	tea.KeyUp: "\x1bOA", tea.KeyDown: "\x1bOB", tea.KeyRight: "\x1bOC", tea.KeyLeft: "\x1bOD",
	tea.KeyHome: "\x1bOH", tea.KeyEnd: "\x1bOF",
}
