//go:build linux || darwin

package engine

// Tests of the platform process pieces (proc_linux.go, proc_darwin.go) and
// a smoke test of the shell engine, written to run on both platforms (CI
// runs them on Linux; on Darwin they are compiled only).

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// startGroup starts /bin/sh -c script as the leader of a new process group
// and returns it; its pid is the group's id.
func startGroup(t *testing.T, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd
}

// waitExitWithin runs waitExit(pid), failing the test if it takes longer
// than d.
func waitExitWithin(t *testing.T, pid int, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		waitExit(pid)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("waitExit(%d) still waiting after %v", pid, d)
	}
}

// waitExit returns once the leader exited, without reaping it; the zombie
// leader does not count as alive.
func TestWaitExitDoesNotReap(t *testing.T) {
	cmd := startGroup(t, "sleep 0.3; exit 3")
	pgid := cmd.Process.Pid
	if !groupAlive(pgid) {
		t.Fatal("a running group is not alive")
	}
	start := time.Now()
	waitExitWithin(t, pgid, 10*time.Second)
	if el := time.Since(start); el < 200*time.Millisecond {
		t.Fatalf("waitExit returned after %v, before the leader exited", el)
	}
	if groupAlive(pgid) {
		t.Fatal("a group whose only member is a zombie is alive")
	}
	// Still unreaped: Wait gets its status.
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("Wait after waitExit = %v, want exit status 3", err)
	}
	// A process that exited before the call.
	cmd2 := startGroup(t, "exit 0")
	time.Sleep(200 * time.Millisecond)
	waitExitWithin(t, cmd2.Process.Pid, 10*time.Second)
}

// A member left behind by the leader keeps the group alive until it is
// killed.
func TestGroupAliveFollowsMembers(t *testing.T) {
	cmd := startGroup(t, "sleep 30 & exit 0")
	pgid := cmd.Process.Pid
	waitExitWithin(t, pgid, 10*time.Second)
	if !groupAlive(pgid) {
		t.Fatal("group with a live background member is not alive")
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(pgid)
	if groupAlive(pgid) {
		t.Fatal("group still alive after SIGKILL")
	}
}

// The shell engine runs a turn on pipes and on a pty.
func TestShellSmoke(t *testing.T) {
	for _, noTTY := range []bool{true, false} {
		sink := newSink()
		turn := Turn{SessionID: "s-1", LoopID: "l-1", ID: "t-1", Input: `echo "hello $LOOPRIG_TURN"; exit 4`, Dir: t.TempDir(), Env: []string{"LOOPRIG_TURN=t-1"}}
		r := await(t, runAsync(context.Background(), NewShell(Config{NoTTY: noTTY}), turn, sink), 60*time.Second)
		sink.check(t)
		if r.err != nil || r.res.ExitCode != 4 {
			t.Fatalf("NoTTY=%v: Run = %+v, %v", noTTY, r.res, r.err)
		}
		if got := sink.text(Stdout); got != "hello t-1\n" && got != "hello t-1\r\n" {
			t.Fatalf("NoTTY=%v: stdout %q", noTTY, got)
		}
	}
}

// TestPendingOutput: drain keeps reading an output while bytes wait in it
// or while no writer is left (its end still to be read), and stops reading
// one that a live writer holds with nothing in it. The second case is the
// one FIONREAD alone answered "nothing": a turn's last bytes, still in a
// pty's flip buffer on a loaded machine, were cut.
func TestPendingOutput(t *testing.T) {
	t.Parallel()
	master, slave, err := openPTY()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	if pending(master) {
		t.Error("pty, slave open, nothing written: pending")
	}
	if _, err := slave.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	waitPending(t, master, "pty, a byte written")
	buf := make([]byte, 8)
	if n, err := master.Read(buf); n != 1 || err != nil {
		t.Fatalf("read %d, %v", n, err)
	}
	if pending(master) {
		t.Error("pty, the byte read, slave open: pending")
	}
	_ = slave.Close()
	waitPending(t, master, "pty, slave closed, its EIO unread")

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if pending(r) {
		t.Error("pipe, writer open, empty: pending")
	}
	_ = w.Close()
	if !pending(r) {
		t.Error("pipe, writer closed, its EOF unread: not pending")
	}
}

// waitPending fails the test unless pending(f) turns true within 5 s: a
// pty's bytes reach its master through a kernel worker.
func waitPending(t *testing.T, f *os.File, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !pending(f); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not pending", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
