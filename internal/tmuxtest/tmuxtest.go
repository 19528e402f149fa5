// Package tmuxtest runs programs in a private tmux server, for the tests
// that drive the real binary in a real terminal: sessions of a fixed
// size, keys sent as a person types them, the screen read back. The
// server has a socket of its own and no configuration file, and is
// killed when the test ends.
package tmuxtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Server is one private tmux server.
type Server struct {
	tb     testing.TB
	socket string
}

var servers atomic.Int64

// New starts using a private tmux server (tmux starts it with the first
// session), skipping tb where tmux is not installed. It is killed at the
// end of tb.
func New(tb testing.TB) *Server {
	tb.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		tb.Skip("tmux is not installed (.ci/run installs it)")
	}
	s := &Server{tb: tb, socket: fmt.Sprintf("looprig-test-%d-%d", os.Getpid(), servers.Add(1))}
	tb.Cleanup(s.Kill)
	return s
}

// Socket is the server's socket name (tmux -L).
func (s *Server) Socket() string { return s.socket }

// Command is a tmux command on this server, to be run by the caller (a
// control-mode client, say).
func (s *Server) Command(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "tmux", append([]string{"-L", s.socket, "-f", "/dev/null"}, args...)...)
}

// Try runs a tmux command and returns its output and error.
func (s *Server) Try(args ...string) ([]byte, error) {
	return s.Command(context.Background(), args...).CombinedOutput()
}

// Run runs a tmux command; a failure fails the test.
func (s *Server) Run(args ...string) string {
	s.tb.Helper()
	out, err := s.Try(args...)
	if err != nil {
		s.tb.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Start makes a detached session name of width × height running argv.
func (s *Server) Start(name string, width, height int, argv ...string) {
	s.tb.Helper()
	s.Run(append([]string{"new-session", "-d", "-s", name, "-x", fmt.Sprint(width), "-y", fmt.Sprint(height)}, argv...)...)
}

// Respawn kills what runs in session name's pane and runs argv there.
func (s *Server) Respawn(name string, argv ...string) {
	s.tb.Helper()
	s.Run(append([]string{"respawn-pane", "-k", "-t", name}, argv...)...)
}

// Screen is what session name's pane shows.
func (s *Server) Screen(name string) string {
	s.tb.Helper()
	return s.Run("capture-pane", "-p", "-t", name)
}

// Send sends keys by tmux's names ("Enter", "C-c", "Right").
func (s *Server) Send(name string, keys ...string) {
	s.tb.Helper()
	s.Run(append([]string{"send-keys", "-t", name}, keys...)...)
}

// Type types text literally.
func (s *Server) Type(name, text string) {
	s.tb.Helper()
	s.Run("send-keys", "-t", name, "-l", text)
}

// Display is tmux's display-message -p of format for session name
// ("#{pane_pid}", "#{pane_tty}"), trimmed.
func (s *Server) Display(name, format string) string {
	s.tb.Helper()
	return strings.TrimSpace(s.Run("display-message", "-p", "-t", name, format))
}

// WaitFor polls session name's screen until every string in subs shows,
// and returns it; past timeout it fails the test with the screen.
func (s *Server) WaitFor(name string, timeout time.Duration, subs ...string) string {
	s.tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		screen := s.Screen(name)
		if containsAll(screen, subs) {
			return screen
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("%s: timed out after %s waiting for %q; screen:\n%s", name, timeout, subs, screen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Kill kills the server and everything in it (as a dropped connection
// would: the programs get SIGHUP).
func (s *Server) Kill() {
	exec.Command("tmux", "-L", s.socket, "kill-server").Run()
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
