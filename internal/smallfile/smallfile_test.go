package smallfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 1025), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(small, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{small, link} {
		if b, err := Read(p, 1024); err != nil || string(b) != "hello\n" {
			t.Errorf("Read(%s) = %q, %v", p, b, err)
		}
	}
	var tooLarge *TooLargeError
	if _, err := Read(big, 1024); !errors.As(err, &tooLarge) || tooLarge.Max != 1024 || err.Error() != "read "+big+": larger than 1 KiB" {
		t.Errorf("Read(big) = %v", err)
	}
	for _, p := range []string{fifo, "/dev/zero", dir} {
		done := make(chan error, 1)
		go func() { _, err := Read(p, 1024); done <- err }()
		select {
		case err := <-done:
			var nr *NotRegularError
			var pe *fs.PathError
			if !errors.As(err, &nr) || !errors.As(err, &pe) || pe.Path != p {
				t.Errorf("Read(%s) = %v", p, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Read(%s) blocked", p)
		}
	}
	if _, err := Read(filepath.Join(dir, "none"), 1024); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read(missing) = %v", err)
	}
}
