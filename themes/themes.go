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
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// ---- user themes ----------------------------------------------------------------

// Dir is the directory of user theme files inside a config directory.
func Dir(configDir string) string { return filepath.Join(configDir, "themes") }

// maxThemeFile bounds a theme file; a real one is a few KiB.
const maxThemeFile = 256 << 10

// LoadDir loads every *.toml file in dir as a theme. A missing directory is
// no themes and no error. A file that does not load is skipped and its
// error returned among errs (named by path), so one bad file never hides
// the others or the built-ins.
func LoadDir(dir string) (themes []Theme, errs []error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, []error{fmt.Errorf("themes: %w", err)}
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".toml") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		t, err := LoadFile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		themes = append(themes, t)
	}
	sort.Slice(themes, func(i, j int) bool { return themes[i].Name < themes[j].Name })
	return themes, errs
}

// LoadFile loads one theme file. The theme is named by the file ("ocean.toml"
// is "ocean") unless it sets name. Its format:
//
//	name = "ocean"        # optional
//	base = "dark"         # optional: start from a built-in, override some tokens
//	dark = true           # optional; default: the base's, else true
//
//	[colors]
//	accent = { truecolor = "#5fafff", ansi256 = "75", ansi16 = "12" }
//	text   = "#d0d0d0 252 7"   # short form: truecolor, 256, 16
func LoadFile(path string) (Theme, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Theme{}, fmt.Errorf("theme %s: %w", path, err)
	}
	if fi.Size() > maxThemeFile {
		return Theme{}, fmt.Errorf("theme %s: file is %d bytes, over %d", path, fi.Size(), maxThemeFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Theme{}, fmt.Errorf("theme %s: %w", path, err)
	}
	name := strings.TrimSuffix(filepath.Base(path), ".toml")
	t, err := Parse(name, b)
	if err != nil {
		return Theme{}, fmt.Errorf("theme %s: %w", path, err)
	}
	t.Source = path
	return t, nil
}

// Parse parses a theme file's content; name is used when the file sets none.
func Parse(name string, data []byte) (Theme, error) {
	f, err := parseTOML(data)
	if err != nil {
		return Theme{}, err
	}
	if f.Name != "" {
		name = f.Name
	}
	t := Theme{Name: name, Dark: true, Colors: map[Token]Color{}}
	if f.Base != "" {
		base, err := Lookup(f.Base)
		if err != nil {
			return Theme{}, fmt.Errorf("base: %w", err)
		}
		t.Dark = base.Dark
		for k, v := range base.Colors {
			t.Colors[k] = v
		}
	}
	if f.Dark != nil {
		t.Dark = *f.Dark
	}
	for k, v := range f.Colors {
		t.Colors[Token(k)] = v
	}
	if err := t.Validate(); err != nil {
		return Theme{}, err
	}
	return t, nil
}

// ---- the persisted choice -----------------------------------------------------

// choiceFile is the file in the config directory that remembers the theme.
const choiceFile = "theme"

// LoadChoice returns the persisted theme name ("" when none was saved).
func LoadChoice(configDir string) (string, error) {
	if configDir == "" {
		return "", nil
	}
	b, err := os.ReadFile(filepath.Join(configDir, choiceFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return "", err
	}
	name := strings.TrimSpace(string(b))
	if len(name) > 64 || !nameRe.MatchString(name) {
		return "", fmt.Errorf("theme choice in %s is not a theme name", filepath.Join(configDir, choiceFile))
	}
	return name, nil
}

// SaveChoice persists name in configDir (created 0700 if needed), atomically.
func SaveChoice(configDir, name string) error {
	if configDir == "" {
		return nil
	}
	if !nameRe.MatchString(name) {
		return fmt.Errorf("not a theme name: %q", name)
	}
	if err := os.MkdirAll(configDir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(configDir, ".theme-*")
	if err != nil {
		return err
	}
	_, werr := tmp.WriteString(name + "\n")
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return errors.Join(werr, cerr)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(configDir, choiceFile)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
