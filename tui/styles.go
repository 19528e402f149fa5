package tui

import (
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"looprig/rig"
	"looprig/themes"
)

// paint is a cached style: the SGR sequence that starts it and the one
// that ends it. Painting is string concatenation, so a frame costs no
// lipgloss rendering; with the Ascii profile (NO_COLOR, tests) both are
// empty and nothing but text is drawn.
type paint struct{ pre, post string }

func (p paint) s(text string) string {
	if p.pre == "" || text == "" {
		return text
	}
	return p.pre + text + p.post
}

// styles is the painted form of a theme for one renderer.
type styles struct {
	theme   themes.Theme
	profile termenv.Profile
	plain   bool // no styling at all (NO_COLOR, Ascii)

	text, muted, accent, accentBold, title   paint
	borderFocus, borderBlur                  paint
	sel                                      paint // selected row: selection text on selection background
	selMuted                                 paint
	errorP, warn, ok                         paint
	errorBadge, warnBadge, okBadge, accBadge paint // reversed, bold
	state                                    map[rig.SessionState]paint
	ev                                       [numClasses]paint
	key                                      paint // key names in hints and help
	disabled                                 paint
}

func newStyles(r *lipgloss.Renderer, th themes.Theme) *styles {
	col := func(t themes.Token) lipgloss.TerminalColor {
		c := th.Get(t)
		return lipgloss.CompleteColor{TrueColor: c.TrueColor, ANSI256: c.ANSI256, ANSI: c.ANSI16}
	}
	mk := func(st lipgloss.Style) paint {
		out := st.Render("X")
		i := strings.IndexByte(out, 'X')
		if i < 0 {
			return paint{}
		}
		return paint{pre: out[:i], post: out[i+1:]}
	}
	fg := func(t themes.Token) paint { return mk(r.NewStyle().Foreground(col(t))) }
	badge := func(t themes.Token) paint { return mk(r.NewStyle().Foreground(col(t)).Reverse(true).Bold(true)) }
	s := &styles{
		theme:       th,
		profile:     r.ColorProfile(),
		plain:       r.ColorProfile() == termenv.Ascii,
		text:        fg(themes.Text),
		muted:       fg(themes.Muted),
		accent:      fg(themes.Accent),
		accentBold:  mk(r.NewStyle().Foreground(col(themes.Accent)).Bold(true)),
		title:       mk(r.NewStyle().Foreground(col(themes.Text)).Bold(true)),
		borderFocus: fg(themes.BorderFocus),
		borderBlur:  fg(themes.BorderBlur),
		sel:         mk(r.NewStyle().Foreground(col(themes.SelectionText)).Background(col(themes.Selection)).Bold(true)),
		selMuted:    mk(r.NewStyle().Foreground(col(themes.SelectionText)).Background(col(themes.Selection))),
		errorP:      fg(themes.Error),
		warn:        fg(themes.Warn),
		ok:          fg(themes.OK),
		errorBadge:  badge(themes.Error),
		warnBadge:   badge(themes.Warn),
		okBadge:     badge(themes.OK),
		accBadge:    badge(themes.Accent),
		key:         mk(r.NewStyle().Foreground(col(themes.Accent)).Bold(true)),
		disabled:    mk(r.NewStyle().Foreground(col(themes.Muted)).Strikethrough(true)),
		state: map[rig.SessionState]paint{
			rig.StateLive:    fg(themes.StateLive),
			rig.StateHeld:    fg(themes.StateHeld),
			rig.StateIdle:    fg(themes.StateIdle),
			rig.StateCrashed: fg(themes.StateCrashed),
			rig.StateBroken:  fg(themes.StateBroken),
		},
	}
	s.ev[clsSession] = fg(themes.EventSession)
	s.ev[clsTurn] = fg(themes.EventTurn)
	s.ev[clsOutput] = fg(themes.EventOutput)
	s.ev[clsStderr] = fg(themes.EventStderr)
	s.ev[clsGate] = fg(themes.EventGate)
	s.ev[clsRestore] = fg(themes.EventRestore)
	s.ev[clsError] = fg(themes.EventError)
	s.ev[clsOK] = fg(themes.OK)
	s.ev[clsMuted] = fg(themes.Muted)
	return s
}

// Event line classes.
const (
	clsOutput uint8 = iota
	clsStderr
	clsSession
	clsTurn
	clsGate
	clsRestore
	clsError
	clsOK
	clsMuted
	numClasses
)

// stateGlyph and stateWord show a session state without colour.
func stateGlyph(s rig.SessionState) string {
	switch s {
	case rig.StateLive:
		return "●"
	case rig.StateHeld:
		return "◆"
	case rig.StateIdle:
		return "○"
	case rig.StateCrashed:
		return "✗"
	case rig.StateBroken:
		return "⊘"
	}
	return "?"
}

func stateWord(s rig.SessionState) string {
	if s == "" {
		return "unknown"
	}
	return string(s)
}

// border glyph sets: the focused pane gets a heavy frame, so focus reads
// without colour too.
type frame struct{ tl, tr, bl, br, h, v string }

var (
	frameFocus = frame{"┏", "┓", "┗", "┛", "━", "┃"}
	frameBlur  = frame{"╭", "╮", "╰", "╯", "─", "│"}
)
