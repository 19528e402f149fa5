package config

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A profile's shell is the absolute path of an executable file; any other
// value is a mistake reported with the file, the line and the key. The
// files are real, in a temporary directory, and so is the configuration
// file, read with Load.
func TestProfileShell(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "myshell")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\nexec /bin/sh \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("echo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(t *testing.T, doc string) string {
		path := filepath.Join(t.TempDir(), "config.toml")
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	path := write(t, "[profiles.mine]\nshell = "+strconv.Quote(exe)+"\n[profiles.plain]\n")
	c, err := Load(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := c.Profile("mine"); err != nil || p.Shell != exe {
		t.Fatalf("mine = %+v, %v; want shell %s", p, err, exe)
	}
	for _, name := range []string{"plain", "default", "demo"} {
		if p, err := c.Profile(name); err != nil || p.Shell != "" {
			t.Fatalf("%s = %+v, %v; want no shell (the user's)", name, p, err)
		}
	}

	for _, tt := range []struct {
		name  string
		value string // TOML
		in    string // substring of the reason
	}{
		{"relative", `"bash"`, `"bash" is not an absolute path`},
		{"home", `"~/bin/zsh"`, `"~/bin/zsh" is not an absolute path`},
		{"empty", `""`, `"" is not an absolute path`},
		{"missing", strconv.Quote(filepath.Join(dir, "zsh")), "does not exist"},
		{"not executable", strconv.Quote(plain), "is not executable"},
		{"directory", strconv.Quote(dir), "is not a regular file"},
		{"not a string", `["/bin/bash"]`, "must be a string, not an array"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := write(t, "theme = \"dark\"\n\n[profiles.work]\ntty = true\nshell = "+tt.value+"\n")
			_, err := Load(path, true)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("Load = %v, want *Error", err)
			}
			if ce.File != path || ce.Line != 5 || ce.Field != "profiles.work.shell" || !strings.Contains(ce.Reason, tt.in) {
				t.Fatalf("got %#v; want %s:5, profiles.work.shell, reason containing %q", ce, path, tt.in)
			}
			if want := path + ":5: profiles.work.shell: "; !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("message %q does not start with %q", err, want)
			}
		})
	}
}
