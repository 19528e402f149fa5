//go:build linux

package procstart

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// This process's stamp is what its /proc entry says, and stays the same; a
// process started later has a later start; a pid with no process is not
// found.
func TestSelfAndAChild(t *testing.T) {
	self := Self()
	if self.Ticks == 0 || self.Boot == "" {
		t.Fatalf("Self() = %+v, want a start and a boot id on Linux", self)
	}
	if _, ticks, err := Of(os.Getpid()); err != nil || ticks != self.Ticks {
		t.Fatalf("Of(self) = %d, %v; Self().Ticks = %d", ticks, err, self.Ticks)
	}
	if len(self.Boot) != 36 {
		t.Errorf("boot id %q, want a UUID's text", self.Boot)
	}
	time.Sleep(30 * time.Millisecond) // three ticks of USER_HZ
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	state, ticks, err := Of(pid)
	if err != nil {
		t.Fatal(err)
	}
	if ticks <= self.Ticks {
		t.Errorf("a child started after this process: start %d, this process's %d", ticks, self.Ticks)
	}
	if state != 'S' && state != 'R' {
		t.Errorf("a sleeping child's state %q", state)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if _, _, err := Of(pid); !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ESRCH) {
		t.Errorf("Of(a reaped child) = %v, want not found", err)
	}
}

func TestParseStat(t *testing.T) {
	tail := " 1 1 1 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 4242 1000 10"
	for _, c := range []struct {
		line  string
		state byte
		ticks uint64
		ok    bool
	}{
		{"123 (sh) S" + tail, 'S', 4242, true},
		{"123 (a) (b) c) T" + tail, 'T', 4242, true}, // comm with parentheses and spaces
		{"123 (x) Z" + tail + " more fields", 'Z', 4242, true},
		{"123 (sh) S 1 1", 0, 0, false},  // short
		{"123 sh S" + tail, 0, 0, false}, // no ')'
		{"123 (sh)", 0, 0, false},
		{"123 (sh) SS" + tail, 0, 0, false},                                          // state not one letter
		{"123 (sh) S 1 1 1 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 -5", 0, 0, false}, // negative start
		{"", 0, 0, false},
	} {
		state, ticks, err := parseStat([]byte(c.line))
		if (err == nil) != c.ok || state != c.state || ticks != c.ticks {
			t.Errorf("parseStat(%q) = %q, %d, %v; want %q, %d, ok %v", c.line, state, ticks, err, c.state, c.ticks, c.ok)
		}
	}
}
