package tui

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestTmuxSearch: the search flow through the real binary in tmux. s
// opens the search view; a query typed shows its hits grouped under their
// sessions; enter opens the hit's session with the hit's line highlighted
// in its events; n and N step to the next and previous hit there.
func TestTmuxSearch(t *testing.T) {
	looprig := binary(t)
	e := newTmux(t, looprig)
	cli := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(looprig, append([]string{"--store", e.store}, args...)...)
		cmd.Dir = e.project
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("looprig %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	session := func(title, command string) {
		var res struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal([]byte(cli("new", "--json", "--title", title)), &res); err != nil || res.ID == "" {
			t.Fatalf("new --json: %v", err)
		}
		cli("run", "--in-process", res.ID, "--", command)
	}
	// The commands do not hold the word: only their output does.
	session("alpha", `printf 'nee%s-one\n' dle; seq 101 105; printf 'nee%s-two\n' dle`)
	session("beta", `printf 'nee%s-three\n' dle`)

	e.start("search")
	e.started("search")
	e.WaitFor("search", 10*time.Second, "alpha", "beta")
	e.Send("search", "s")
	e.WaitFor("search", 5*time.Second, "search:")
	e.Type("search", "needle")
	s := e.WaitFor("search", 10*time.Second, "3 hits in 2 sessions", "needle-one", "needle-two", "needle-three")
	// Grouped: each session's header, then its hits.
	rows := strings.Split(s, "\n")
	row := func(sub string) int {
		for i, r := range rows {
			if strings.Contains(r, sub) && !strings.Contains(r, "search:") {
				return i
			}
		}
		t.Fatalf("no row holds %q:\n%s", sub, s)
		return -1
	}
	a, one, two, b, three := row(" alpha"), row("needle-one"), row("needle-two"), row(" beta"), row("needle-three")
	if one != a+1 || two != a+2 || three != b+1 {
		t.Fatalf("hits not grouped under their sessions (alpha %d: %d %d; beta %d: %d):\n%s", a, one, two, b, three, s)
	}
	if b < a {
		e.Send("search", "Down") // the cursor starts on the first hit: beta's
	}
	e.Send("search", "Enter")
	e.WaitFor("search", 10*time.Second, "Events", "needle-one", "needle-two", "101")
	hl := func() string {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			s := e.Run("capture-pane", "-p", "-e", "-t", "search")
			style := func(sub string) string {
				for r := range strings.SplitSeq(s, "\n") {
					if i := strings.Index(r, sub); i >= 0 && !strings.Contains(r, "$ ") {
						j := max(strings.LastIndex(r[:i], "│"), strings.LastIndex(r[:i], "┃")) // the events pane's border
						return r[j+1 : i]
					}
				}
				return "?"
			}
			s1, s2 := style("  needle-one"), style("  needle-two")
			if s1 != s2 && s1 != "?" && s2 != "?" {
				// The highlighted one is drawn unlike a plain output line.
				if plain := style("  103"); s1 != plain {
					return "needle-one"
				} else if s2 != plain {
					return "needle-two"
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no hit highlighted in the events:\n%q", s)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if h := hl(); h != "needle-one" {
		t.Fatalf("enter on needle-one highlighted %s", h)
	}
	e.Send("search", "n")
	waitHL := func(want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for hl() != want {
			if time.Now().After(deadline) {
				t.Fatalf("the highlighted hit is %s, want %s:\n%q", hl(), want, e.Run("capture-pane", "-p", "-e", "-t", "search"))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitHL("needle-two")
	e.Send("search", "n")
	e.WaitFor("search", 5*time.Second, "no more hits below")
	e.Send("search", "N")
	waitHL("needle-one")
	// Back in the list, n is a new session again.
	e.Send("search", "Escape")
	e.Send("search", "Tab")
	e.Send("search", "n")
	e.WaitFor("search", 5*time.Second, "New session")
}
