//go:build linux || darwin

package cli_test

import (
	"bytes"
	"context"
	"errors"
	"io"
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
