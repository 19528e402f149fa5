package cli_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"looprig/internal/tmuxtest"
)

// The README's password prompt, typed by a person into `looprig run` in a
// real terminal (tmux): with SHELL=/bin/bash the turn runs in bash, so
// `read -s -p` works (dash, /bin/sh on Debian, refuses -s and ends the
// turn at once). The secret is answered with the terminal's echo off, the
// turn prints its length, and it is nowhere in the store, the home or the
// runtime directory (hosts' logs), nor on the screen.
func TestTmuxRunBashPasswordPrompt(t *testing.T) {
	if testing.Short() {
		t.Skip("tmux end-to-end tests are slow; skipped with -short")
	}
	needBash(t)
	srv := tmuxtest.New(t)
	h := newHarness(t)
	id := decode[newShellJSON](t, h.mustShell(0, "/bin/bash", "new", "--json").stdout).ID
	h.stopWhenDone(id)

	const secret = "hunter22-s3cret"
	input := `read -s -p "password: " p; echo got ${#p}`
	env := fmt.Sprintf("SHELL=/bin/bash HOME=%q XDG_CONFIG_HOME=%q XDG_STATE_HOME=%q XDG_RUNTIME_DIR=%q LOOPRIG_STORE= TERM=xterm-256color",
		h.home, filepath.Join(h.home, "config"), filepath.Join(h.home, "state"), h.runtime)
	quoted := "'" + strings.ReplaceAll(input, "'", `'\''`) + "'" // for the pane's sh: no expansion
	line := fmt.Sprintf("env %s %q --store %q run %s -- %s; echo \"[exit $?]\"; exec sleep 3600", env, binary, h.store, id, quoted)
	srv.Start("pw", 120, 30, "/bin/sh", "-c", line)

	screen := func() string { return srv.Screen("pw") }
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; screen:\n%s", what, screen())
			}
		}
	}
	// The turn's terminal has its echo off at the prompt, and run turns the
	// pane's off too: type only then, as a person reading the prompt would.
	// (run prints a line once it is complete, so the prompt shows with the
	// answer.)
	h.waitState(id, "live") // run started a host for the session
	c := h.dialHost(id)
	waitFor("the turn's terminal to turn its echo off", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		st, err := c.Status(ctx)
		return err == nil && st.Terminal && st.EchoOff
	})
	tty := srv.Display("pw", "#{pane_tty}")
	waitFor("the pane's echo to go off", func() bool {
		out, err := exec.Command("stty", "-a", "-F", tty).Output()
		return err == nil && strings.Contains(" "+string(out), " -echo ")
	})
	srv.Type("pw", secret)
	srv.Send("pw", "Enter")
	waitFor("the turn's answer", func() bool { return strings.Contains(screen(), "[exit 0]") })

	s := screen()
	if !strings.Contains(s, fmt.Sprintf("password: got %d", len(secret))) {
		t.Errorf("the turn did not print its prompt and got %d:\n%s", len(secret), s)
	}
	if strings.Contains(s, secret) {
		t.Errorf("the secret shows on the screen:\n%s", s)
	}
	human := h.must(0, "log", id).stdout
	if !strings.Contains(human, fmt.Sprintf("hidden input, %d bytes", len(secret)+1)) {
		t.Errorf("log does not record the hidden input:\n%s", human)
	}
	for _, dir := range []string{h.store, h.home, h.runtime} {
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), secret) {
				t.Errorf("the secret is in %s", path)
			}
			return nil
		})
	}
}
