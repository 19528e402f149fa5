//go:build linux || darwin

package cli_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// Commands other than the TUI never ask the terminal anything: on a
// terminal that never answers (a pseudo-terminal nobody reads queries
// from), `version` and `ls` write no OSC 11 background query and no
// cursor position request, and end at once. (Bubble Tea v1's package init
// asked, through Lip Gloss, and waited 5 s for an answer; see
// internal/termquiet.)
func TestCommandsDoNotQueryTheTerminal(t *testing.T) {
	h := newHarness(t)
	for _, args := range [][]string{{"version"}, {"ls"}, {"ls", "--json"}} {
		master, tty, err := pty.Open()
		if err != nil {
			t.Skipf("no pseudo-terminals here: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := h.command(ctx, args...)
		// A terminal termenv would query: not tmux or screen, not CI.
		cmd.Env = append(cmd.Env, "TERM=xterm-256color", "CI=")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0} // the foreground of its own terminal
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		tty.Close()
		var out bytes.Buffer
		_, err = io.Copy(&out, master) // until the command and its terminal are gone (EIO)
		if err != nil && !errors.Is(err, syscall.EIO) {
			t.Fatal(err)
		}
		werr := cmd.Wait()
		cancel()
		master.Close()
		if werr != nil {
			t.Errorf("looprig %s: %v\n%q", strings.Join(args, " "), werr, out.String())
		}
		for _, q := range []string{"\x1b]11;?", "\x1b[6n"} {
			if strings.Contains(out.String(), q) {
				t.Errorf("looprig %s asked the terminal %q: %q", strings.Join(args, " "), q, out.String())
			}
		}
	}
}

// An unknown --theme is refused before the terminal UI starts, and
// before anything asks the terminal a question: the error names the
// theme and the ones there are, and comes at once (a query nobody
// answers would hold it for 5 s).
func TestUnknownThemeDoesNotQueryTheTerminal(t *testing.T) {
	h := newHarness(t)
	master, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer master.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := h.command(ctx, "--theme", "bogus")
	cmd.Env = append(cmd.Env, "TERM=xterm-256color", "CI=")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var out bytes.Buffer
	if _, err := io.Copy(&out, master); err != nil && !errors.Is(err, syscall.EIO) {
		t.Fatal(err)
	}
	werr := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(werr, &exit) || exit.ExitCode() != 1 {
		t.Errorf("looprig --theme bogus: %v, want exit 1\n%q", werr, out.String())
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("looprig --theme bogus took %s", d)
	}
	for _, q := range []string{"\x1b]11;?", "\x1b]10;?", "\x1b[6n", "\x1b[c", "\x1b[?u", "\x1b[?1049h"} {
		if strings.Contains(out.String(), q) {
			t.Errorf("looprig --theme bogus wrote %q to the terminal: %q", q, out.String())
		}
	}
	for _, want := range []string{`unknown theme "bogus"`, "known: ", "dark", "light"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("looprig --theme bogus says %q, want it to name %q", out.String(), want)
		}
	}
}
