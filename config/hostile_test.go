package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A configuration "file" that is huge, a FIFO, a device or a directory is
// refused with a *Error naming it, without blocking or reading it whole.
func TestLoadHostileFiles(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.toml")
	if err := os.WriteFile(huge, []byte("theme = \"x\"\n"+strings.Repeat("# padding\n", MaxFileSize/10+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		huge:        "larger than 1 MiB",
		fifo:        "not a regular file",
		"/dev/zero": "not a regular file",
		dir:         "not a regular file",
	}
	for path, want := range cases {
		done := make(chan error, 1)
		go func() { _, err := Load(path, true); done <- err }()
		select {
		case err := <-done:
			var ce *Error
			if !errors.As(err, &ce) || ce.File != path || !strings.Contains(err.Error(), want) {
				t.Errorf("Load(%s) = %v, want a *Error saying %q", path, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Load(%s) blocked", path)
		}
	}
}
