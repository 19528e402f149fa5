package cli_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// send types into the running turn of a live session: a line, a line
// typed at a password prompt (journaled as its length only; its bytes are
// nowhere on disk afterwards), and an end of file.
func TestSendToRunningTurn(t *testing.T) {
	h := newHarness(t)
	id, _ := h.detached()
	h.must(2, "send", id)                            // no text
	h.must(2, "send", id, "--eof", "--", "x")        // both
	h.must(1, "send", id, "--", "nobody reads this") // no turn running

	c := h.dialHost(id)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	secret := "pw-" + strings.Repeat("z", 3) + time.Now().Format("150405.000000")
	h.must(0, "run", id, "--detach", "--", `read name; read next; stty -echo; read pw; stty echo; echo "got $name ${#pw}"; cat >/dev/null; echo eof-seen`)
	waitFor := func(what string, cond func(terminal, echoOff bool) bool) {
		t.Helper()
		for {
			st, err := c.Status(ctx)
			if err == nil && cond(st.Terminal, st.EchoOff) {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("waiting for %s: %v", what, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("the turn's terminal", func(term, off bool) bool { return term && !off })
	if r := h.must(0, "send", id, "--", "dave"); !strings.Contains(r.stdout, "sent 5 bytes") {
		t.Errorf("send: %q", r.stdout)
	}
	// Only then may the turn turn echo off: a line read and followed by
	// stty -echo before send looks at the echo again counts as hidden.
	h.must(0, "send", id, "--", "next")
	waitFor("echo off", func(term, off bool) bool { return term && off })
	r := h.must(0, "send", id, "--json", "--", secret)
	if !strings.Contains(r.stdout, `"hidden":true`) {
		t.Errorf("send at a password prompt: %s, want hidden", r.stdout)
	}
	waitFor("echo on", func(term, off bool) bool { return term && !off })
	h.must(0, "send", id, "--eof")
	recs := h.waitLog(id, "TurnDone")
	var out string
	for _, rec := range recs {
		out += rec.Text
	}
	want := "got dave " + strconv.Itoa(len(secret))
	if !strings.Contains(out, want) || !strings.Contains(out, "eof-seen") {
		t.Errorf("turn output %q lacks %q or eof-seen", out, want)
	}
	// log shows who sent what, and of the password only its length.
	human := h.must(0, "log", id).stdout
	for _, want := range []string{"input, 5 bytes from cli", `written: "dave^J"`, "hidden input, " + strconv.Itoa(len(secret)+1) + " bytes from cli", "end of file from cli"} {
		if !strings.Contains(human, want) {
			t.Errorf("log lacks %q:\n%s", want, human)
		}
	}
	// The password is nowhere: not in the store, the host's log, the
	// runtime directory.
	for _, dir := range []string{h.store, h.home, h.runtime} {
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			b, err := os.ReadFile(path)
			if err == nil && strings.Contains(string(b), secret) {
				t.Errorf("the hidden input is in %s", path)
			}
			return nil
		})
	}
}

// send --stdin sends what standard input holds (a newline added unless it
// ends with one), at most 64 KiB, so that a secret is on no command line;
// send -- TEXT warns when its text went to a terminal with echo off, and
// --stdin does not. --eof still works.
func TestSendStdin(t *testing.T) {
	h := newHarness(t)
	id, _ := h.detached()
	h.must(2, "send", id, "--stdin", "--", "x")
	h.must(2, "send", id, "--stdin", "--eof")
	secret1, secret2 := "argv-"+strconv.FormatInt(time.Now().UnixNano(), 36), "stdin-"+strconv.FormatInt(time.Now().UnixNano()+1, 36)
	h.must(0, "run", id, "--detach", "--", `read a; stty -echo; read pw1; read pw2; stty echo; echo "got $a ${#pw1} ${#pw2}"; cat >/dev/null; echo eof-seen`)
	h.waitTerminal(id, false)

	if r := h.runIn(strings.Repeat("x", 64<<10+1), "send", id, "--stdin"); r.code != 2 || !strings.Contains(r.stderr, "more than 64 KiB") {
		t.Errorf("send --stdin of more than 64 KiB: exit %d, stderr %q", r.code, r.stderr)
	}
	r := h.runIn("abc", "send", id, "--stdin", "--json")
	if out := decode[struct{ Bytes int }](t, r.stdout); r.code != 0 || out.Bytes != 4 || r.stderr != "" {
		t.Errorf("send --stdin of abc: exit %d, %s, stderr %q; want 4 bytes (a newline added), no warning", r.code, r.stdout, r.stderr)
	}
	h.waitTerminal(id, true)
	r = h.must(0, "send", id, "--json", "--", secret1)
	if !strings.Contains(r.stdout, `"hidden":true`) || !strings.Contains(r.stderr, "warning") || !strings.Contains(r.stderr, "every local user can read") ||
		!strings.Contains(r.stderr, "--stdin") || strings.Contains(r.stderr, secret1) {
		t.Errorf("send -- TEXT at a password prompt: stdout %s, stderr %q; want hidden and a warning to use --stdin", r.stdout, r.stderr)
	}
	r = h.runIn(secret2+"\n", "send", id, "--stdin")
	if r.code != 0 || !strings.Contains(r.stdout, "journaled as hidden input") || r.stderr != "" {
		t.Errorf("send --stdin at a password prompt: exit %d, stdout %q, stderr %q; want hidden, no warning", r.code, r.stdout, r.stderr)
	}
	h.waitTerminal(id, false)
	h.must(0, "send", id, "--eof")
	recs := h.waitLog(id, "TurnDone")
	var out string
	for _, rec := range recs {
		out += rec.Text
	}
	if want := "got abc " + strconv.Itoa(len(secret1)) + " " + strconv.Itoa(len(secret2)); !strings.Contains(out, want) || !strings.Contains(out, "eof-seen") {
		t.Errorf("turn output %q lacks %q or eof-seen", out, want)
	}
	var inputs int
	for _, rec := range recs {
		if rec.Type == "input" {
			inputs++
		}
	}
	if inputs != 4 {
		t.Errorf("%d input commands journaled, want 4 (the oversize one refused):\n%s", inputs, h.must(0, "log", id).stdout)
	}
	for _, dir := range []string{h.store, h.home, h.runtime} {
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), secret2) {
				t.Errorf("the hidden input is in %s", path)
			}
			return nil
		})
	}
}

// attach and send to a session no host serves say it is not live and how
// to make it live.
func TestNotLiveSaysHowToMakeItLive(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	for _, args := range [][]string{{"attach", id, "--json"}, {"send", id, "--json", "--", "hi"}} {
		r := h.must(1, args...)
		v := decode[struct {
			Error struct {
				Type, Kind, Hint string
			} `json:"error"`
		}](t, r.stdout)
		if v.Error.Type != "NotHostedError" || v.Error.Kind != "not_live" || !strings.Contains(v.Error.Hint, "restore "+id[:8]+" --detach") {
			t.Errorf("%s: %s", args[0], r.stdout)
		}
	}
}
