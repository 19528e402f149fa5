//go:build linux

package engine

// Which shell runs a turn: Config.Shell, as "SHELL -c INPUT"; /bin/sh when
// it is empty. Real shells, real processes.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"looprig/internal/testexec"
)

// needBash skips where /bin/bash is missing.
func needBash(t *testing.T) string {
	t.Helper()
	const bash = "/bin/bash"
	if err := CheckShell(bash); err != nil {
		t.Skipf("no bash here: %v", err)
	}
	return bash
}

func TestShellRunsConfiguredShell(t *testing.T) {
	bash := needBash(t)
	bothModes(t, func(t *testing.T, cfg Config) {
		cfg.Shell = bash
		res, err, sink := runShell(t, cfg, `echo "bash=$BASH_VERSION"; echo "\$0=$0"`)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("Run = %+v, %v", res, err)
		}
		out := sink.text(Stdout)
		if strings.Contains(out, "bash=\n") || !strings.Contains(out, "bash=") || !strings.Contains(out, "$0="+bash+"\n") {
			t.Fatalf("stdout %q, want a bash version and $0=%s", out, bash)
		}
	})
}

func TestShellDefaultIsBinSh(t *testing.T) {
	bothModes(t, func(t *testing.T, cfg Config) {
		res, err, sink := runShell(t, cfg, `echo "\$0=$0"`)
		if err != nil || res.ExitCode != 0 || sink.text(Stdout) != "$0=/bin/sh\n" {
			t.Fatalf("Run = %+v, %v, stdout %q; want $0=/bin/sh", res, err, sink.text(Stdout))
		}
	})
}

// The shell gets exactly two arguments, -c and the input, and its exit
// code is the turn's.
func TestShellArguments(t *testing.T) {
	bothModes(t, func(t *testing.T, cfg Config) {
		cfg.Shell = filepath.Join(t.TempDir(), "argv-shell")
		script := "#!/bin/sh\nprintf '[%s]' \"$@\"; echo; exit 7\n"
		testexec.WriteExecutable(t, cfg.Shell, script)
		input := `echo "a  b"; exit 3`
		res, err, sink := runShell(t, cfg, input)
		if err != nil || res.ExitCode != 7 {
			t.Fatalf("Run = %+v, %v; want exit 7", res, err)
		}
		if got, want := sink.text(Stdout), "[-c]["+input+"]\n"; got != want {
			t.Fatalf("stdout %q, want %q", got, want)
		}
	})
}

// The README's password prompt: read -s -p works in bash, reads what is
// written to the terminal with its echo off, and the input is hidden.
func TestShellBashPasswordPrompt(t *testing.T) {
	bash := needBash(t)
	t.Parallel()
	c := NewConsole(0, 0)
	ch, sink := startPTY(t, context.Background(), Config{Shell: bash}, c, `read -s -p "password: " p; echo; echo "got ${#p}"`)
	sink.waitOutput(t, Stdout, "password: ")
	for deadline := time.Now().Add(30 * time.Second); !c.EchoOff(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal's echo never went off; output %q", sink.text(Stdout))
		}
	}
	hidden, err := c.Write(context.Background(), []byte("hunter22\n"))
	if err != nil || !hidden {
		t.Fatalf("Write = %v, %v; want hidden", hidden, err)
	}
	r := await(t, ch, 30*time.Second)
	if r.err != nil || r.res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v; output %q", r.res, r.err, sink.text(Stdout))
	}
	if got := sink.text(Stdout); got != "password: \ngot 8\n" {
		t.Fatalf("stdout %q, want the prompt, no echo, and got 8", got)
	}
}

// ShellInteractive runs "SHELL -i -c INPUT": the shell gets -i first, and
// bash reads ~/.bashrc, so an alias defined there works, which it does not
// in the default "SHELL -c INPUT".
func TestShellInteractive(t *testing.T) {
	t.Run("argv", func(t *testing.T) {
		bothModes(t, func(t *testing.T, cfg Config) {
			cfg.Shell = filepath.Join(t.TempDir(), "argv-shell")
			testexec.WriteExecutable(t, cfg.Shell, "#!/bin/sh\nprintf '[%s]' \"$@\"; echo\n")
			cfg.ShellInteractive = true
			if _, err, sink := runShell(t, cfg, "ll"); err != nil || sink.text(Stdout) != "[-i][-c][ll]\n" {
				t.Fatalf("stdout %q, %v; want [-i][-c][ll]", sink.text(Stdout), err)
			}
		})
	})
	t.Run("bashrc", func(t *testing.T) {
		bash := needBash(t)
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte("alias hi='echo hello-from-alias'\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("HOME", home)
		cfg := Config{Shell: bash, ShellInteractive: true}
		if _, err, sink := runShell(t, cfg, "hi"); err != nil || !strings.Contains(sink.text(Stdout), "hello-from-alias") {
			t.Fatalf("interactive: stdout %q, %v; want the alias's output", sink.text(Stdout), err)
		}
		cfg.ShellInteractive = false
		if _, _, sink := runShell(t, cfg, "hi"); strings.Contains(sink.text(Stdout), "hello-from-alias") {
			t.Fatalf("not interactive, the alias ran: %q", sink.text(Stdout))
		}
	})
}
