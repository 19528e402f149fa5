package tui

import (
	"os"
	"path/filepath"
	"testing"

	"looprig/rig"
	"looprig/rig/storage/memstore"
)

// n creates a session in the directory the TUI was started in (the
// dialog's directory field, prefilled), as an exclusive root; shut down
// and restored with r, it works there again, with no drift; an emptied
// field makes a scratch directory instead.
func TestFlowNewInTheStartDirectory(t *testing.T) {
	st := memstore.New()
	opts := flowOptions(t, st)
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	opts.Dir = project
	f := startFlow(t, st, opts)
	f.typeText("n")
	f.waitView("New session", "directory", project)
	f.typeText("here")
	f.key("enter")
	id := f.selectedLive()
	workspace := func() (ws string) {
		f.inspect(func(m Model) { ws = m.sessions[id].live.status.Workspace })
		return ws
	}
	if ws := workspace(); ws != project {
		t.Fatalf("the session works in %s, want %s", ws, project)
	}

	f.typeText("X")
	f.waitView("Shut down session")
	f.key("right")
	f.key("enter")
	f.waitModel("the shutdown", func(m Model) bool { return !m.sessions[id].attached() && !m.busy() })
	f.typeText("r")
	f.selectedLive()
	f.inspect(func(m Model) {
		if m.dialog != nil || m.sessions[id].failed != nil {
			t.Fatalf("the restore asked or failed:\n%s", m.View())
		}
	})
	if ws := workspace(); ws != project {
		t.Fatalf("restored in %s, want %s", ws, project)
	}
	if n := adoptionsIn(t, st, id); n != 0 {
		t.Fatalf("%d ConfigurationAdopted, want none: the restore used the recorded placement", n)
	}

	// Emptied: a scratch directory of its own.
	f.typeText("n")
	f.waitView("New session")
	f.key("down") // title → directory
	for range len([]rune(project)) {
		f.key("backspace")
	}
	f.waitView("empty: a private scratch directory")
	f.key("enter")
	f.waitModel("a second session", func(m Model) bool { return len(m.sessions) == 2 })
	var second string
	f.waitModel("the second session live", func(m Model) bool {
		for sid, v := range m.sessions {
			if sid != id && v.attached() {
				second = v.live.status.Workspace
				return true
			}
		}
		return false
	})
	if second != filepath.Join(opts.Workspaces, filepath.Base(second)) || second == project {
		t.Fatalf("the emptied directory field made %s, want a scratch directory in %s", second, opts.Workspaces)
	}
	f.quit()
}

// Tab in the directory field completes as a shell does: a unique
// directory whole, with a "/"; several to what they share, listed; files
// and hidden directories are not offered; ~ is the home directory.
func TestCompleteDir(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"alpha", "alpine", "beta", ".hidden"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "alps.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sep := string(filepath.Separator)
	for _, c := range []struct {
		typed, to string
		matches   int
	}{
		{filepath.Join(dir, "b"), filepath.Join(dir, "beta") + sep, 0},
		{filepath.Join(dir, "a"), filepath.Join(dir, "alp"), 2},
		{filepath.Join(dir, "z"), filepath.Join(dir, "z"), 0},
		{dir + sep, dir + sep, 3},
		{filepath.Join(dir, ".h"), filepath.Join(dir, ".hidden") + sep, 0},
		{"~", "~/", 0},
	} {
		got := completeDir(c.typed)
		if got.to != c.to || len(got.matches) != c.matches {
			t.Errorf("completeDir(%q) = %q %q; want %q and %d matches", c.typed, got.to, got.matches, c.to, c.matches)
		}
	}
	t.Setenv("HOME", dir)
	if got := completeDir("~/be"); got.to != "~/beta/" {
		t.Errorf("completeDir(~/be) = %q, want ~/beta/", got.to)
	}
	if rig.PlaceNew(rig.DemoProfile(), dir, false).Placement != rig.PlacementSession {
		t.Error("a pinned profile was placed in the directory")
	}
}
