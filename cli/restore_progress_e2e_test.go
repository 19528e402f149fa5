//go:build linux || darwin

package cli_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// A restore in a background host (restore --detach) that brings the
// workspace back from its checkpoint draws its progress on the terminal
// of the command that started the host, as a restore in the command's own
// process does: the host reports it on its ready descriptor. The restore
// is made slow here (each report waits 1 ms: the test build's hook), not
// left to the disk.
func TestDetachedRestoreShowsItsProgress(t *testing.T) {
	h := newHarness(t)
	id, _, ws := h.detachedIn()
	h.must(0, "run", id, "--", manyFiles)
	h.must(0, "stop", id)
	if err := os.RemoveAll(ws); err != nil {
		t.Fatal(err)
	}
	h.env = append(h.env, "LOOPRIG_E2E_MATERIALIZE_SLOW=1ms")

	m, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer m.Close()
	term := &syncBuffer{}
	copied := make(chan struct{})
	go func() {
		io.Copy(term, m)
		close(copied)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := h.command(ctx, "restore", id, "--detach")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, tty
	err = cmd.Run()
	tty.Close()
	if err != nil {
		t.Fatalf("restore --detach: %v\n%s\n%s", err, out.String(), term.String())
	}
	select {
	case <-copied:
	case <-time.After(5 * time.Second):
	}
	got := term.String()
	if !strings.Contains(got, "bringing the workspace back from its checkpoint: ") || !strings.Contains(got, "% (") {
		t.Errorf("the terminal of restore --detach shows no progress: %q", got)
	}
	if r := h.must(0, "run", id, "--", "ls d | wc -l"); strings.TrimSpace(r.stdout) != "3000" {
		t.Errorf("the workspace brought back holds %q files", r.stdout)
	}
	h.must(0, "stop", id)
}
