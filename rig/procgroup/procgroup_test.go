//go:build linux || darwin

package procgroup

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// startGroup starts /bin/sh -c script as the leader of a new process
// group with env added to its environment, and returns the group's id.
// The test's cleanup kills and reaps it.
func startGroup(t *testing.T, script string, env ...string) (int, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd.Process.Pid, cmd
}

func TestThisMachineIsHere(t *testing.T) {
	m := This()
	if m.Host == "" || m.Boot == "" || m.Boot == UnknownBoot {
		t.Fatalf("This() = %+v, want a host and a known boot", m)
	}
	if !m.Here() {
		t.Fatalf("%+v is not here", m)
	}
	for _, other := range []Machine{{m.Host, "another-boot"}, {m.Host + "-other", m.Boot}, {m.Host, UnknownBoot}, {}} {
		if other.Here() {
			t.Errorf("%+v is here", other)
		}
	}
}

func TestInspect(t *testing.T) {
	marks := []string{"LOOPRIG_SESSION=s-1", "LOOPRIG_TURN=t-1"}
	pgid, _ := startGroup(t, "sleep 30", marks...)
	cases := []struct {
		marks []string
		want  Status
	}{
		{marks, Marked},
		{marks[:1], Marked},
		{[]string{"LOOPRIG_SESSION=s-1", "LOOPRIG_TURN=t-2"}, Unmarked},
		{nil, Unmarked},
	}
	for _, c := range cases {
		if st, err := Inspect(Group{PGID: pgid, Marks: c.marks}); err != nil || st != c.want {
			t.Errorf("Inspect(%d, %q) = %v, %v; want %v", pgid, c.marks, st, err, c.want)
		}
	}
	// A member that is not the leader carries the marks too: the leader
	// exits, its child goes on (and the leader stays a zombie: unreaped).
	pgid2, _ := startGroup(t, "sleep 30 & exit 0", marks...)
	time.Sleep(200 * time.Millisecond)
	if st, err := Inspect(Group{PGID: pgid2, Marks: marks}); err != nil || st != Marked {
		t.Errorf("Inspect of a group whose leader exited = %v, %v; want marked", st, err)
	}
}

// Stop ends a marked group, SIGKILLs one that ignores SIGTERM after the
// grace, and leaves an unmarked one alone.
func TestStop(t *testing.T) {
	marks := []string{"LOOPRIG_TURN=t-1"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	pgid, cmd := startGroup(t, "sleep 30", marks...)
	got, err := Stop(ctx, Group{PGID: pgid, Marks: marks}, 5*time.Second)
	if err != nil || got != (Stopped{Found: Marked, Terminated: true, Gone: true}) {
		t.Fatalf("Stop = %+v, %v", got, err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the stopped group's leader exited 0")
	}

	deaf, _ := startGroup(t, "trap '' TERM; while :; do sleep 0.05; done", marks...)
	time.Sleep(100 * time.Millisecond) // the trap is set
	start := time.Now()
	got, err = Stop(ctx, Group{PGID: deaf, Marks: marks}, 300*time.Millisecond)
	if err != nil || got != (Stopped{Found: Marked, Terminated: true, Killed: true, Gone: true}) {
		t.Fatalf("Stop of a group ignoring SIGTERM = %+v, %v", got, err)
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Errorf("SIGKILL came after %s, before the grace", el)
	}

	stopped, _ := startGroup(t, "sleep 30", marks...)
	if err := syscall.Kill(-stopped, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if got, err = Stop(ctx, Group{PGID: stopped, Marks: marks}, 5*time.Second); err != nil || !got.Gone || got.Killed {
		t.Fatalf("Stop of a stopped group = %+v, %v; want it gone on SIGTERM", got, err)
	}

	other, _ := startGroup(t, "sleep 30", "LOOPRIG_TURN=t-2")
	if got, err = Stop(ctx, Group{PGID: other, Marks: marks}, 5*time.Second); err != nil || got != (Stopped{Found: Unmarked}) {
		t.Fatalf("Stop of an unmarked group = %+v, %v; want it left alone", got, err)
	}
	if st, _ := Inspect(Group{PGID: other, Marks: []string{"LOOPRIG_TURN=t-2"}}); st != Marked {
		t.Fatalf("the unmarked group is %v after Stop, want it running", st)
	}
	if got, err = Stop(ctx, Group{PGID: pgid, Marks: marks}, time.Second); err != nil || got != (Stopped{Found: Gone, Gone: true}) {
		t.Fatalf("Stop of a gone group = %+v, %v", got, err)
	}
}

// A live process is not dead; a killed one (dying, then a zombie not yet
// reaped) and a reaped one (no such process) are.
func TestDead(t *testing.T) {
	if gone, err := Dead(os.Getpid()); err != nil || gone {
		t.Fatalf("Dead(this process) = %v, %v", gone, err)
	}
	pid, cmd := startGroup(t, "sleep 30")
	if gone, err := Dead(pid); err != nil || gone {
		t.Fatalf("Dead(a sleeping child) = %v, %v", gone, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		gone, err := Dead(pid)
		if err != nil {
			t.Fatal(err)
		}
		if gone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a killed child not yet reaped is not taken for exited")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if syscall.Kill(pid, 0) != nil {
		t.Fatal("the killed child was reaped already: it should be a zombie until Wait")
	}
	cmd.Wait()
	if gone, err := Dead(pid); err != nil || !gone {
		t.Fatalf("Dead(a reaped child) = %v, %v", gone, err)
	}
	if gone, _ := Dead(0); gone {
		t.Fatal("Dead(0) is true")
	}
}
