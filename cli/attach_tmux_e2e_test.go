package cli_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"looprig/internal/tmuxtest"
)

// attachPane starts `looprig attach ID` in tmux session name of h's
// store and home, with SHELL=/bin/bash; "[exit N]" shows when it ends.
func attachPane(h *harness, srv *tmuxtest.Server, name, id string, width, height int) {
	h.t.Helper()
	env := fmt.Sprintf("SHELL=/bin/bash HOME=%q XDG_CONFIG_HOME=%q XDG_STATE_HOME=%q XDG_RUNTIME_DIR=%q LOOPRIG_STORE= TERM=xterm-256color",
		h.home, filepath.Join(h.home, "config"), filepath.Join(h.home, "state"), h.runtime)
	line := fmt.Sprintf("env %s %q --store %q attach %s; echo \"[exit $?]\"; exec sleep 3600", env, binary, h.store, id)
	srv.Start(name, width, height, "/bin/sh", "-c", line)
}

// attach in a terminal is the session's terminal, for two clients at
// once: both see a prompt without a newline, a line typed in one goes to
// the turn and both see the turn's echo of it; a password typed with the
// turn's echo off shows on neither; between turns both show the prompt,
// and a line typed at it starts a turn; the window size is the last
// resized client's; Ctrl-C interrupts the running turn and Ctrl-]
// detaches, the session going on.
func TestTmuxAttachIsTheTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("tmux end-to-end tests are slow; skipped with -short")
	}
	needBash(t)
	srv := tmuxtest.New(t)
	h := newHarness(t)
	id := decode[newShellJSON](t, h.mustShell(0, "/bin/bash", "new", "--json").stdout).ID
	h.stopWhenDone(id)
	short := id[:8]
	const secret = "hunter22-s3cret"
	h.mustShell(0, "/bin/bash", "run", id, "--detach", "--", `read -p "name? " n; echo "hi $n"; read -s -p "pw: " p; echo; echo "len ${#p}"`)

	attachPane(h, srv, "a", id, 160, 30)
	attachPane(h, srv, "b", id, 160, 30)
	const wait = 30 * time.Second
	for _, p := range []string{"a", "b"} {
		srv.WaitFor(p, wait, "Ctrl-] detaches", "name? ")
	}
	srv.Type("a", "bob")
	srv.Send("a", "Enter")
	for _, p := range []string{"a", "b"} {
		srv.WaitFor(p, wait, "name? bob\n", "hi bob\n", "pw: ")
	}
	h.waitTerminal(id, true)
	tty := srv.Display("b", "#{pane_tty}")
	waitUntil(t, "b's echo to go off", func() bool {
		out, err := exec.Command("stty", "-a", "-F", tty).Output()
		return err == nil && strings.Contains(" "+string(out), " -echo ")
	})
	srv.Type("b", secret)
	srv.Send("b", "Enter")
	prompt := "looprig " + short + " ›"
	for _, p := range []string{"a", "b"} {
		s := srv.WaitFor(p, wait, fmt.Sprintf("len %d\n", len(secret)), "TurnDone", prompt)
		if strings.Contains(s, secret) {
			t.Errorf("%s shows the secret:\n%s", p, s)
		}
	}

	// Between turns: a line typed at b's prompt starts a turn, which
	// both follow; it runs in a window of b's size, once b was resized.
	srv.Run("resize-window", "-t", "b", "-x", "91", "-y", "27")
	time.Sleep(300 * time.Millisecond) // SIGWINCH reaches attach
	srv.Type("b", "echo from-b; stty size")
	srv.Send("b", "Enter")
	for _, p := range []string{"a", "b"} {
		srv.WaitFor(p, wait, "turn 1: echo from-b", "from-b\n", "27 91\n")
	}
	// Ctrl-C interrupts a running turn; the attachment goes on.
	waitUntil(t, "the prompt after turn 1", func() bool { return strings.Count(srv.Screen("a"), prompt) == 2 })
	srv.Type("a", "sleep 120")
	srv.Send("a", "Enter")
	srv.WaitFor("b", wait, "turn 2: sleep 120")
	srv.Send("a", "C-c")
	for _, p := range []string{"a", "b"} {
		srv.WaitFor(p, wait, "TurnInterrupted")
	}
	if s := srv.Screen("a"); !strings.Contains(s, "interrupting turn 2") || strings.Contains(s, "[exit") {
		t.Errorf("a did not interrupt the turn and stay attached:\n%s", s)
	}
	// Ctrl-] detaches, the session going on.
	srv.Send("a", "C-]")
	srv.WaitFor("a", wait, "detached; session "+short+" keeps running", "[exit 0]")
	if st := h.row(id).State; st != "live" {
		t.Errorf("the session is %s after a detach, not live", st)
	}
	if s := srv.Screen("b"); strings.Contains(s, "[exit") {
		t.Errorf("b ended with a's detach:\n%s", s)
	}
}

// attach, when the session's host dies, says so as run does: the host is
// lost, the session crashed, and how to restore it.
func TestTmuxAttachHostLost(t *testing.T) {
	if testing.Short() {
		t.Skip("tmux end-to-end tests are slow; skipped with -short")
	}
	srv := tmuxtest.New(t)
	h := newHarness(t)
	id, pid := h.detached()
	attachPane(h, srv, "a", id, 160, 30)
	srv.WaitFor("a", 30*time.Second, "Ctrl-] detaches", "looprig "+id[:8]+" ›")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s := srv.WaitFor("a", 30*time.Second, "[exit")
	for _, want := range []string{"lost the host of session " + id[:8], "the session is now crashed", "restore", "[exit 1]"} {
		if !strings.Contains(strings.ReplaceAll(s, "\n", ""), want) {
			t.Errorf("attach's screen lacks %q:\n%s", want, s)
		}
	}
}
