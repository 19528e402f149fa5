package cli

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
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
