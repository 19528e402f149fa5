//go:build linux || darwin

package cli_test

import (
	"io"
	"os"
	"testing"

	"github.com/creack/pty"
)

// openPTY returns the two ends of a new pseudo-terminal, or skips the test.
// (creack/pty: /dev/ptmx and TIOCSPTLCK on Linux, posix_openpt on Darwin.)
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, s, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	go io.Copy(io.Discard, m) // the terminal's echo
	return m, s
}
