//go:build linux || darwin

package cli_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// killHostOf SIGKILLs the host that serves session id (its pid from ls
// --json) and waits until it is gone: a crash of the process that runs the
// session. It returns the host's pid.
func (h *harness) killHostOf(id string) int {
	h.t.Helper()
	row := h.row(id)
	if row.State != "live" || row.Holder == nil || row.Holder.PID <= 0 {
		h.t.Fatalf("session %s is %s, want live in a host to kill", id, row.State)
	}
	pid := row.Holder.PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		h.t.Fatalf("kill the host %d of %s: %v", pid, id, err)
	}
	waitExit(h.t, pid)
	return pid
}

// An SSH connection that drops while `looprig run ID -- TURN` runs a turn
// of a session no host served: run is the session leader of a terminal
// whose master end closes (the kernel hangs the terminal up and sends
// SIGHUP to run), and what is left of the login is killed. The turn runs
// on to its end in the host run started for the session, which stays
// live there: nothing is lost, nothing is crashed.
func TestRunSurvivesHangup(t *testing.T) {
	h := newHarness(t)
	id := h.newSession() // idle: no host serves it
	file := filepath.Join(t.TempDir(), "ticks")
	const ticks = 6
	turn := fmt.Sprintf(`for i in $(seq %d); do echo "tick $i"; echo $i >> %s; sleep 0.5; done`, ticks, file)

	m, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := h.command(ctx, "run", id, "--", turn)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0} // its terminal's controlling process, as a login shell is
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var screen ptyScreen
	go io.Copy(&screen, m)
	screen.waitFor(t, "tick 1")

	// The connection drops.
	m.Close()
	cmd.Process.Signal(syscall.SIGHUP)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		t.Logf("run ended on the hangup: %v", err)
	case <-time.After(3 * time.Second):
		cmd.Process.Signal(syscall.SIGKILL)
		t.Logf("run was killed 3s after the hangup: %v", <-exited)
	}
	if !strings.Contains(screen.String(), "started for this run: it stays live after the turn") {
		t.Errorf("run did not say that the session stays live in the host it started:\n%s", screen.String())
	}

	// The turn ends by itself, in the host.
	var recs []record
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		recs = h.log(id)
		if slices.ContainsFunc(recs, func(r record) bool {
			return strings.HasPrefix(r.Type, "Turn") && r.Type != "TurnStarted" && r.Type != "TurnOutput"
		}) {
			break
		}
		if row := h.row(id); row.State != "live" {
			t.Fatalf("after the hangup the session is %s, want live in its host; journal %v", row.State, types(recs))
		}
		if time.Now().After(deadline) {
			t.Fatalf("the turn did not end within 30s of the hangup; journal %v", types(recs))
		}
	}
	var end record
	for _, r := range recs {
		switch r.Type {
		case "TurnDone", "TurnFailed", "TurnInterrupted":
			end = r
		}
	}
	if end.Type != "TurnDone" || end.ExitCode == nil || *end.ExitCode != 0 {
		t.Fatalf("the turn ended with %+v, want TurnDone exit 0; journal %v", end, types(recs))
	}
	var want strings.Builder
	for i := 1; i <= ticks; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != want.String() {
		t.Fatalf("the turn's file holds %q (%v), want %q", b, err, want.String())
	}
	row := h.row(id)
	if row.State != "live" || row.Holder == nil || row.Holder.PID == cmd.Process.Pid || !alive(row.Holder.PID) {
		t.Fatalf("after the turn: %+v, want live in the host run started", row)
	}
	if slices.Contains(types(afterLastFence(recs)), "SessionStopped") {
		t.Fatalf("the session stopped in its host: %v", types(recs))
	}
}
