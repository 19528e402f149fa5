package tui

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"looprig/fsstore"
)

// The seen state lives in a directory of its own in a directory store's
// local directory: a save then leaves the store's change stamp where it
// was, so that the TUI (and a search's kept listing) do not list every
// session again after each look. A file where earlier versions kept it is
// read, and removed once the state is saved in its place.
func TestSeenStateKeepsTheStoreStill(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := fsstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	older := filepath.Join(dir, "seen.json")
	if err := os.WriteFile(older, []byte(`{"v":1,"ends":{"`+fakeID(3)+`":"d3"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	m := newModel(Options{Store: st, Now: fixedClock}, asciiRenderer())
	m.send(tea.WindowSizeMsg{Width: 160, Height: 45})
	if m.attn.seen.fresh || !m.attn.seen.seen(fakeID(3), "d3") {
		t.Fatalf("the seen state at the older place was not read: fresh %v, ends %v", m.attn.seen.fresh, m.attn.seen.ends)
	}
	m = attentionList(m)
	saveAll(t, m)
	path := filepath.Join(dir, "tui", "seen.json")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the seen state is not at %s: %v", path, err)
	}
	if _, err := os.Stat(older); !os.IsNotExist(err) {
		t.Errorf("the older file is still there after a save: %v", err)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: mode %v, want 0700", filepath.Dir(path), fi.Mode().Perm())
	}
	// The stamp of a change younger than the file system's time grain is
	// new at each call (fsstore's unsettled stamps): wait until it holds.
	before, err := st.ChangeStamp(t.Context())
	for deadline := time.Now().Add(5 * time.Second); err == nil; {
		again, aerr := st.ChangeStamp(t.Context())
		if err = aerr; again == before || time.Now().After(deadline) {
			break
		}
		before = again
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	m.list.selectID(fakeID(2), m.listSpace())
	saveAll(t, m)
	if !m.attn.seen.seen(fakeID(2), "f2") {
		t.Fatal("the end looked at was not marked seen")
	}
	after, err := st.ChangeStamp(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("saving the seen state moved the store's change stamp: %q -> %q", before, after)
	}
	m2 := newModel(Options{Store: st, Now: fixedClock}, asciiRenderer())
	if !m2.attn.seen.seen(fakeID(2), "f2") {
		t.Errorf("after a restart the seen state lost a look: %v", m2.attn.seen.ends)
	}
}
