//go:build linux

package host

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"looprig/internal/procstart"
	"looprig/rig"
	"looprig/rig/storage"
)

// holderProc is a real process standing for a lease holder, serving the
// socket of session "s" in dir as a host does: it took the lease
// (Acquired) after it started, then made the socket.
type holderProc struct {
	cmd    *exec.Cmd
	holder storage.Holder
	dir    string
}

func startHolder(t *testing.T) *holderProc {
	t.Helper()
	dir, err := os.MkdirTemp("", "lv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a process: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
	})
	time.Sleep(20 * time.Millisecond) // its start time is before the grant
	_, started, err := procstart.Of(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	p := &holderProc{cmd: cmd, dir: dir, holder: storage.Holder{PID: cmd.Process.Pid, Host: "here", Acquired: time.Now(),
		Started: started, Boot: procstart.Boot()}}
	p.listen(t)
	return p
}

// listen makes the session's socket (as the holder would, after the
// grant).
func (p *holderProc) listen(t *testing.T) {
	t.Helper()
	path, err := SocketPath(p.dir, "s")
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	t.Cleanup(func() { ln.Close() })
}

func (p *holderProc) liveness() rig.Liveness {
	return HolderLiveness(context.Background(), p.dir, "s", p.holder)
}

// waitState waits until process pid's state letter is want.
func waitState(t *testing.T, pid int, want byte) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.LastIndexByte(b, ')'); i > 0 && i+2 < len(b) && b[i+2] == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d never reached state %c: %s", pid, want, b)
		}
	}
}

// A holder that runs and serves is live; stopped (SIGSTOP) it is not
// answering, not live; SIGCONT makes it live again; killed and not yet
// reaped (a zombie) it is not live and the lock table decides; reaped, it
// is gone.
func TestHolderLivenessOfARealProcess(t *testing.T) {
	p := startHolder(t)
	if l := p.liveness(); l != rig.LivenessServing {
		t.Fatalf("a running holder serving its socket: %v, want serving", l)
	}
	pid := p.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitState(t, pid, 'T')
	if l := p.liveness(); l != rig.LivenessStopped {
		t.Errorf("a stopped holder: %v, want stopped", l)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitState(t, pid, 'S')
	if l := p.liveness(); l != rig.LivenessServing {
		t.Errorf("a holder continued: %v, want serving", l)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitState(t, pid, 'Z') // killed, not reaped: a zombie
	if l := p.liveness(); l != rig.LivenessUnknown {
		t.Errorf("a zombie holder: %v, want unknown (its other threads may hold the lock yet: the lock table says)", l)
	}
	p.cmd.Wait()
	if l := p.liveness(); l != rig.LivenessGone {
		t.Errorf("a holder gone: %v, want gone", l)
	}
}

// A pid whose process has another start than the lease's record names, or
// counts from another boot, is not the holder; with the record's start
// the wall clock does not matter (one stepped forward since the grant); a
// record without a start (an older looprig's) judged by the wall clock
// leaves a process younger than the lease to the lock table; a socket
// older than the grant is an earlier holder's; a holder without a socket
// does not serve.
func TestHolderLivenessGuards(t *testing.T) {
	p := startHolder(t)
	reused := p.holder
	reused.Started++ // the holder's pid, now another process's
	if l := HolderLiveness(context.Background(), p.dir, "s", reused); l != rig.LivenessGone {
		t.Errorf("a pid reused by a process of another start: %v, want gone", l)
	}
	rebooted := p.holder
	rebooted.Boot = "00000000-0000-0000-0000-000000000000"
	if l := HolderLiveness(context.Background(), p.dir, "s", rebooted); l != rig.LivenessGone {
		t.Errorf("a holder of another boot: %v, want gone", l)
	}
	stepped := p.holder
	stepped.Acquired = time.Now().Add(-time.Minute) // the wall clock moved on a minute since the grant
	if l := HolderLiveness(context.Background(), p.dir, "s", stepped); l != rig.LivenessServing {
		t.Errorf("the holder, its lease granted a minute before its start by the wall clock: %v, want serving", l)
	}
	older := stepped
	older.Started, older.Boot = 0, "" // a record of a looprig from before starts were recorded
	if l := HolderLiveness(context.Background(), p.dir, "s", older); l != rig.LivenessUnknown {
		t.Errorf("a record without a start, the process younger than the lease: %v, want unknown (the lock table says)", l)
	}
	later := p.holder
	later.Acquired = time.Now().Add(time.Minute) // the socket predates this grant
	if l := HolderLiveness(context.Background(), p.dir, "s", later); l != rig.LivenessUnknown {
		t.Errorf("a socket older than the grant: %v, want unknown (not live)", l)
	}
	if l := HolderLiveness(context.Background(), p.dir, "other", p.holder); l != rig.LivenessUnknown {
		t.Errorf("a holder without a socket: %v, want unknown (not live)", l)
	}
	if l := HolderLiveness(context.Background(), p.dir, "s", storage.Holder{}); l != rig.LivenessUnknown {
		t.Errorf("no holder: %v, want unknown", l)
	}
}
