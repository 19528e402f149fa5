package cli_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ptyScreen collects what a terminal receives.
type ptyScreen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *ptyScreen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *ptyScreen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func (s *ptyScreen) waitFor(t *testing.T, sub string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(s.String(), sub); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %q:\n%s", sub, s.String())
		}
	}
}

// run in a terminal is the turn's terminal: a line typed goes to the turn,
// a password typed at an echo-off prompt is not echoed by our terminal
// either (and journaled as hidden), and the turn gets our window size.
// Through a host and in process alike.
func TestRunForwardsTerminalInput(t *testing.T) {
	for _, hosted := range []bool{false, true} {
		name := "in process"
		if hosted {
			name = "through a host"
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			id := h.newSession()
			if hosted {
				id, _ = h.detached()
			}
			m, tty, err := pty.Open()
			if err != nil {
				t.Skipf("no pseudo-terminals here: %v", err)
			}
			defer m.Close()
			if err := pty.Setsize(m, &pty.Winsize{Cols: 97, Rows: 33}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			args := []string{"run", id, "--", `stty size; read name; echo "got $name"; stty -echo; echo "password:"; read pw; stty echo; echo "len ${#pw}"`}
			if !hosted {
				args = append([]string{"run", "--in-process"}, args[1:]...)
			}
			cmd := h.command(ctx, args...)
			cmd.Stdin, cmd.Stdout = tty, tty
			var errb syncBuffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			tty.Close()
			var screen ptyScreen
			go io.Copy(&screen, m)
			screen.waitFor(t, "33 97")
			m.Write([]byte("frank\n"))
			screen.waitFor(t, "got frank")
			screen.waitFor(t, "password:")
			time.Sleep(600 * time.Millisecond) // our terminal follows the turn's echo every 150 ms
			m.Write([]byte("hunter22\n"))
			screen.waitFor(t, "len 8")
			if err := cmd.Wait(); err != nil {
				t.Fatalf("run: %v\nstderr: %s", err, errb.String())
			}
			if strings.Contains(screen.String(), "hunter22") {
				t.Errorf("the password was echoed on the terminal:\n%s", screen.String())
			}
			for _, rec := range h.log(id) {
				if strings.Contains(rec.Text, "hunter22") {
					t.Errorf("the password is in the journal: %+v", rec)
				}
			}
		})
	}
}
