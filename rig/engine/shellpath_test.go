package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"looprig/internal/testexec"
)

// shellFiles makes, in a temporary directory, an executable script, a file
// without an execute bit, a directory and a symlink to the script.
func shellFiles(t *testing.T) (exe, plain, dir, link string) {
	t.Helper()
	root := t.TempDir()
	exe = filepath.Join(root, "myshell")
	testexec.WriteExecutable(t, exe, "#!/bin/sh\nexec /bin/sh \"$@\"\n")
	plain = filepath.Join(root, "notes.txt")
	if err := os.WriteFile(plain, []byte("not a shell\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(root, "bin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	link = filepath.Join(root, "link")
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	return exe, plain, dir, link
}

func TestCheckShell(t *testing.T) {
	exe, plain, dir, link := shellFiles(t)
	for _, ok := range []string{exe, link, DefaultShell} {
		if err := CheckShell(ok); err != nil {
			t.Errorf("CheckShell(%q) = %v, want nil", ok, err)
		}
	}
	for path, reason := range map[string]string{
		"":                             "is not an absolute path",
		"bash":                         "is not an absolute path",
		"bin/sh":                       "is not an absolute path",
		filepath.Join(dir, "missing"):  "does not exist",
		plain:                          "is not executable",
		dir:                            "is not a regular file",
		filepath.Join(plain, "below"):  "cannot be examined: not a directory",
		"/" + strings.Repeat("x", 300): "cannot be examined: file name too long",
	} {
		err := CheckShell(path)
		var se *ShellError
		if !errors.As(err, &se) || se.Path != path || !strings.Contains(se.Reason, reason) {
			t.Errorf("CheckShell(%q) = %v, want a *ShellError saying %q", path, err, reason)
		}
	}
}

// The user's shell is $SHELL only when CheckShell accepts it; an unset,
// relative, missing or non-executable $SHELL, or a directory, is /bin/sh.
func TestUserShell(t *testing.T) {
	exe, plain, dir, link := shellFiles(t)
	for env, want := range map[string]string{
		exe:                           exe,
		link:                          link,
		"":                            DefaultShell,
		"bash":                        DefaultShell,
		"./myshell":                   DefaultShell,
		plain:                         DefaultShell,
		dir:                           DefaultShell,
		filepath.Join(dir, "missing"): DefaultShell,
	} {
		if got := UserShell(env); got != want {
			t.Errorf("UserShell(%q) = %q, want %q", env, got, want)
		}
	}
}
