package tui

import (
	"context"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/google/uuid"

	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/checkpoint"
)

// changesView shows what a turn changed in a session's workspace (the
// checkpoints before and after it: rig.FindTurnCheckpoints,
// checkpoint.Diff, checkpoint.Format), in place of the panes as the help
// screen is: c opens it on the selected session's last turn, [ and ] go
// to the turn before and after, the movement keys scroll, esc or c
// closes. It is read from the store in a command; nothing is written.
type changesView struct {
	id      string
	short   string
	gen     int // of the last load asked for; an older answer is dropped
	loading bool
	index   int      // the turn shown (-1 before the first answer)
	lines   []string // safe to draw (sanitized, tabs expanded)
	err     string
	top     int
}

// changesMsg answers a load of changesView gen.
type changesMsg struct {
	gen   int
	index int
	lines []string
	err   error
}

// changesBindings: [ and ] move between turns.
var (
	changesPrev = key.NewBinding(key.WithKeys("["), key.WithHelp("[", "the turn before"))
	changesNext = key.NewBinding(key.WithKeys("]"), key.WithHelp("]", "the turn after"))
	// changesRevert puts the workspace back as it was before the turn
	// shown (rig.Session.Revert), after a confirm.
	changesRevert = key.NewBinding(key.WithKeys("u"), key.WithHelp("u", "revert to before this turn"))
	// changesFork makes a new session that begins as the session was
	// after the turn shown (looprig fork), after a confirm.
	changesFork = key.NewBinding(key.WithKeys("F"), key.WithHelp("F", "fork at this turn"))
)

// openChanges opens the view on the last turn of session v.
func openChanges(h *shared, v *sessView) (*changesView, tea.Cmd) {
	cv := &changesView{id: v.id, short: rig.ShortID(v.id), index: -1}
	return cv, cv.load(h, "")
}

// load asks for turn ("" for the last one).
func (cv *changesView) load(h *shared, turn string) tea.Cmd {
	cv.gen++
	cv.loading = true
	return h.changesCmd(cv.id, turn, cv.gen)
}

// reverted reads the turn shown again after session id was reverted:
// what the turn changed is the same, read again as after any change
// (nil when the view shows another session or no turn yet).
func (cv *changesView) reverted(h *shared, id string) tea.Cmd {
	if cv == nil || cv.id != id || cv.index < 0 {
		return nil
	}
	return cv.load(h, strconv.Itoa(cv.index))
}

// changesCmd reads what turn of session id changed.
func (h *shared) changesCmd(id, turn string, gen int) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(h.ctx, opTimeout)
		defer cancel()
		sid, err := uuid.Parse(id)
		if err != nil {
			return changesMsg{gen: gen, index: -1, err: err}
		}
		tc, err := rig.FindTurnCheckpoints(ctx, h.store, sid, turn)
		if err != nil {
			return changesMsg{gen: gen, index: -1, err: err}
		}
		changes, err := checkpoint.Diff(ctx, h.store, tc.Before, tc.After, checkpoint.DiffOptions{})
		if err != nil {
			return changesMsg{gen: gen, index: tc.Index, err: err}
		}
		return changesMsg{gen: gen, index: tc.Index, lines: changesLines(changes)}
	}
}

// changesLines is changes as the view draws them: checkpoint.Format's
// text, made safe, its tabs expanded.
func changesLines(changes []checkpoint.FileChange) []string {
	if len(changes) == 0 {
		return []string{"the turn changed nothing in the workspace"}
	}
	text := strings.ReplaceAll(textsafe.Sanitize(checkpoint.Format(changes)), "\t", "    ")
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// answered folds the answer to a load; an answer to an older load is
// dropped.
func (cv *changesView) answered(msg changesMsg) {
	if msg.gen != cv.gen {
		return
	}
	cv.loading = false
	if msg.err != nil {
		cv.err = errText(msg.err)
		if msg.index >= 0 {
			cv.index = msg.index
		}
		return
	}
	cv.err, cv.index, cv.lines, cv.top = "", msg.index, msg.lines, 0
}

// changesResult is what a key did in the view: it closed it, asks for a
// dialog (u's and F's confirm), or has a note to flash.
type changesResult struct {
	closed bool
	dialog dialog
	flash  string
	cmd    tea.Cmd
}

// key: esc and c close; [ and ] change the turn; u asks to revert the
// session shown (v, nil when it is gone) to before the turn; the movement
// keys scroll (rows: the lines shown at once).
func (cv *changesView) key(h *shared, k keyMap, msg tea.KeyMsg, rows int, v *sessView) (r changesResult) {
	switch {
	case key.Matches(msg, k.Dismiss, k.Changes):
		return changesResult{closed: true}
	case key.Matches(msg, changesPrev):
		if cv.index > 0 {
			r.cmd = cv.load(h, strconv.Itoa(cv.index-1))
		}
	case key.Matches(msg, changesNext):
		switch {
		case cv.index < 0:
		case v != nil && cv.index+1 >= v.turnsKnown():
			r.flash = "turn " + strconv.Itoa(cv.index) + " is the last"
		default:
			r.cmd = cv.load(h, strconv.Itoa(cv.index+1))
		}
	case key.Matches(msg, changesFork):
		if v != nil && cv.index >= 0 {
			r.dialog = newForkDialog(v, cv.index)
		}
	case key.Matches(msg, changesRevert):
		switch {
		case v == nil || cv.index < 0:
		case v.notMutable() != "":
			r.flash = "u: " + v.notMutable()
		default:
			r.dialog = newRevertDialog(v, cv.index)
		}
	case key.Matches(msg, k.Up):
		cv.top--
	case key.Matches(msg, k.Down):
		cv.top++
	case key.Matches(msg, k.PageUp):
		cv.top -= rows
	case key.Matches(msg, k.PageDown):
		cv.top += rows
	case key.Matches(msg, k.Top):
		cv.top = 0
	case key.Matches(msg, k.Bottom):
		cv.top = len(cv.lines)
	}
	cv.top = max(0, min(cv.top, len(cv.lines)-rows))
	return r
}

// view draws the view w×h with its frame; only the visible lines.
func (cv *changesView) view(st *styles, w, h int) []string {
	iw, rows := w-2, h-2
	title := "Changes of " + cv.short
	if cv.index >= 0 {
		title += " · turn " + strconv.Itoa(cv.index)
	}
	var content []string
	switch {
	case cv.loading && cv.lines == nil:
		content = append(content, st.muted.s(fit(" reading the checkpoints…", iw)))
	case cv.err != "":
		content = append(content, st.errorP.s(fit(" "+cv.err, iw)))
	}
	for i := cv.top; i < len(cv.lines) && len(content) < rows; i++ {
		content = append(content, changesLine(st, cv.lines[i], iw))
	}
	return box(st, title, "[ ] turns · u revert to before it · F fork at it · ↑↓ scroll · esc closes", true, w, h, content)
}

// changesLine colours one line of a diff by what it is.
func changesLine(st *styles, l string, w int) string {
	t := fit(l, w)
	switch {
	case strings.HasPrefix(l, "diff "):
		return st.accentBold.s(t)
	case strings.HasPrefix(l, "@@"):
		return st.accent.s(t)
	case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "):
		return st.title.s(t)
	case strings.HasPrefix(l, "+"):
		return st.ev[clsOK].s(t)
	case strings.HasPrefix(l, "-"):
		return st.errorP.s(t)
	}
	return st.text.s(t)
}
