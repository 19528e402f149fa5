package cli_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// run from a script gives the turn its stdin, as `ssh host cmd` does: a
// command that asks a question reads the script's answer, and a script
// with nothing to say (an empty pipe, cron's /dev/null) ends the question
// with an end of file instead of leaving run waiting for a `looprig send`
// nobody will type. Through a host and in process.
func TestRunGivesTheTurnItsStdin(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	ask := `printf "name? "; read n && echo "hello [$n]" || echo "got end of file"`
	for _, mode := range [][]string{nil, {"--in-process"}} {
		args := append(append([]string{"run", id}, mode...), "--", ask)
		r := h.runIn("Alice\n", args...)
		if r.code != 0 || !strings.Contains(r.stdout, "hello [Alice]") {
			t.Fatalf("run %v with Alice on stdin: exit %d\n%s%s", mode, r.code, r.stdout, r.stderr)
		}
		r = h.runIn("", args...)
		if r.code != 0 || !strings.Contains(r.stdout, "got end of file") {
			t.Fatalf("run %v with an empty stdin: exit %d\n%s%s", mode, r.code, r.stdout, r.stderr)
		}
		// A last line without a newline is read as a terminal gives it.
		r = h.runIn("Bob", args...)
		if r.code != 0 || !strings.Contains(r.stdout, "hello [Bob]") && !strings.Contains(r.stdout, "got end of file") {
			t.Fatalf("run %v with Bob (no newline): exit %d\n%s%s", mode, r.code, r.stdout, r.stderr)
		}
		if mode == nil {
			h.must(0, "stop", id) // run left it live in its host
		}
	}
}

// A turn that waits for input a pipe never gives (kept open, with nothing
// in it) is said on stderr within a few seconds, with the send that
// answers it; what the pipe gives later still reaches it.
func TestRunSaysWhenAPipeGivesNothing(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := h.command(ctx, "run", id, "--", `read x; echo "got [$x]"`)
	var out, errb syncBuffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r, &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(errb.String(), "stdin has given it nothing") {
		if time.Now().After(deadline) {
			t.Fatalf("nothing said on stderr in 20 s:\n%s", errb.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(errb.String(), "send "+id+" -- TEXT") {
		t.Errorf("the hint names no send: %s", errb.String())
	}
	w.Write([]byte("late\n"))
	w.Close()
	if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), "got [late]") {
		t.Fatalf("run: %v\nstdout: %s\nstderr: %s", err, out.String(), errb.String())
	}
	h.must(0, "stop", id)
}
