package tui

import (
	"os"
	"path/filepath"
	"testing"

	"looprig/rig"
	"looprig/rig/storage/memstore"
)

// s searches every line of every session as the query is typed: a
// coloured output line is found by its text (and the command that printed
// it), grouped under its session;
// enter selects that session and focuses its events; / still filters the
// list (needs:me included), and esc closes the search.
func TestFlowSearch(t *testing.T) {
	st := memstore.New()
	opts := flowOptions(t, st)
	opts.SearchDir = filepath.Join(t.TempDir(), "search")
	f := startFlow(t, st, opts)
	f.waitView("no sessions yet")
	f.typeText("n")
	f.waitView("New session")
	f.key("enter")
	f.selectedLive()
	f.typeText("i")
	f.typeText(`printf 'first \033[1;31mcrimson\033[0m tide\n'; seq 1 200`)
	f.key("enter")
	f.waitView("turn 0 done: exit 0")
	// Another session, idle, selected: enter must move the selection.
	other, err := testRig(t, st, opts).NewSession(t.Context(), rig.WithTitle("elsewhere"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Submit(t.Context(), "echo other session"); err != nil {
		t.Fatal(err)
	}
	if err := other.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := other.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	otherID := other.SessionID().String()
	f.waitModel("the other session listed", func(m Model) bool { return m.sessions[otherID] != nil })
	for _, k := range []string{"g", "G"} {
		f.key(k)
		sel := ""
		f.inspect(func(m Model) { sel = m.list.selected().id })
		if sel == otherID {
			break
		}
	}
	f.inspect(func(m Model) {
		if m.list.selected().id != otherID {
			t.Fatal("the other session could not be selected")
		}
	})
	var target string
	f.typeText("s")
	f.waitView("Search", "search: ")
	f.typeText("crimson tide")
	f.waitView("2 hits in 1 session", "#0 command  printf 'first", "#0 output  first crimson tide")
	f.inspect(func(m Model) { target = m.search.rows[m.search.cursor].id })
	if fi, err := os.Stat(filepath.Join(opts.SearchDir, "index.db")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the index: %v %v", fi, err)
	}
	f.typeText(" nowhere-at-all")
	f.waitView("no line matches")
	for range len(" nowhere-at-all") {
		f.key("backspace")
	}
	f.waitView("2 hits in 1 session")
	// A query with more than searchFirst hits (seq's lines with a 1 in
	// them, and its command): the first ones, then the whole answer.
	for range len("crimson tide") {
		f.key("backspace")
	}
	f.typeText("1")
	f.waitModel("the whole answer to 1", func(m Model) bool {
		return m.search.shown == "1" && !m.search.following && !m.search.searching && m.search.hits > searchFirst
	})
	f.key("backspace")
	f.typeText("crimson tide")
	f.waitView("2 hits in 1 session")
	f.key("down") // the output line
	f.key("enter")
	f.waitModel("the hit's session selected, its events focused and scrolled back to the line", func(m Model) bool {
		v := m.list.selected()
		return m.search == nil && v != nil && v.id == target && m.focus == paneEvents && m.jump == nil &&
			!v.transcript.follow && v.transcript.scroll >= 200
	})
	f.waitView("first crimson tide")

	// / is the list's filter, as it was.
	f.typeText("/")
	f.waitModel("the filter line", func(m Model) bool { return m.list.filterActive && m.search == nil })
	f.typeText(needsFilter)
	f.key("enter")
	f.waitModel("the needs:me filter", func(m Model) bool { return m.list.filter == needsFilter })
	f.key("esc")
	f.typeText("s")
	f.waitView("search: ")
	f.key("esc")
	f.waitModel("the search view to close", func(m Model) bool { return m.search == nil })
	f.quit()
}
