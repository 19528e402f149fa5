package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"looprig/internal/testbin"
	"looprig/internal/tmuxtest"
)

// A full-screen program passed through by run and attach in a real
// terminal (tmux): its screen is the one the same program shows run
// directly in a pane of the same size (text, colours and cursor), keys
// reach it raw (Enter is "\r", Ctrl-C is 0x03), and our terminal is back
// in line mode, main screen, cursor shown, when it ends.

const screenWait = 30 * time.Second

// fullscreen is the scripted full-screen program (internal/testbin/fullscreen).
func fullscreen(t *testing.T) string {
	return testbin.Program(t, "looprig/internal/testbin/fullscreen")
}

// looprigPane starts `looprig ARGS` in tmux session name of h's store and
// home, with SHELL=/bin/bash; "[exit N]" shows when it ends.
func looprigPane(h *harness, srv *tmuxtest.Server, name string, width, height int, args string) {
	h.t.Helper()
	srv.Start(name, width, height, "/bin/sh", "-c", looprigLine(h, args))
}

// looprigPiped is looprigPane with everything written to the pane copied
// to log (tmux's pipe-pane) from before looprig starts: the pane's shell
// waits for the pipe, so that looprig's first output (a full-screen
// program's switch to the alternate screen) cannot come first.
func looprigPiped(h *harness, srv *tmuxtest.Server, name string, width, height int, log, args string) {
	h.t.Helper()
	gate := filepath.Join(h.t.TempDir(), "piped")
	line := fmt.Sprintf("while [ ! -e %q ]; do sleep 0.02; done; %s", gate, looprigLine(h, args))
	srv.Start(name, width, height, "/bin/sh", "-c", line)
	srv.Run("pipe-pane", "-t", name, "-o", "cat >> "+log)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		h.t.Fatal(err)
	}
}

// looprigLine is the shell command that runs looprig with args on the
// harness's store, then says how it exited and stays.
func looprigLine(h *harness, args string) string {
	env := fmt.Sprintf("SHELL=/bin/bash HOME=%q XDG_CONFIG_HOME=%q XDG_STATE_HOME=%q XDG_RUNTIME_DIR=%q LOOPRIG_STORE= TERM=xterm-256color",
		h.home, filepath.Join(h.home, "config"), filepath.Join(h.home, "state"), h.runtime)
	return fmt.Sprintf("env %s %q --store %q %s; echo \"[exit $?]\"; exec sleep 3600", env, binary, h.store, args)
}

// directPane runs the program straight in a pane of its own.
func directPane(srv *tmuxtest.Server, name string, width, height int, argv ...string) {
	srv.Start(name, width, height, append([]string{"env", "TERM=xterm-256color"}, argv...)...)
}

// styled is what pane name shows, with its colours and attributes, and
// its cursor.
func styled(srv *tmuxtest.Server, name string) string {
	return srv.Run("capture-pane", "-p", "-e", "-t", name) + "cursor " + srv.Display(name, "#{cursor_x},#{cursor_y} #{cursor_flag}")
}

// sameScreen waits until panes a and b show the same (styled) screen and
// cursor, failing with both past screenWait.
func sameScreen(t *testing.T, srv *tmuxtest.Server, a, b string) {
	t.Helper()
	var sa, sb string
	for deadline := time.Now().Add(screenWait); ; time.Sleep(100 * time.Millisecond) {
		sa, sb = styled(srv, a), styled(srv, b)
		if sa == sb {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s and %s differ:\n%s:\n%q\n%s:\n%q", a, b, a, sa, b, sb)
		}
	}
}

// saneTerminal checks that pane name is back in line mode: main screen,
// cursor shown, canonical mode with echo and signals.
func saneTerminal(t *testing.T, srv *tmuxtest.Server, name string) {
	t.Helper()
	if alt := srv.Display(name, "#{alternate_on} #{cursor_flag}"); alt != "0 1" {
		t.Errorf("%s: alternate_on cursor_flag = %q, want the main screen and the cursor shown", name, alt)
	}
	out, err := exec.Command("stty", "-a", "-F", srv.Display(name, "#{pane_tty}")).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{" icanon", " echo ", " isig", " icrnl"} {
		if !strings.Contains(" "+strings.ReplaceAll(string(out), "\n", " ")+" ", want) {
			t.Errorf("%s: the terminal lacks %q:\n%s", name, want, out)
		}
	}
}

// keysLikeAPerson types to both panes: a line, Enter, Ctrl-C, more.
func keysLikeAPerson(srv *tmuxtest.Server, panes ...string) {
	for _, p := range panes {
		srv.Type(p, "hello world")
		srv.Send(p, "Enter")
		srv.Send(p, "C-c")
		srv.Type(p, "abc")
		srv.Send(p, "BSpace")
	}
}

// (a) run passes the screen through: the same screen as the program run
// directly, keys typed reach it (Enter submits, Ctrl-C is the program's),
// q leaves it and the terminal is back in line mode with the transcript's
// lines.
func TestTmuxRunFullScreen(t *testing.T) {
	if testing.Short() {
		t.Skip("tmux end-to-end tests are slow; skipped with -short")
	}
	needBash(t)
	fs := fullscreen(t)
	srv := tmuxtest.New(t)
	h := newHarness(t)
	id := decode[newShellJSON](t, h.mustShell(0, "/bin/bash", "new", "--json").stdout).ID
	h.stopWhenDone(id)

	directPane(srv, "direct", 100, 30, fs)
	looprigPane(h, srv, "run", 100, 30, fmt.Sprintf("run %s -- %q", id, fs))
	srv.WaitFor("direct", screenWait, "bottom row: q leaves")
	srv.WaitFor("run", screenWait, "bottom row: q leaves", "size 100x30")
	sameScreen(t, srv, "direct", "run")

	keysLikeAPerson(srv, "direct", "run")
	srv.WaitFor("run", screenWait, "typed: ab\n", "submitted: hello world\n", "ctrl-c: 1\n")
	sameScreen(t, srv, "direct", "run")

	srv.Send("run", "BSpace", "BSpace", "H") // the program hides the cursor: run shows it again once out
	waitUntil(t, "the cursor hidden", func() bool { return srv.Display("run", "#{cursor_flag}") == "0" })
	srv.Send("run", "q")
	s := srv.WaitFor("run", screenWait, "[exit 0]")
	for _, want := range []string{
		"[full-screen program: its screen is not part of the line output]\n[full-screen program ended]\n",
		`fullscreen: left; submitted ["hello world"]`,
		"turn 0 exited 0",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("run's transcript lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "FULLSCREEN TEST") {
		t.Errorf("the program's screen is on the main screen:\n%s", s)
	}
	saneTerminal(t, srv, "run")
}

// (b) attach passes the screen through too: a program started from its
// prompt shows its screen and takes the keys, and its end gives the
// prompt back; an attach that comes in while a program has its screen
// gets the whole screen (the program redraws), the same as the program
// run directly; Ctrl-] detaches and leaves the terminal sane.
func TestTmuxAttachFullScreen(t *testing.T) {
	if testing.Short() {
		t.Skip("tmux end-to-end tests are slow; skipped with -short")
	}
	needBash(t)
	fs := fullscreen(t)
	srv := tmuxtest.New(t)
	h := newHarness(t)
	id := decode[newShellJSON](t, h.mustShell(0, "/bin/bash", "new", "--detach", "--json").stdout).ID
	h.stopWhenDone(id)
	prompt := "looprig " + id[:8] + " ›"

	looprigPane(h, srv, "a", 100, 30, "attach "+id)
	srv.WaitFor("a", screenWait, prompt)
	srv.Type("a", fs)
	srv.Send("a", "Enter")
	srv.WaitFor("a", screenWait, "bottom row: q leaves", "size 100x30")
	keysLikeAPerson(srv, "a")
	srv.WaitFor("a", screenWait, "typed: ab\n", "submitted: hello world\n", "ctrl-c: 1\n")
	srv.Send("a", "BSpace", "BSpace", "q")
	s := srv.WaitFor("a", screenWait, `fullscreen: left; submitted ["hello world"]`, "TurnDone")
	// (attach may show its prompt twice before a turn it submitted starts)
	for deadline := time.Now().Add(screenWait); !strings.HasSuffix(strings.TrimSpace(srv.Screen("a")), prompt); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no prompt after turn 0:\n%s", srv.Screen("a"))
		}
	}
	if alt := srv.Display("a", "#{alternate_on}"); alt != "0" || strings.Contains(s, "FULLSCREEN TEST") {
		t.Errorf("attach did not go back to the main screen (alternate_on %s):\n%s", alt, s)
	}

	// A program already on its screen, whose switch to it is older than
	// attach's replay (60 keys typed in a make as many records): a new
	// attach, of the turn's terminal's size (no SIGWINCH from that), gets
	// its whole screen, the same as the program run directly shows.
	h.mustShell(0, "/bin/bash", "run", id, "--detach", "--", fs)
	waitUntil(t, "a to show the screen", func() bool { return strings.Contains(srv.Screen("a"), "bottom row") })
	directPane(srv, "direct", 100, 30, fs)
	srv.WaitFor("direct", screenWait, "bottom row: q leaves")
	xs := strings.Repeat("x", 60)
	for range xs {
		srv.Type("a", "x")
		time.Sleep(20 * time.Millisecond)
	}
	srv.Send("a", "Enter")
	srv.WaitFor("a", screenWait, "submitted: "+xs)
	srv.Type("direct", xs)
	srv.Send("direct", "Enter")
	looprigPane(h, srv, "b", 100, 30, "attach "+id)
	srv.WaitFor("b", screenWait, "bottom row: q leaves", "submitted: "+xs)
	sameScreen(t, srv, "direct", "b")
	srv.Type("b", "xy")
	srv.WaitFor("a", screenWait, "typed: xy")
	srv.Send("b", "C-]")
	srv.WaitFor("b", screenWait, "detached; session "+id[:8]+" keeps running", "[exit 0]")
	if all := srv.Run("capture-pane", "-p", "-S", "-", "-t", "b"); !strings.Contains(all, "are not shown here") {
		t.Errorf("b replayed the whole journal: the screen's start was in its replay\n%s", all)
	}
	saneTerminal(t, srv, "b")
	if s := srv.Screen("a"); strings.Contains(s, "[exit") || !strings.Contains(s, "typed: xy") {
		t.Errorf("a ended with b's detach, or lost the screen:\n%s", s)
	}
	srv.Send("a", "C-]")
	srv.WaitFor("a", screenWait, "[exit 0]")
	saneTerminal(t, srv, "a")
}

// (c) A program that writes the clipboard (OSC 52), titles, a hyperlink
// and DCS on its screen, and asks for mouse reports: none of it reaches
// the terminal run draws on (tmux's pipe-pane log of everything written
// to the pane, its title, its modes).
func TestTmuxFullScreenHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("tmux end-to-end tests are slow; skipped with -short")
	}
	needBash(t)
	fs := fullscreen(t)
	srv := tmuxtest.New(t)
	h := newHarness(t)
	id := decode[newShellJSON](t, h.mustShell(0, "/bin/bash", "new", "--json").stdout).ID
	h.stopWhenDone(id)
	log := filepath.Join(t.TempDir(), "pane.log")

	looprigPiped(h, srv, "run", 100, 30, log, fmt.Sprintf("run %s -- %q -hostile", id, fs))
	srv.WaitFor("run", screenWait, "bottom row: q leaves", "link text")
	srv.Type("run", "zz")
	srv.WaitFor("run", screenWait, "typed: zz")
	srv.Send("run", "BSpace", "BSpace", "q")
	srv.WaitFor("run", screenWait, "[exit 0]")
	time.Sleep(200 * time.Millisecond) // pipe-pane's cat writes
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "FULLSCREEN TEST") {
		t.Fatalf("the pane log lacks the screen (pipe-pane did not see it):\n%q", b)
	}
	for _, bad := range []string{"HOSTILE", "evil.example", "\x1b]", "\x1bP", "\x1b_", "\x1b^", "\a", "?1000h", "?1004h"} {
		if strings.Contains(string(b), bad) {
			t.Errorf("the pane got %q:\n%q", bad, b)
		}
	}
	if title := srv.Display("run", "#{pane_title}"); strings.Contains(title, "HOSTILE") {
		t.Errorf("the pane's title is %q", title)
	}
	if modes := srv.Display("run", "#{mouse_any_flag}#{mouse_standard_flag}"); modes != "00" {
		t.Errorf("mouse modes reached the pane: %s", modes)
	}
	saneTerminal(t, srv, "run")
}
