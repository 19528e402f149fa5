// Package themes holds looprig's colour themes: semantic tokens (text,
// muted, accent, borders, selection, one per session state, one per event
// class, error/warn/ok), each with a truecolor, a 256-colour and a
// 16-colour value, so a theme looks intended on every terminal. It ships
// built-in themes, loads user themes from TOML files, looks themes up by
// name, remembers the user's choice in a small file and honours NO_COLOR.
//
// The package is pure data: it knows nothing of lipgloss or terminals. The
// TUI turns a Color into the escape sequence the terminal's colour profile
// supports.
package themes

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Token names one semantic colour.
type Token string

// The tokens every theme defines.
const (
	Text          Token = "text"           // ordinary text
	Muted         Token = "muted"          // secondary text: timestamps, hints, labels
	Accent        Token = "accent"         // titles, key names, the focused pane's title
	BorderFocus   Token = "border_focus"   // border of the focused pane
	BorderBlur    Token = "border_blur"    // border of the other panes
	Selection     Token = "selection"      // background of the selected row
	SelectionText Token = "selection_text" // text on the selection background
	StateLive     Token = "state_live"     // session held by this process
	StateHeld     Token = "state_held"     // session held by another process
	StateIdle     Token = "state_idle"     // session shut down cleanly
	StateCrashed  Token = "state_crashed"  // no holder, not shut down
	StateBroken   Token = "state_broken"   // records cannot be trusted
	EventSession  Token = "event_session"  // session lifecycle events
	EventTurn     Token = "event_turn"     // turn start and end
	EventOutput   Token = "event_output"   // turn output (stdout)
	EventStderr   Token = "event_stderr"   // turn output (stderr)
	EventGate     Token = "event_gate"     // gates opened and resolved
	EventRestore  Token = "event_restore"  // restore and configuration events
	EventError    Token = "event_error"    // failures, faults, lost subscriptions
	Error         Token = "error"          // error badges and banners
	Warn          Token = "warn"           // warnings, drift
	OK            Token = "ok"             // success
)

// Tokens lists every token, in a stable order.
var Tokens = []Token{
	Text, Muted, Accent, BorderFocus, BorderBlur, Selection, SelectionText,
	StateLive, StateHeld, StateIdle, StateCrashed, StateBroken,
	EventSession, EventTurn, EventOutput, EventStderr, EventGate, EventRestore, EventError,
	Error, Warn, OK,
}

// Color is one token's value at the three colour depths terminals have:
// TrueColor is "#rrggbb" (or an ANSI index, for themes that follow the
// terminal's palette), ANSI256 an index 0-255, ANSI16 an index 0-15.
type Color struct {
	TrueColor string `toml:"truecolor" json:"truecolor"`
	ANSI256   string `toml:"ansi256" json:"ansi256"`
	ANSI16    string `toml:"ansi16" json:"ansi16"`
}

// Theme is a named set of token colours.
type Theme struct {
	Name string
	// Dark says the theme is made for a dark background.
	Dark   bool
	Colors map[Token]Color
	// Source is where the theme came from: "built-in" or a file path.
	Source string
}

// Get returns the colour of token t (the zero Color when undefined).
func (t Theme) Get(tok Token) Color { return t.Colors[tok] }

var (
	hexRe  = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)
	nameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,39}$`)
)

func index(s string, maxIdx int) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && n <= maxIdx && strconv.Itoa(n) == s
}

// Validate checks that every token is defined with three valid values.
func (t Theme) Validate() error {
	if !nameRe.MatchString(t.Name) {
		return fmt.Errorf("theme name %q: want lowercase letters, digits, '-', '_' or '.', at most 40", t.Name)
	}
	var problems []string
	for _, tok := range Tokens {
		c, ok := t.Colors[tok]
		if !ok {
			problems = append(problems, string(tok)+": missing")
			continue
		}
		if !hexRe.MatchString(c.TrueColor) && !index(c.TrueColor, 255) {
			problems = append(problems, fmt.Sprintf("%s: truecolor %q is not #rrggbb", tok, c.TrueColor))
		}
		if !index(c.ANSI256, 255) {
			problems = append(problems, fmt.Sprintf("%s: ansi256 %q is not 0-255", tok, c.ANSI256))
		}
		if !index(c.ANSI16, 15) {
			problems = append(problems, fmt.Sprintf("%s: ansi16 %q is not 0-15", tok, c.ANSI16))
		}
	}
	for tok := range t.Colors {
		if !known(tok) {
			problems = append(problems, string(tok)+": unknown token")
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("theme %q: %s", t.Name, strings.Join(problems, "; "))
	}
	return nil
}

func known(tok Token) bool {
	for _, k := range Tokens {
		if k == tok {
			return true
		}
	}
	return false
}

// Default is the name of the theme used when nothing else is chosen.
const Default = "dark"

// UnknownThemeError is returned by Lookup for a name no theme has.
type UnknownThemeError struct {
	Name  string
	Known []string
}

func (e *UnknownThemeError) Error() string {
	return fmt.Sprintf("unknown theme %q (known: %s)", e.Name, strings.Join(e.Known, ", "))
}

// Set is an ordered collection of themes: the built-ins, then user themes
// in name order. A user theme with a built-in's name replaces it.
type Set struct {
	themes []Theme
}

// NewSet returns the built-ins followed by user.
func NewSet(user ...Theme) *Set {
	s := &Set{themes: Builtins()}
	for _, u := range user {
		replaced := false
		for i := range s.themes {
			if s.themes[i].Name == u.Name {
				s.themes[i] = u
				replaced = true
			}
		}
		if !replaced {
			s.themes = append(s.themes, u)
		}
	}
	return s
}

// Names lists the themes' names in order.
func (s *Set) Names() []string {
	out := make([]string, len(s.themes))
	for i, t := range s.themes {
		out[i] = t.Name
	}
	return out
}

// Lookup returns the theme called name, or *UnknownThemeError listing the
// known names.
func (s *Set) Lookup(name string) (Theme, error) {
	for _, t := range s.themes {
		if t.Name == name {
			return t, nil
		}
	}
	return Theme{}, &UnknownThemeError{Name: name, Known: s.Names()}
}

// Next returns the theme after name, wrapping around (the first theme for
// an unknown name).
func (s *Set) Next(name string) Theme {
	for i, t := range s.themes {
		if t.Name == name {
			return s.themes[(i+1)%len(s.themes)]
		}
	}
	return s.themes[0]
}

// Lookup finds name among the built-ins.
func Lookup(name string) (Theme, error) { return NewSet().Lookup(name) }

// NoColor reports whether the NO_COLOR convention asks for no colour: the
// variable is set to a non-empty value (https://no-color.org).
func NoColor() bool { return os.Getenv("NO_COLOR") != "" }
