package tui

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The SSH-drop scenario: a long turn is running when the terminal goes
// away (tmux kill-server: the TUI gets SIGHUP, as over a dropped SSH
// connection). The turn keeps running and journaling in its host; a new
// TUI shows the session live and its output whole, once; run goes through
// the host; a killed host is a crashed session.
func TestTmuxSSHDrop(t *testing.T) {
	looprig := binary(t)
	e := newTmux(t, looprig)
	e.start("ssh")
	e.started("ssh")
	e.WaitFor("ssh", 10*time.Second, "no sessions yet")
	e.Send("ssh", "n")
	e.WaitFor("ssh", 5*time.Second, "New session")
	e.Type("ssh", "dropped")
	e.Send("ssh", "Enter")
	e.WaitFor("ssh", 10*time.Second, "live", "dropped", "session started")
	e.Send("ssh", "i")
	e.WaitFor("ssh", 15*time.Second, "enter submit")
	e.Type("ssh", "for i in $(seq 30); do echo tick-$i; sleep 0.1; done")
	e.Send("ssh", "Enter")
	e.WaitFor("ssh", 15*time.Second, "tick-2")

	// The connection drops.
	tui := e.tuiPID("ssh")
	e.Kill()
	waitGone(t, tui)
	hostPID := e.hostPID(looprig)
	id := ls(t, looprig, e.store)[0].ID

	// The turn ran to its end in the host, every line journaled once.
	out := waitTurnDone(t, looprig, e.store, id)
	var want strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&want, "tick-%d\n", i)
	}
	if out != want.String() {
		t.Fatalf("journaled output after the drop:\n%q\nwant tick-1…tick-30 once each", out)
	}

	// The next login: the session is live, its output whole and once.
	e.start("again")
	e.started("again")
	e.WaitFor("again", 10*time.Second, "● live", "dropped", "live · pid "+strconv.Itoa(hostPID))
	s := e.WaitFor("again", 15*time.Second, "(attached)", "tick-30", "turn 0 done: exit 0")
	last, seen := -1, 0
	for _, line := range strings.Split(s, "\n") {
		i := strings.Index(line, "tick-")
		if i < 0 {
			continue
		}
		n, err := strconv.Atoi(strings.TrimRight(strings.Fields(line[i+5:])[0], "│ "))
		if err != nil {
			continue
		}
		if last >= 0 && n != last+1 {
			t.Fatalf("reattached output is not contiguous: tick-%d after tick-%d\n%s", n, last, s)
		}
		last = n
		seen++
	}
	if seen < 5 {
		t.Fatalf("the reattached events pane shows %d tick lines, want the tail of the output:\n%s", seen, s)
	}
	e.Send("again", "q")
	e.WaitFor("again", 10*time.Second, "[exit 0]")
	if rows := ls(t, looprig, e.store); len(rows) != 1 || rows[0].State != "live" {
		t.Fatalf("after q: %+v, want the session still live", rows)
	}

	// run goes through the host, which stays.
	cmd := exec.Command(looprig, "--store", e.store, "run", id, "--", "echo via-host")
	b, err := cmd.Output()
	if err != nil || string(b) != "via-host\n" {
		t.Fatalf("run through the host: %q, %v", b, err)
	}
	if rows := ls(t, looprig, e.store); len(rows) != 1 || rows[0].State != "live" || rows[0].Holder.PID != hostPID {
		t.Fatalf("after run: %+v, want live in host %d", rows, hostPID)
	}

	// The host is killed: crashed.
	if err := syscall.Kill(hostPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, hostPID)
	// The leader shows as a zombie while its other threads still exit and
	// hold the lease's descriptor: the kernel drops the flock with the
	// last of them, a moment later.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		rows := ls(t, looprig, e.store)
		if len(rows) == 1 && rows[0].State == "crashed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("5 s after kill -9 of the host: %+v, want crashed", rows)
		}
	}
}

// waitGone waits until pid is gone or a zombie.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
		if err != nil || strings.HasPrefix(strings.TrimSpace(string(b)), "Z") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not exit", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitTurnDone waits for the session's first turn to end and returns its
// journaled output.
func waitTurnDone(t *testing.T, looprig, store, id string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := exec.Command(looprig, "--store", store, "log", id, "--json").Output()
		if err != nil {
			t.Fatalf("looprig log: %v", err)
		}
		var out strings.Builder
		done := false
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if json.Unmarshal([]byte(line), &r) != nil {
				continue
			}
			switch r.Type {
			case "TurnOutput":
				out.WriteString(r.Text)
			case "TurnDone":
				done = true
			}
		}
		if done {
			return out.String()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the turn did not end in its host; output so far %q", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
