package tui

import (
	"testing"

	"looprig/rig/event"
)

// bindingKeys are the keys the list view binds to something that acts:
// typed into a dialog, the input line or the filter, none may act.
const bindingKeys = "nrRiIfadXBDtqwc?/"

// Keys never fall through: with each dialog, the input line or the
// filter open, every key bound to an action in the list view is typed in
// turn. Each must stay in what is open: the surface stays open, no
// session gets busy, nothing is created, the theme does not change and
// the TUI does not quit. (The changes view's own keys are its own: c, u,
// F, [ and ] are left out of its row.)
func TestKeysNeverFallThrough(t *testing.T) {
	type surface struct {
		name string
		open func(m Model)
		keys string
		// still says whether what was opened is still open.
		still func(m Model) bool
	}
	dialogOpen := func(m Model) bool { return m.dialog != nil }
	withDialog := func(d func(m Model) dialog) func(m Model) {
		return func(m Model) { m.dialog = d(m) }
	}
	sel := func(m Model) *sessView { return m.list.selected() }
	surfaces := []surface{
		{"create", withDialog(func(m Model) dialog { return newCreateDialog(m.h.profileChoices(), "/home/dev/src/p") }), bindingKeys, dialogOpen},
		{"shut down", withDialog(func(m Model) dialog { return newShutdownDialog(sel(m)) }), bindingKeys, dialogOpen},
		{"quit", withDialog(func(Model) dialog { return newQuitDialog(1) }), bindingKeys, dialogOpen},
		{"revert", withDialog(func(m Model) dialog { return newRevertDialog(sel(m), 0) }), bindingKeys, dialogOpen},
		{"fork", withDialog(func(m Model) dialog { return newForkDialog(sel(m), 0) }), bindingKeys, dialogOpen},
		{"break", withDialog(func(m Model) dialog { return newBreakDialog(sel(m)) }), bindingKeys, dialogOpen},
		{"delete", withDialog(func(m Model) dialog { return newDeleteDialog(sel(m), m.h.opts.Workspaces) }), bindingKeys, dialogOpen},
		{"drift", withDialog(func(m Model) dialog {
			return newDriftDialog(sel(m), []event.Change{{Field: "engine", Persisted: "shell", Live: "demo", Level: event.LevelWarn}})
		}), bindingKeys, dialogOpen},
		{"input line", func(m Model) { m.Update(keyMsg("i")) }, bindingKeys, func(m Model) bool { return m.input != nil }},
		{"filter", func(m Model) { m.Update(keyMsg("/")) }, bindingKeys, func(m Model) bool { return m.list.filterActive }},
		{"changes view", func(m Model) { m.changes, _ = openChanges(m.h, sel(m)) }, "nrRiIfadXBDtqw?/", func(m Model) bool { return m.changes != nil }},
	}
	for _, s := range surfaces {
		t.Run(s.name, func(t *testing.T) {
			m := fakeModel(t, 120, 40, asciiRenderer())
			m.send(listMsg{infos: mixedList()})
			m.list.selectID(fakeID(1), m.listSpace())
			theme := m.st.theme.Name
			s.open(m)
			if !s.still(m) {
				t.Fatalf("%s did not open:\n%s", s.name, m.View())
			}
			for _, k := range s.keys {
				m.Update(keyMsg(string(k)))
				switch {
				case !s.still(m):
					t.Fatalf("%q closed the %s", k, s.name)
				case m.quitting != "":
					t.Fatalf("%q quit the TUI from the %s", k, s.name)
				case m.creating != 0:
					t.Fatalf("%q created a session from the %s", k, s.name)
				case m.st.theme.Name != theme:
					t.Fatalf("%q changed the theme from the %s", k, s.name)
				case m.help != nil:
					t.Fatalf("%q opened the help from the %s", k, s.name)
				}
				for _, v := range m.sessions {
					if v.busy != notBusy {
						t.Fatalf("%q made %s busy (%s) from the %s", k, v.short, v.busy, s.name)
					}
				}
			}
		})
	}
}

// Keys that arrive in one read come as one message ("/needs:me"): each is
// routed as if typed alone, so "/" opens the filter and the rest fills it.
func TestKeysReadTogether(t *testing.T) {
	m := fakeModel(t, 120, 40, asciiRenderer())
	m.send(listMsg{infos: mixedList()})
	m.Update(keyMsg("/needs:me"))
	m.Update(keyMsg("enter"))
	if m.list.filter != needsFilter || m.list.filterActive {
		t.Fatalf("after \"/needs:me\" and enter: filter %q (open %v), want %q applied:\n%s", m.list.filter, m.list.filterActive, needsFilter, m.View())
	}
	if m.focus != paneList {
		t.Errorf("enter closed the filter and also moved the focus to pane %d", m.focus)
	}
}
