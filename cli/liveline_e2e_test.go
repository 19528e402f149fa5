//go:build linux || darwin

package cli_test

import (
	"context"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"looprig/internal/termrender"
)

// ptyTurn is looprig run in a terminal: stdin, stdout and stderr on a
// pseudo-terminal, whose screen a virtual terminal draws from what the
// terminal received (looprig's output and the terminal's own echo of what
// is typed).
type ptyTurn struct {
	cmd    *exec.Cmd
	master io.Writer
	got    ptyScreen
}

const ptyCols, ptyRows = 100, 40

func (h *harness) runInPTY(args ...string) *ptyTurn {
	h.t.Helper()
	m, tty, err := pty.Open()
	if err != nil {
		h.t.Skipf("no pseudo-terminals here: %v", err)
	}
	h.t.Cleanup(func() { m.Close() })
	if err := pty.Setsize(m, &pty.Winsize{Cols: ptyCols, Rows: ptyRows}); err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	h.t.Cleanup(cancel)
	r := &ptyTurn{cmd: h.command(ctx, append([]string{"run"}, args...)...), master: m}
	r.cmd.Stdin, r.cmd.Stdout, r.cmd.Stderr = tty, tty, tty
	if err := r.cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	tty.Close()
	go io.Copy(&r.got, m)
	return r
}

// screen is what the terminal shows: its rows, right-trimmed, without
// the empty ones at the bottom.
func (r *ptyTurn) screen() []string {
	emu := termrender.NewScreen(ptyCols, ptyRows)
	emu.WriteString(r.got.String())
	rows := strings.Split(emu.String(), "\n")
	for i := range rows {
		rows[i] = strings.TrimRight(rows[i], " ")
	}
	for len(rows) > 0 && rows[len(rows)-1] == "" {
		rows = rows[:len(rows)-1]
	}
	return rows
}

// waitRow waits until the screen's last row satisfies ok.
func (r *ptyTurn) waitRow(t *testing.T, what string, ok func(string) bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		rows := r.screen()
		if len(rows) > 0 && ok(rows[len(rows)-1]) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %s; it shows:\n%s\nit received: %q", what, strings.Join(rows, "\n"), r.got.String())
		}
	}
}

// once checks that each of want is on exactly one row of rows (a row
// that is it, or starts with it when it ends with "…"), in this order.
func once(t *testing.T, rows []string, want ...string) {
	t.Helper()
	at := -1
	for _, w := range want {
		prefix, isPrefix := strings.CutSuffix(w, "…")
		n, first := 0, -1
		for i, row := range rows {
			if row == w || isPrefix && strings.HasPrefix(row, prefix) {
				n++
				if first < 0 {
					first = i
				}
			}
		}
		if n != 1 || first < at {
			t.Errorf("%q is on %d rows (want 1, after row %d) of the screen:\n%s", w, n, at, strings.Join(rows, "\n"))
			continue
		}
		at = first
	}
}

// run in a terminal shows a line before it is complete: a prompt is on
// the screen before its answer is typed, and when the line completes (the
// answer echoed, more output) it is drawn in place: every line of the
// turn is on the screen once, the last one, which the turn did not end,
// included. Through a host and in process.
func TestRunShowsAPartialLine(t *testing.T) {
	for _, hosted := range []bool{true, false} {
		name := "through a host"
		if !hosted {
			name = "in process"
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			id := h.newSession()
			args := []string{id, "--", `printf 'name? '; read n; echo "hi $n"; printf 'pw: '; stty -echo; read p; stty echo; echo; echo "len ${#p}"; printf abc; sleep 0.3; echo def; printf tail`}
			if hosted {
				id, _ = h.detached()
				args[0] = id
			} else {
				args = append([]string{"--in-process"}, args...)
			}
			r := h.runInPTY(args...)
			r.waitRow(t, `the prompt "name? "`, func(row string) bool { return row == "name?" })
			r.master.Write([]byte("bob\n"))
			r.waitRow(t, `the prompt "pw: "`, func(row string) bool { return row == "pw:" })
			time.Sleep(600 * time.Millisecond) // our terminal follows the turn's echo every 150 ms
			r.master.Write([]byte("s3cret\n"))
			if err := r.cmd.Wait(); err != nil {
				t.Fatalf("run: %v; the terminal received %q", err, r.got.String())
			}
			rows := r.screen()
			once(t, rows, "name? bob", "hi bob", "pw:", "len 6", "abcdef", "tail", "looprig: turn 0 exited 0 in …")
			for _, row := range rows {
				if strings.Contains(row, "s3cret") || row == "bob" {
					t.Errorf("the screen has %q:\n%s", row, strings.Join(rows, "\n"))
				}
			}
		})
	}
}

// A message of looprig's printed while a line is incomplete (here: the
// interrupt's note) goes above the line, which is drawn again below it,
// once.
func TestRunPartialLineAcrossANote(t *testing.T) {
	h := newHarness(t)
	id, _ := h.detached()
	r := h.runInPTY(id, "--", `printf 'name? '; read n`)
	r.waitRow(t, `the prompt "name? "`, func(row string) bool { return row == "name?" })
	r.cmd.Process.Signal(syscall.SIGINT)
	if err := r.cmd.Wait(); err == nil {
		t.Fatalf("run exited 0 after an interrupt; the terminal received %q", r.got.String())
	}
	once(t, r.screen(), "looprig: interrupting the turn (press Ctrl-C again to exit at once)", "name?…", "looprig: turn 0 interrupted …")
}

// Output that is not on a terminal keeps its exact form: a line is
// printed once, complete, and nothing is drawn again.
func TestRunPartialLinePiped(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	r := h.must(0, "run", id, "--", `printf 'name? '; sleep 0.3; echo bob; printf tail`)
	if r.stdout != "name? bob\ntail" {
		t.Errorf("run's stdout on a pipe: %q", r.stdout)
	}
}
