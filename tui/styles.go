package tui

import (
	"strconv"
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
	theme themes.Theme
	plain bool // no styling at all (NO_COLOR, Ascii)

	text, muted, accent, accentBold, title paint
	borderFocus, borderBlur                paint
	sel                                    paint // selected row: selection text on selection background
	errorP, warn                           paint
	errorBadge, accBadge                   paint // reversed, bold
	state                                  map[rig.SessionState]paint
	ev                                     [numClasses]paint
	key                                    paint // key names in hints and help
	disabled                               paint
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
		plain:       r.ColorProfile() == termenv.Ascii,
		text:        fg(themes.Text),
		muted:       fg(themes.Muted),
		accent:      fg(themes.Accent),
		accentBold:  mk(r.NewStyle().Foreground(col(themes.Accent)).Bold(true)),
		title:       mk(r.NewStyle().Foreground(col(themes.Text)).Bold(true)),
		borderFocus: fg(themes.BorderFocus),
		borderBlur:  fg(themes.BorderBlur),
		sel:         mk(r.NewStyle().Foreground(col(themes.SelectionText)).Background(col(themes.Selection)).Bold(true)),
		errorP:      fg(themes.Error),
		warn:        fg(themes.Warn),
		errorBadge:  badge(themes.Error),
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

// lineClass is what a line of the events pane (or the status bar's flash)
// says, and so how it is painted.
type lineClass uint8

const (
	clsOutput  lineClass = iota // turn output (stdout)
	clsStderr                   // turn output (stderr)
	clsSession                  // the session's own lifecycle
	clsTurn                     // a turn started
	clsGate                     // a gate opened or was approved
	clsRestore                  // restores, replays, adopted configuration
	clsError                    // failures, faults, lost leases
	clsOK                       // success
	clsMuted                    // everything else
	numClasses
)

func (c lineClass) String() string {
	switch c {
	case clsOutput:
		return "output"
	case clsStderr:
		return "stderr"
	case clsSession:
		return "session"
	case clsTurn:
		return "turn"
	case clsGate:
		return "gate"
	case clsRestore:
		return "restore"
	case clsError:
		return "error"
	case clsOK:
		return "ok"
	case clsMuted:
		return "muted"
	}
	return "lineClass(" + strconv.Itoa(int(c)) + ")"
}

// stateGlyph and stateWord show a session state without colour.
func stateGlyph(s rig.SessionState) string { return s.Glyph() }

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
