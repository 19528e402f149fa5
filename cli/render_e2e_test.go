package cli_test

// Turn output for people is rendered by internal/termrender (cli/render.go):
// a "\r" progress bar shows its last state, colours come out as looprig's
// own SGR for the terminal's profile (none at all when stdout is not a
// terminal, NO_COLOR is set or TERM=dumb), and every other escape sequence
// (OSC 52, CSI 2J) is dropped. --json keeps the exact bytes.

import (
	"context"
	"errors"
	"io"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// renderTurn is the turn of these tests: a progress bar, a red word, an
// OSC 52 and a screen clear in the middle of a line, and the turn's own
// terminal.
const renderTurn = `printf "progress 10%%\rprogress 100%%\n"; printf "\033[31mred\033[0m plain\n"; ` +
	`printf "a\033]52;c;ZXZpbA==\007b\033[H\033[2Jc\n"; tty`

// renderedPlain is what a person sees of renderTurn without colours.
var renderedPlain = regexp.MustCompile(`^progress 100%\nred plain\nab\nc\n/dev/pts/[0-9]+\n$`)

// rawOutput matches the exact bytes of renderTurn's output.
var rawOutput = regexp.MustCompile(`^progress 10%\rprogress 100%\n\x1b\[31mred\x1b\[0m plain\na\x1b\]52;c;ZXZpbA==\x07b\x1b\[H\x1b\[2Jc\n/dev/pts/[0-9]+\n$`)

// onlySGR fails if s holds an escape sequence other than an SGR.
func onlySGR(t *testing.T, what, s string) {
	t.Helper()
	rest := regexp.MustCompile(`\x1b\[[0-9;]*m`).ReplaceAllString(undrawn(s), "")
	if i := strings.IndexByte(rest, 0x1b); i >= 0 {
		t.Errorf("%s: an escape sequence other than SGR reaches stdout: %q (in %q)", what, rest[i:min(i+12, len(rest))], s)
	}
}

// redraw is how run on a terminal draws the line the output is on again
// (cli/liveline.go): a carriage return, then erase in line, or for a line
// wider than the terminal cursor up and erase below.
var redraw = regexp.MustCompile(`[^\n]*\r(\x1b\[K|\x1b\[[0-9]+A\x1b\[J)`)

// undrawn is s, run's output on a terminal, as the lines it leaves:
// what was drawn again in place is left out (a line no wider than the
// terminal).
func undrawn(s string) string { return redraw.ReplaceAllString(s, "") }

// run, log and their --json forms, stdout not a terminal: plain text.
func TestRenderedOutput(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	r := h.must(0, "run", id, "--", renderTurn)
	if !renderedPlain.MatchString(r.stdout) {
		t.Errorf("run stdout = %q, want %v", r.stdout, renderedPlain)
	}
	if strings.ContainsRune(r.stdout, 0x1b) {
		t.Errorf("run stdout (not a terminal) holds an escape: %q", r.stdout)
	}

	// --json: the exact bytes, JSON-escaped.
	r = h.must(0, "run", id, "--json", "--", renderTurn)
	var raw strings.Builder
	for _, ev := range lines[record](t, r.stdout) {
		if ev.Type == "TurnOutput" {
			raw.WriteString(ev.Text)
		}
	}
	if !rawOutput.MatchString(raw.String()) {
		t.Errorf("run --json output = %q, want the exact bytes", raw.String())
	}

	// log: each output record shown as rendered, plain.
	all := h.must(0, "log", id).stdout
	inert(t, "log", all)
	var out strings.Builder
	for _, l := range strings.SplitAfter(all, "\n") {
		if strings.Contains(l, " TurnOutput ") {
			out.WriteString(l)
		}
	}
	for _, want := range []string{"progress 100%", "red plain", "^Jab^J", "/dev/pts/"} { // ab between line ends: a turn id may hold "ab"
		if strings.Count(out.String(), want) != 2 {
			t.Errorf("the output records of the two turns lack %q:\n%s", want, all)
		}
	}
	if s := out.String(); strings.Contains(s, "progress 10%") || strings.Contains(s, "^[") || strings.Contains(s, "ZXZpbA") {
		t.Errorf("log shows the raw output:\n%s", all)
	}
}

// attach follows a turn run through a host: the same rendered lines.
func TestRenderedOutputAttach(t *testing.T) {
	h := newHarness(t)
	id, _ := h.detached()
	a := h.start("attach", id)
	a.stderr.waitFor(t, "attached to session")
	r := h.must(0, "run", id, "--", renderTurn)
	if !renderedPlain.MatchString(r.stdout) {
		t.Errorf("run through the host: stdout = %q, want %v", r.stdout, renderedPlain)
	}

	var got strings.Builder
	done := make(chan error, 1)
	go func() {
		for {
			l, err := a.out.ReadString('\n')
			if err != nil {
				done <- err
				return
			}
			if strings.HasPrefix(l, "── TurnDone") {
				done <- nil
				return
			}
			got.WriteString(l)
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("attach stdout: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("attach never showed the turn's end")
	}
	a.cmd.Process.Signal(syscall.SIGINT)
	a.wait(t, 10*time.Second)
	turn, body, _ := strings.Cut(got.String(), "\n")
	if !strings.HasPrefix(turn, "── turn 0: ") || !renderedPlain.MatchString(body) {
		t.Errorf("attach stdout = %q, want the turn's header, then %v", got.String(), renderedPlain)
	}
}

// ptyRun runs looprig with stdout on a new terminal and env added to the
// harness's, and returns what the terminal received (its "\r\n" as "\n").
func ptyRun(t *testing.T, h *harness, env []string, args ...string) string {
	t.Helper()
	m, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := h.command(ctx, args...)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout = tty
	var errb syncBuffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		tty.Close()
		t.Fatal(err)
	}
	tty.Close() // the child's is the only one left: EOF (EIO) once it exits
	out := make(chan string, 1)
	go func() {
		b, err := io.ReadAll(m)
		if err != nil && !errors.Is(err, syscall.EIO) && !errors.Is(err, os.ErrClosed) {
			t.Errorf("read the terminal: %v", err)
		}
		out <- string(b)
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("looprig %v: %v\nstderr: %s", args, err, errb.String())
	}
	select {
	case s := <-out:
		return strings.ReplaceAll(s, "\r\n", "\n")
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal did not reach EOF")
	}
	return ""
}

// stdout a terminal: the red comes out as looprig's SGR red for the
// terminal's profile, nothing but SGR gets through; NO_COLOR and TERM=dumb
// give plain text.
func TestRenderedOutputColour(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	colour := []string{"NO_COLOR=", "CI=", "COLORTERM=", "TERM=xterm-256color"}
	for _, tt := range []struct {
		name  string
		env   []string
		plain bool
	}{
		{"256 colours", colour, false},
		{"truecolor", append(colour, "COLORTERM=truecolor"), false},
		{"16 colours", append(colour, "TERM=xterm"), false},
		{"NO_COLOR", append(colour, "NO_COLOR=1"), true},
		{"TERM=dumb", append(colour, "TERM=dumb"), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := undrawn(ptyRun(t, h, tt.env, "run", id, "--", renderTurn))
			onlySGR(t, "run on a terminal", out)
			if tt.plain {
				if !renderedPlain.MatchString(out) {
					t.Errorf("run stdout = %q, want %v", out, renderedPlain)
				}
				return
			}
			if !strings.Contains(out, "progress 100%\n\x1b[31mred\x1b[0m plain\nab\nc\n/dev/pts/") {
				t.Errorf("run stdout = %q, want the red as SGR 31", out)
			}
		})
	}
}
