package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// keyMap holds every binding; the help screen (helpGroups) and the keys
// that change a session (mutating) are drawn from it, and the status bar's
// hints name the same keys.
//
// The destructive keys X, B and D always go through a dialog (B and D ask
// for the session's short id), and nothing destructive is bound to a bare
// esc or alt: esc only closes dialogs, the help and the input line, clears
// the filter and dismisses banners. I interrupts the running turn as ^C
// does in a terminal (the host sends the turn ^C first); ctrl+c is the
// TUI's own and never reaches a turn, except while f has given the keys
// to a full-screen program (screenfocus.go: ctrl+] gives them back). q
// and ctrl+c detach: the sessions
// keep running in their hosts. q asks first only while a turn runs in an
// attached session (it goes on in the background); ctrl+c never asks.
type keyMap struct {
	Up, Down, Top, Bottom, PageUp, PageDown key.Binding
	Tab, BackTab, Enter                     key.Binding
	New, Restore, Input, Interrupt, Screen  key.Binding
	Approve, Deny, Shutdown, Break, Delete  key.Binding
	Filter, Theme, Help, Quit, ForceQuit    key.Binding
	Dismiss, NeedsMe, RestoreAll, Changes   key.Binding
	Search                                  key.Binding
}

func defaultKeys() keyMap {
	b := func(help, desc string, keys ...string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
	}
	return keyMap{
		Up:         b("↑/k", "move up", "up", "k"),
		Down:       b("↓/j", "move down", "down", "j"),
		Top:        b("g", "go to the top", "g", "home"),
		Bottom:     b("G", "go to the bottom (events: follow)", "G", "end"),
		PageUp:     b("pgup", "page up", "pgup"),
		PageDown:   b("pgdn", "page down", "pgdown"),
		Tab:        b("tab", "next pane", "tab"),
		BackTab:    b("shift+tab", "previous pane", "shift+tab"),
		Enter:      b("enter", "focus the session (its events)", "enter"),
		New:        b("n", "new session", "n"),
		Restore:    b("r", "restore the session, or attach to it", "r"),
		Input:      b("i", "input (to the running turn if any)", "i"),
		Interrupt:  b("I", "interrupt the running turn (as ^C)", "I"),
		Screen:     b("f", "keys to the full-screen program (ctrl+] gives them back)", "f"),
		Approve:    b("a", "approve the open gate", "a"),
		Deny:       b("d", "deny the open gate", "d"),
		Shutdown:   b("X", "shut the session down", "X"),
		Break:      b("B", "break the lease and take over", "B"),
		Delete:     b("D", "delete the session for good", "D"),
		Filter:     b("/", "filter sessions (needs:me: those waiting for you)", "/"),
		Theme:      b("t", "next theme", "t"),
		Help:       b("?", "help", "?"),
		Quit:       b("q", "quit (live sessions keep running)", "q"),
		ForceQuit:  b("ctrl+c", "quit now, without asking", "ctrl+c"),
		Dismiss:    b("esc", "close a dialog, clear the filter, dismiss a banner", "esc"),
		NeedsMe:    b("w", "jump to the next session waiting for you (oldest first)", "w"),
		RestoreAll: b("R", "restore every crashed session", "R"),
		Changes:    b("c", "what the last turn changed in the workspace ([ ] other turns)", "c"),
		Search:     searchKey,
	}
}

// mutating are the bindings that change a session; they are disabled (and
// help says why) for sessions that are read-only.
func (k keyMap) mutating() []key.Binding {
	return []key.Binding{k.Input, k.Interrupt, k.Screen, k.Approve, k.Deny, k.Shutdown}
}

// helpGroups orders the bindings in the help screen.
func (k keyMap) helpGroups() []struct {
	title string
	keys  []key.Binding
} {
	return []struct {
		title string
		keys  []key.Binding
	}{
		{"move", []key.Binding{k.Up, k.Down, k.Top, k.Bottom,
			key.NewBinding(key.WithHelp("pgup/pgdn", "page up / down")),
			key.NewBinding(key.WithHelp("tab/⇧tab", "next / previous pane")), k.Enter}},
		{"sessions", []key.Binding{k.New, k.Restore, k.RestoreAll, k.Break, k.Delete, k.Filter, k.Search, searchStepKey, k.NeedsMe}},
		{"the selected session", []key.Binding{k.Input, k.Interrupt, k.Screen, k.Approve, k.Deny, k.Shutdown, k.Changes}},
		{"the input line", []key.Binding{
			key.NewBinding(key.WithHelp("enter", "submit it, or send it to the turn")),
			key.NewBinding(key.WithHelp("ctrl+d", "end of file to the running turn")),
			key.NewBinding(key.WithHelp("esc", "close the input line"))}},
		{"the TUI", []key.Binding{k.Theme, k.Help, k.Dismiss, k.Quit, k.ForceQuit}},
	}
}

// movement says whether msg moves within the focused pane.
func (k keyMap) movement(msg tea.KeyMsg) bool {
	return key.Matches(msg, k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown)
}
