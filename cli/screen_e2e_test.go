package cli_test

import (
	"strings"
	"testing"
)

// A turn that ends on a full-screen program's screen does not hide what
// it drew: run prints the screen's text when the turn ends, and log shows
// it in the record that holds it.
func TestTurnEndingOnAScreenShowsIt(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	r := h.must(0, "run", id, "--", `printf '\033[?1049h\033[2J\033[H\033[31mtop bar\033[0m\033[5;3Hdrawn on screen'`)
	for _, want := range []string{"[full-screen program: its screen when the output ended]", "top bar", "  drawn on screen"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run's output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "\x1b[?1049h") || strings.Contains(r.stdout, "\x1b[5;3H") {
		t.Errorf("run let the program's escapes through: %q", r.stdout)
	}
	if out := h.must(0, "log", id).stdout; !strings.Contains(out, "drawn on screen") {
		t.Errorf("log does not show what the turn drew:\n%s", out)
	}
}
