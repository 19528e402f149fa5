package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// controls are C1 and bidi controls: a terminal acts on them (U+009B is
// CSI, U+202E reverses the text after it) rather than showing them.
const controls = "\u0085\u009b\u202a\u202e\u2066\u2069"

// hasString reports whether the decoded JSON value v holds the string s
// (as a value, a key, or in a nested value).
func hasString(v any, s string) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(v, s)
	case []any:
		for _, e := range v {
			if hasString(e, s) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.Contains(k, s) || hasString(e, s) {
				return true
			}
		}
	}
	return false
}

// Every --json output escapes C1 and bidi controls, whichever encoder
// wrote the line (the one string encoder, encoding/json, the event codec
// of payloads), in a session's title, a turn's input and output and an
// error's message and fields, and still carries the exact text.
func TestJSONEscapesTerminalControls(t *testing.T) {
	h := newHarness(t)
	check := func(what, out string, want ...string) {
		t.Helper()
		inert(t, what, out)
		var vals []any
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			vals = append(vals, decode[any](t, l))
		}
		for _, w := range want {
			if !hasString(vals, w) {
				t.Errorf("%s does not carry %q exactly:\n%s", what, w, out)
			}
		}
	}

	title := "title" + controls
	r := h.must(0, "new", "--json", "--title", title)
	check("new --json", r.stdout, title)
	id := decode[struct{ ID string }](t, r.stdout).ID
	check("ls --json", h.must(0, "ls", "--json").stdout, title)

	r = h.must(0, "run", id, "--json", "--", `printf 'out\302\205\302\233\342\200\252\342\200\256\342\201\246\342\201\251\n'`)
	check("run --json", r.stdout, "out"+controls+"\n")
	check("wait --json", h.must(0, "wait", id, "--json").stdout)

	// Input, with echo on: journaled with its text. (run left the session
	// live in the host it started.)
	h.stopWhenDone(id)
	h.must(0, "run", id, "--detach", "--json", "--", `read x; echo "got $x"`)
	h.waitTerminal(id, false)
	check("send --json", h.must(0, "send", id, "--json", "--", "in"+controls).stdout)
	check("wait --json", h.must(0, "wait", id, "--json").stdout) // the end of this turn
	check("log --json", h.must(0, "log", id, "--json").stdout, title, "out"+controls+"\n", "in"+controls+"\n", "got in"+controls)

	// Errors: their message and typed fields.
	r = h.run("log", "abc"+controls, "--json")
	check("log error --json", r.stdout, "abc"+controls)
	r = h.run("new", "--json", "--rig", "rig"+controls)
	check("new error --json", r.stdout, "rig"+controls)
}

// stopWhenDone stops the host of session id, if there is one, when the
// test ends.
func (h *harness) stopWhenDone(id string) {
	h.t.Cleanup(func() { h.run("stop", id) })
}

// waitTerminal waits until the running turn of the live session id has a
// terminal whose echo is off when echoOff, on otherwise.
func (h *harness) waitTerminal(id string, echoOff bool) {
	h.t.Helper()
	c := h.dialHost(id)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		st, err := c.Status(ctx)
		if err == nil && st.Terminal && st.EchoOff == echoOff {
			return
		}
		if ctx.Err() != nil {
			h.t.Fatalf("waiting for the terminal of %s (echo off %v): %v", id, echoOff, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
