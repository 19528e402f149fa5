package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/charmbracelet/x/ansi"
)

// checkFrame asserts the frame invariants: exactly h lines, none wider
// than w, none narrower either (panes fill the window).
func checkFrame(t testing.TB, view string, w, h int) {
	t.Helper()
	lines := strings.Split(view, "\n")
	if len(lines) != h {
		t.Fatalf("%dx%d: view has %d lines, want %d:\n%s", w, h, len(lines), h, view)
	}
	for i, l := range lines {
		if lw := ansi.StringWidth(l); lw != w {
			t.Fatalf("%dx%d: line %d is %d cells wide, want %d:\n%q", w, h, i, lw, w, ansi.Strip(l))
		}
	}
}

// TestLayoutInvariants renders every scenario over a grid of sizes from
// 20×8 to 240×70: exactly the window's height, no line wider (or
// narrower) than the window, and the selected row on screen.
func TestLayoutInvariants(t *testing.T) {
	var sizes [][2]int
	for w := 20; w <= 240; w += 22 {
		for h := 8; h <= 70; h += 9 {
			sizes = append(sizes, [2]int{w, h})
		}
	}
	sizes = append(sizes, [2]int{39, 9}, [2]int{40, 10}, [2]int{59, 20}, [2]int{60, 14}, [2]int{119, 30}, [2]int{120, 12}, [2]int{240, 70})
	scen := goldenScenarios()
	scen = append(scen, scenario{"many", func(t *testing.T, m Model) Model {
		m = withManySessions(m, 500)
		return m.keys("G", "k", "k")
	}}, scenario{"filtering", func(t *testing.T, m Model) Model {
		return withManySessions(m, 300).keys("/", "1", "2")
	}}, scenario{"input", func(t *testing.T, m Model) Model {
		return withMixedList(t, m).keys("i", "e", "c", "h", "o")
	}}, scenario{"events_focus", func(t *testing.T, m Model) Model {
		return withMixedList(t, m).keys("enter", "k")
	}}, scenario{"detail_focus", func(t *testing.T, m Model) Model {
		return withMixedList(t, m).keys("tab", "tab", "j")
	}})
	for _, sc := range scen {
		for _, sz := range sizes {
			for _, r := range []string{"ascii", "color"} {
				if r == "color" && sz[0]%2 == 1 {
					continue
				}
				rend := asciiRenderer()
				if r == "color" {
					rend = colorRenderer()
				}
				m := fakeModel(t, sz[0], sz[1], rend)
				m = sc.setup(t, m)
				view := m.View()
				checkFrame(t, view, sz[0], sz[1])
				if sz[0] >= minWidth && sz[1] >= minHeight && m.dialog == nil && m.help == nil && m.focus == paneList {
					if v := m.list.selected(); v != nil && !strings.Contains(ansi.Strip(view), "▸ ") {
						t.Fatalf("%s %dx%d: selected row %s not visible:\n%s", sc.name, sz[0], sz[1], v.short, ansi.Strip(view))
					}
				}
			}
		}
	}
}

// TestResizeKeepsSelectionVisible shrinks the window under a selection far
// down a long list.
func TestResizeKeepsSelectionVisible(t *testing.T) {
	m := fakeModel(t, 200, 60, asciiRenderer())
	m = withManySessions(m, 1000)
	m.keys("G")
	for _, sz := range [][2]int{{120, 40}, {80, 20}, {45, 12}, {200, 60}} {
		m.send(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		view := ansi.Strip(m.View())
		if !strings.Contains(view, m.list.selected().short) {
			t.Fatalf("%dx%d: selected %s not on screen:\n%s", sz[0], sz[1], m.list.selected().short, view)
		}
	}
}
