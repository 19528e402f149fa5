//go:build linux || darwin

package procgroup

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestLook(t *testing.T) {
	p, err := Look(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if p.PID != os.Getpid() || p.PPID != os.Getppid() || p.PGID != syscall.Getpgrp() || p.Start == 0 {
		t.Errorf("Look(self) = %+v; want pid %d, ppid %d, pgid %d and a start", p, os.Getpid(), os.Getppid(), syscall.Getpgrp())
	}
	again, _ := Look(os.Getpid())
	if again.Start != p.Start {
		t.Errorf("the start of a process changed: %d, then %d", p.Start, again.Start)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := Look(cmd.Process.Pid); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Look of a reaped process = %v, want ErrNoProcess", err)
	}
	// A zombie runs nothing: gone too.
	z := exec.Command("true")
	if err := z.Start(); err != nil {
		t.Fatal(err)
	}
	defer z.Wait()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := Look(z.Process.Pid); errors.Is(err, ErrNoProcess) {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("Look of a zombie = %v, want ErrNoProcess", err)
		}
	}
}

// Inside finds a turn's process by its marks or its ancestors', or by the
// group it stayed in, and nothing else.
func TestInside(t *testing.T) {
	dir := t.TempDir()
	pidFile := func(name string) string { return filepath.Join(dir, name) }
	marks := []string{"LOOPRIG_SESSION=s-1", "LOOPRIG_TURN=t-1"}
	// The group's shell carries the marks; under it: a child that cleared
	// its environment, one that cleared it and left the group (setsid),
	// an orphan (its parent exited) that cleared it and stayed in the
	// group, and an orphan that cleared it and left the group.
	script := `env -i sleep 30 & echo $! > ` + pidFile("child") + `
setsid env -i sleep 30 & echo $! > ` + pidFile("left") + `
(env -i sleep 30 & echo $! > ` + pidFile("orphan") + `)
(setsid env -i sleep 30 & echo $! > ` + pidFile("escaped") + `)
echo $$ > ` + pidFile("shell") + `
wait`
	pgid, _ := startGroup(t, script, marks...)
	read := func(name string) int {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			b, err := os.ReadFile(pidFile(name))
			if n, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && n > 0 {
				return n
			}
			if time.Now().After(deadline) {
				t.Fatalf("no pid in %s", name)
			}
		}
	}
	shell, child, left, orphan, escaped := read("shell"), read("child"), read("left"), read("orphan"), read("escaped")
	t.Cleanup(func() {
		syscall.Kill(escaped, syscall.SIGKILL)
		syscall.Kill(left, syscall.SIGKILL)
	})
	time.Sleep(100 * time.Millisecond) // the exec of env -i sleep
	g := Group{PGID: pgid, Marks: marks}
	for _, c := range []struct {
		name  string
		pid   int
		where Where
		via   int
	}{
		{"the shell", shell, Carries, shell},
		{"a child that cleared its environment", child, InGroup, child},
		{"a child that cleared it and left the group", left, Carries, shell},
		{"an orphan in the group", orphan, InGroup, orphan},
		{"an orphan that left the group", escaped, Outside, 0},
		{"this test", os.Getpid(), Outside, 0},
	} {
		where, via, err := Inside(c.pid, g)
		if err != nil || where != c.where || via != c.via {
			t.Errorf("Inside(%s, pid %d) = %v, %d, %v; want %v, %d", c.name, c.pid, where, via, err, c.where, c.via)
		}
	}
	// Without the group (a turn whose processes have not started), only
	// the marks count.
	if where, _, _ := Inside(orphan, Group{Marks: marks}); where != Outside {
		t.Errorf("Inside(orphan) with no group = %v, want outside", where)
	}
	// Marks of another turn do not match.
	if where, _, _ := Inside(child, Group{PGID: pgid, Marks: []string{"LOOPRIG_SESSION=s-2"}}); where != Outside {
		t.Errorf("Inside(child) with another session's mark = %v, want outside", where)
	}
	if _, _, err := Inside(1<<22+12345, g); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Inside of a pid nobody has = %v, want ErrNoProcess", err)
	}
}
