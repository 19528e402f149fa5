package testexec

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// The file holds body byte for byte (a binary's NUL bytes, no final
// newline, an empty body), is mode 0755 under a umask that would take
// group and others' bits away, replaces a file already there, and runs.
func TestWriteExecutable(t *testing.T) {
	old := syscall.Umask(0o077) // process-wide: this test is not parallel
	defer syscall.Umask(old)
	dir := t.TempDir()

	script := filepath.Join(dir, "script")
	WriteExecutable(t, script, "#!/bin/sh\nprintf '[%s]' \"$@\"\n")
	checkFile(t, script, "#!/bin/sh\nprintf '[%s]' \"$@\"\n")
	if out, err := exec.Command(script, "a b", "c").CombinedOutput(); err != nil || string(out) != "[a b][c]" {
		t.Errorf("running %s: %q, %v; want [a b][c]", script, out, err)
	}

	binary := filepath.Join(dir, "binary")
	body := "\x7fELF\x00\x01\x02\xff\x00no newline"
	WriteExecutable(t, binary, body)
	checkFile(t, binary, body)

	empty := filepath.Join(dir, "empty")
	WriteExecutable(t, empty, "")
	checkFile(t, empty, "")

	there := filepath.Join(dir, "there")
	if err := os.WriteFile(there, []byte("a longer file that was here before\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	WriteExecutable(t, there, "#!/bin/sh\necho replaced\n")
	checkFile(t, there, "#!/bin/sh\necho replaced\n")
	if out, err := exec.Command(there).CombinedOutput(); err != nil || string(out) != "replaced\n" {
		t.Errorf("running %s: %q, %v; want replaced", there, out, err)
	}
}

func checkFile(t *testing.T, path, want string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o755 {
		t.Errorf("%s: mode %v, want a regular file, 0755", path, fi.Mode())
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s holds %q, want %q", path, got, want)
	}
}

// A file that cannot be written fails the test, naming the path.
func TestWriteExecutableFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "script")
	r := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		WriteExecutable(r, path, "#!/bin/sh\n")
	}()
	<-done
	if !strings.Contains(r.fatal, path) {
		t.Fatalf("WriteExecutable into a missing directory: Fatalf %q, want it to name %s", r.fatal, path)
	}
}

// fatalRecorder records the message of Fatalf and ends its goroutine, as
// testing's Fatalf does, without failing the test.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// Tests in parallel each write executables and run them at once, many
// times: every fork of one happens while the others write. Written by
// this process (os.WriteFile), a run here fails with ETXTBSY within a few
// hundred; written by WriteExecutable, none does.
func TestNoTextFileBusy(t *testing.T) {
	if testing.Short() {
		t.Skip("a stress test")
	}
	dir := t.TempDir()
	for w := range 4 {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			t.Parallel()
			for i := range 150 {
				path := filepath.Join(dir, fmt.Sprintf("run-%d-%d", w, i))
				WriteExecutable(t, path, "#!/bin/sh\nexit 3\n")
				err := exec.Command(path).Run()
				if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 3 {
					t.Fatalf("run %d of %s: %v, want exit status 3", i, path, err)
				}
			}
		})
	}
}
