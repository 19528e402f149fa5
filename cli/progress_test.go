package cli

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/event"
)

// The progress bar draws on a terminal only, only once the operation ran
// for a second, and clears its line at the end.
func TestProgressBar(t *testing.T) {
	if p := newProgressBar(&bytes.Buffer{}, "x"); p != nil {
		t.Fatal("a progress bar on a pipe")
	}
	m, tty, err := pty.Open()
	if err != nil {
		t.Skip("no pty:", err)
	}
	defer m.Close()
	defer tty.Close()
	p := newProgressBar(tty, "bringing it back")
	if p == nil {
		t.Fatal("no progress bar on a terminal")
	}
	p.update(1, 4) // before a second: nothing
	p.start = time.Now().Add(-2 * time.Second)
	p.update(3<<20, 4<<20)
	p.finish()
	tty.Close()
	out, _ := io.ReadAll(m)
	got := string(out)
	if strings.Contains(got, "25%") || !strings.Contains(got, "bringing it back: 75% (3.0 MiB of 4.0 MiB)") || !strings.HasSuffix(got, "\r\x1b[K") {
		t.Errorf("the terminal got %q", got)
	}
}

// The line of a wait for a checkpoint: on a terminal drawn when it
// changes and cleared at the end; on a pipe printed once.
func TestWaitLine(t *testing.T) {
	report := func(done, files int) host.Progress {
		return host.Progress{Checkpoint: &rig.CheckpointProgress{Trigger: event.TriggerTurn, Files: files, FilesDone: done}}
	}
	var pipe bytes.Buffer
	l := newWaitLine(&pipe)
	l.update(report(0, 0))
	l.update(report(7421, 10000))
	l.finish()
	if got := pipe.String(); got != "looprig: waiting for the checkpoint of the last turn…\n" {
		t.Errorf("on a pipe: %q", got)
	}
	m, tty, err := pty.Open()
	if err != nil {
		t.Skip("no pty:", err)
	}
	defer m.Close()
	defer tty.Close()
	l = newWaitLine(tty)
	l.update(report(7421, 10000))
	l.update(report(7421, 10000)) // unchanged: not drawn again
	l.last = time.Now().Add(-time.Second)
	l.update(report(10000, 10000))
	l.finish()
	tty.Close()
	out, _ := io.ReadAll(m)
	want := "\r\x1b[Klooprig: waiting for the checkpoint of the last turn: 7,421 of 10,000 files…" +
		"\r\x1b[Klooprig: waiting for the checkpoint of the last turn: 10,000 of 10,000 files…\r\x1b[K"
	if string(out) != want {
		t.Errorf("on a terminal: %q\nwant %q", out, want)
	}
}
