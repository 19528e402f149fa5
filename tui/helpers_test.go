package tui

import (
	"flag"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"looprig/internal/testbin"
	"looprig/rig"
	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

func TestMain(m *testing.M) {
	time.Local = time.UTC
	flag.Parse()
	cleanup, err := runtimeDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, "runtime dir:", err)
		os.Exit(1)
	}
	code := m.Run()
	cleanup()
	testbin.Cleanup()
	os.Exit(code)
}

var fixedNow = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

func fixedClock() time.Time { return fixedNow }

// asciiRenderer renders without any styling (goldens, hostile input).
func asciiRenderer() *lipgloss.Renderer {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	return r
}

// colorRenderer renders with truecolor (benchmarks, styling checks).
func colorRenderer() *lipgloss.Renderer {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.TrueColor)
	r.SetHasDarkBackground(true)
	return r
}

// fakeModel is a model fed messages directly: no store I/O happens (the
// commands it returns are dropped).
func fakeModel(t testing.TB, w, h int, r *lipgloss.Renderer) Model {
	t.Helper()
	m := newModel(Options{
		Store:      memstore.New(),
		StoreDir:   "/home/dev/.local/state/looprig",
		Workspaces: "/home/dev/.local/state/looprig/workspaces",
		Now:        fixedClock,
		ConfigDir:  "",
	}, r)
	m.send(tea.WindowSizeMsg{Width: w, Height: h})
	return m
}

// send folds msg into m, dropping the commands.
func (m Model) send(msg tea.Msg) Model {
	m.Update(msg)
	return m
}

func (m Model) keys(ks ...string) Model {
	for _, k := range ks {
		m.Update(keyMsg(k))
	}
	return m
}

// keyMsg is the key named k as Bubble Tea names keys ("enter", "pgdown",
// "ctrl+]"); anything else is typed text, and several runes are keys read
// together.
func keyMsg(k string) tea.KeyMsg {
	if t, ok := keyTypes[k]; ok {
		return tea.KeyMsg{Type: t}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

// keyTypes are Bubble Tea's key types by name.
var keyTypes = func() map[string]tea.KeyType {
	m := map[string]tea.KeyType{}
	for t := tea.KeyType(-100); t < 128; t++ {
		if t == tea.KeyRunes || t == tea.KeySpace {
			continue
		}
		if name := (tea.KeyMsg{Type: t}).String(); name != "" {
			if _, dup := m[name]; !dup {
				m[name] = t
			}
		}
	}
	return m
}()

func fakeID(n int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", 0xa0000000+n, n) }

// mixedList is a listing with one session in every state.
func mixedList() []rig.SessionInfo {
	at := func(min int) time.Time { return fixedNow.Add(-time.Duration(min) * time.Minute) }
	h := func(pid int, host string) *storage.Holder { return &storage.Holder{PID: pid, Host: host} }
	return []rig.SessionInfo{
		{ID: fakeID(1), State: rig.StateLive, Title: "build the docs", Profile: "default", Engine: "shell", Epoch: 3, Holder: h(4242, "devbox"), LastSeq: 57, Turns: 2, Created: at(50), Updated: at(1)},
		{ID: fakeID(2), State: rig.StateHeld, Title: "nightly import", Profile: "default", Engine: "shell", Epoch: 7, Holder: h(5150, "devbox"), OpenTurn: "t1", Turn: 4, LastSeq: 912, Turns: 5, Created: at(120), Updated: at(0)},
		{ID: fakeID(3), State: rig.StateIdle, Title: "release notes", Profile: "demo", Engine: "demo", Epoch: 2, LastSeq: 31, Turns: 1, Created: at(240), Updated: at(200)},
		{ID: fakeID(4), State: rig.StateCrashed, Title: "count to sixty", Profile: "default", Engine: "shell", Epoch: 1, OpenTurn: "t2", Turn: 0, LastSeq: 40, Turns: 1, Created: at(360), Updated: at(300)},
		{ID: fakeID(5), State: rig.StateBroken, Reason: "replay_failed: journal record 12 does not decode", Title: "mystery", Profile: "default", Engine: "shell", Epoch: 4, LastSeq: 12, Created: at(3000), Updated: at(2900)},
	}
}

// withManySessions lists n fake sessions.
func withManySessions(m Model, n int) Model {
	states := []rig.SessionState{rig.StateHeld, rig.StateIdle, rig.StateCrashed, rig.StateBroken, rig.StateLive}
	infos := make([]rig.SessionInfo, n)
	for i := range infos {
		infos[i] = rig.SessionInfo{ID: fakeID(1000 + i), State: states[i%len(states)], Title: fmt.Sprintf("session number %d", i),
			Profile: "default", Engine: "shell", Epoch: uint64(i%9 + 1), LastSeq: uint64(i * 3),
			Created: fixedNow.Add(-time.Duration(i) * time.Minute), Updated: fixedNow.Add(-time.Duration(i) * time.Second)}
		if infos[i].State == rig.StateHeld {
			infos[i].Holder = &storage.Holder{PID: 1000 + i, Host: "devbox"}
		}
	}
	return m.send(listMsg{infos: infos})
}

func memstoreNew() *memstore.Store { return memstore.New() }
