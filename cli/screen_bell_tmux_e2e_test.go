package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"looprig/internal/tmuxtest"
)

// A full-screen program that rings the bell in the middle of its screen
// and goes on drawing: under run and under attach, the Attention the bell
// is journaled as comes between its frames, and the pane keeps the
// program's screen throughout: our terminal never leaves its alternate
// screen (tmux's pipe-pane log of everything written to the pane has one
// switch to it and none back until q), later frames arrive, and keys
// still reach the program.
func TestTmuxFullScreenBell(t *testing.T) {
	if testing.Short() {
		t.Skip("tmux end-to-end tests are slow; skipped with -short")
	}
	for _, mode := range []string{"run", "attach"} {
		t.Run(mode, func(t *testing.T) {
			needBash(t)
			fs := fullscreen(t)
			srv := tmuxtest.New(t)
			h := newHarness(t)
			id := decode[newShellJSON](t, h.mustShell(0, "/bin/bash", "new", "--detach", "--json").stdout).ID
			h.stopWhenDone(id)
			log := filepath.Join(t.TempDir(), "pane.log")

			if mode == "run" {
				looprigPiped(h, srv, "p", 100, 30, log, fmt.Sprintf("run %s -- %q -nobell", id, fs))
			} else {
				looprigPane(h, srv, "p", 100, 30, "attach "+id)
				srv.Run("pipe-pane", "-t", "p", "-o", "cat >> "+log)
				srv.WaitFor("p", screenWait, "looprig "+id[:8]+" ›")
				srv.Type("p", fs+" -nobell")
				srv.Send("p", "Enter")
			}
			srv.WaitFor("p", screenWait, "bottom row: q leaves", "size 100x30")
			srv.Type("p", "abc")
			srv.WaitFor("p", screenWait, "typed: abc")
			srv.Send("p", "C-g") // the program rings, mid-screen, and draws "bells: 1"
			srv.WaitFor("p", screenWait, "bells: 1", "typed: abc")
			recs := h.waitLog(id, "Attention")
			if mode == "attach" {
				h.waitLog(id, "AttentionSeen") // attach showed it: the host was told
			}
			for _, r := range recs {
				if r.Type == "TurnDone" || r.Type == "TurnFailed" {
					t.Fatalf("the turn ended before its screen did: %+v", recs)
				}
			}

			// Later frames, and keys, after the Attention.
			srv.Type("p", "def")
			srv.Send("p", "Enter")
			s := srv.WaitFor("p", screenWait, "submitted: abcdef", "FULLSCREEN TEST", "bells: 1", "bottom row: q leaves")
			if alt := srv.Display("p", "#{alternate_on}"); alt != "1" {
				t.Errorf("the pane left the program's screen (alternate_on %s):\n%s", alt, s)
			}
			time.Sleep(200 * time.Millisecond) // pipe-pane's cat writes
			b, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			// One switch to the alternate screen and none back: the
			// Attention between two frames did not take the screen away,
			// even for a moment.
			if in, out := strings.Count(string(b), "\x1b[?1049h"), strings.Count(string(b), "\x1b[?1049l"); in != 1 || out != 0 {
				t.Errorf("the pane was switched to the alternate screen %d times and back %d times, want once and never:\n%q", in, out, b)
			}
			if strings.Contains(string(b), "\a") {
				t.Errorf("the program's bell reached the pane:\n%q", b)
			}

			srv.Send("p", "q")
			if mode == "run" {
				srv.WaitFor("p", screenWait, `fullscreen: left; submitted ["abcdef"]`, "[exit 0]")
			} else {
				srv.WaitFor("p", screenWait, `fullscreen: left; submitted ["abcdef"]`, "TurnDone")
				srv.Send("p", "C-]")
				srv.WaitFor("p", screenWait, "[exit 0]")
			}
			saneTerminal(t, srv, "p")
		})
	}
}
