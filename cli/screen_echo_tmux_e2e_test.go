package cli_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"looprig/internal/tmuxtest"
)

// The echo of a key typed to a full-screen program through attach is
// drawn at once, however soon after the screen's last change it comes:
// frames are coalesced for output that goes on (screen_term.go), not for
// what answers a key. attach runs with frames at most every 20 s and a
// quiet spell of 20 s (LOOPRIG_E2E_SCREEN_FRAMES): a change drawn only
// when the frame timer fires would take that long; each key's echo must
// show within echoWait. Keys typed one after the other without waiting
// (two sends, the second before the first's echo may be back) each get
// their echo drawn too.
func TestTmuxAttachKeyEchoAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("tmux end-to-end tests are slow; skipped with -short")
	}
	needBash(t)
	const echoWait = 5 * time.Second
	fs := fullscreen(t)
	srv := tmuxtest.New(t)
	h := newHarness(t)
	id := decode[newShellJSON](t, h.mustShell(0, "/bin/bash", "new", "--detach", "--json").stdout).ID
	h.stopWhenDone(id)
	h.mustShell(0, "/bin/bash", "run", id, "--detach", "--", fs, "-nobell")

	env := fmt.Sprintf("LOOPRIG_E2E_SCREEN_FRAMES=20s SHELL=/bin/bash HOME=%q XDG_CONFIG_HOME=%q XDG_STATE_HOME=%q XDG_RUNTIME_DIR=%q LOOPRIG_STORE= TERM=xterm-256color",
		h.home, filepath.Join(h.home, "config"), filepath.Join(h.home, "state"), h.runtime)
	// The turn's terminal is 120×40 (no attach sized it): a pane of that
	// size sends the program no SIGWINCH, whose redraw would be a change
	// of its own.
	srv.Start("a", 120, 40, "/bin/sh", "-c", fmt.Sprintf("env %s %q --store %q attach %s; echo \"[exit $?]\"; exec sleep 3600", env, binary, h.store, id))
	srv.WaitFor("a", screenWait, "bottom row: q leaves") // (up to 20 s, if the program's frame came in parts)

	typed := ""
	for _, k := range []string{"a", "b", "c"} {
		srv.Type("a", k)
		typed += k
		srv.WaitFor("a", echoWait, "typed: "+typed+"\n")
	}
	srv.Type("a", "d")
	srv.Type("a", "e")
	srv.WaitFor("a", echoWait, "typed: abcde\n")
	srv.Send("a", "Enter")
	srv.WaitFor("a", echoWait, "submitted: abcde\n")

	srv.Send("a", "C-]")
	srv.WaitFor("a", screenWait, "detached; session "+id[:8]+" keeps running", "[exit 0]")
	saneTerminal(t, srv, "a")
}
