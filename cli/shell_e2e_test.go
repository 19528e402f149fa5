package cli_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runShell runs looprig to completion (at most 30s) with $SHELL set to
// shell, or unset when shell is "-".
func (h *harness) runShell(shell string, args ...string) result {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := h.command(ctx, args...)
	env := cmd.Env[:0:0]
	for _, kv := range cmd.Env {
		if !strings.HasPrefix(kv, "SHELL=") {
			env = append(env, kv)
		}
	}
	if shell != "-" {
		env = append(env, "SHELL="+shell)
	}
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		h.t.Fatalf("looprig %v: %v", args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// mustShell is runShell, failing the test unless looprig exits with want.
func (h *harness) mustShell(want int, shell string, args ...string) result {
	h.t.Helper()
	r := h.runShell(shell, args...)
	if r.code != want {
		h.t.Fatalf("SHELL=%s looprig %s: exit %d, want %d\nstdout: %s\nstderr: %s", shell, strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
	}
	return r
}

type newShellJSON struct {
	ID    string `json:"id"`
	Shell string `json:"shell"`
}

type lsShellJSON struct {
	ID    string `json:"id"`
	Shell string `json:"shell"`
}

func needBash(t *testing.T) {
	t.Helper()
	if fi, err := os.Stat("/bin/bash"); err != nil || fi.Mode().Perm()&0o111 == 0 {
		t.Skip("no /bin/bash here")
	}
}

// Turns run in $SHELL when it is the absolute path of an executable file,
// else in /bin/sh; new says which (text and JSON), ls --json too, and the
// turn runs in it.
func TestShellFromEnvironment(t *testing.T) {
	needBash(t)
	h := newHarness(t)
	r := h.mustShell(0, "/bin/bash", "new", "--title", "bash")
	id := strings.TrimSpace(r.stdout)
	if !strings.Contains(r.stderr, "(profile default, shell /bin/bash, workspace ") {
		t.Errorf("new says %q, want the shell /bin/bash named", r.stderr)
	}
	for _, row := range decode[[]lsShellJSON](t, h.must(0, "ls", "--json").stdout) {
		if row.ID == id && row.Shell != "/bin/bash" {
			t.Errorf("ls --json: shell %q, want /bin/bash", row.Shell)
		}
	}
	r = h.mustShell(0, "/bin/bash", "run", "--in-process", id, "--", `echo "bash=[$BASH_VERSION]"`)
	if !strings.Contains(r.stdout, "bash=[") || strings.Contains(r.stdout, "bash=[]") {
		t.Errorf("turn printed %q, want a bash version", r.stdout)
	}

	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(plain, []byte("echo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, shell := range []string{"-", "", "bash", plain, t.TempDir(), "/nonexistent/zsh"} {
		n := decode[newShellJSON](t, h.mustShell(0, shell, "new", "--json").stdout)
		if n.Shell != "/bin/sh" {
			t.Errorf("SHELL=%q: new --json shell %q, want /bin/sh", shell, n.Shell)
		}
		r := h.mustShell(0, shell, "run", "--in-process", n.ID, "--", `echo "zero=$0"`)
		if !strings.Contains(r.stdout, "zero=/bin/sh") {
			t.Errorf("SHELL=%q: turn printed %q, want zero=/bin/sh", shell, r.stdout)
		}
	}

	// new --detach: the host chose it, and says so.
	r = h.mustShell(0, "/bin/bash", "new", "--detach", "--json")
	if n := decode[newShellJSON](t, r.stdout); n.Shell != "/bin/bash" {
		t.Errorf("new --detach --json: shell %q, want /bin/bash: %s", n.Shell, r.stdout)
	}
}

// A profile's shell key wins over $SHELL; a bad one is a mistake named by
// file, line and key, and creates nothing.
func TestShellFromProfile(t *testing.T) {
	needBash(t)
	h := newHarness(t)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte("default_profile = \"b\"\n[profiles.b]\nshell = \"/bin/bash\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := decode[newShellJSON](t, h.mustShell(0, "/bin/sh", "--config", cfg, "new", "--json").stdout)
	if n.Shell != "/bin/bash" {
		t.Errorf("new --json shell %q, want the profile's /bin/bash", n.Shell)
	}

	if err := os.WriteFile(cfg, []byte("[profiles.b]\n\nshell = \"zsh\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := h.mustShell(1, "/bin/bash", "--config", cfg, "new", "--rig", "b")
	if want := cfg + ":3: profiles.b.shell: \"zsh\" is not an absolute path"; !strings.Contains(r.stderr, want) {
		t.Errorf("new with shell = \"zsh\": %q, want %q", r.stderr, want)
	}
	e := decode[errorShape](t, h.mustShell(1, "/bin/bash", "--config", cfg, "new", "--rig", "b", "--json").stdout)
	if e.Error.Kind != "config_invalid" || e.Error.File != cfg || e.Error.Line != 3 || e.Error.Field != "profiles.b.shell" {
		t.Errorf("new --json with shell = \"zsh\": %+v", e.Error)
	}
	if rows := h.ls(); len(rows) != 1 {
		t.Errorf("%d sessions after the refused new, want 1", len(rows))
	}
}

// A session keeps the shell it was created with: restored by a process
// whose $SHELL is another (a cron job's /bin/sh, another login's bash),
// it runs its turns in its own, with nothing adopted. A profile that
// names another shell changes it, as info-level drift: restore adopts it,
// says so with the change, and journals it; the next turn runs in the new
// shell. A recorded shell that is not an executable here (a session from
// another machine) gives way to $SHELL, adopted the same way.
func TestShellDrift(t *testing.T) {
	needBash(t)
	h := newHarness(t)
	id := decode[newShellJSON](t, h.mustShell(0, "/bin/sh", "new", "--json").stdout).ID
	r := h.mustShell(0, "/bin/bash", "restore", id, "--json")
	if !strings.Contains(r.stdout, `"adopted":[]`) {
		t.Errorf("restore under another $SHELL: %s, want nothing adopted", r.stdout)
	}
	r = h.mustShell(0, "/bin/bash", "run", "--in-process", id, "--", `echo "zero=$0"`)
	if !strings.Contains(r.stdout, "zero=/bin/sh") {
		t.Errorf("a turn after a restore under another $SHELL printed %q, want its own /bin/sh", r.stdout)
	}

	h.writeConfig("[profiles.b]\nshell = \"/bin/bash\"\n")
	r = h.mustShell(0, "/bin/sh", "restore", id, "--rig", "b")
	if !strings.Contains(r.stdout, "adopted info-level configuration drift") ||
		!strings.Contains(r.stdout, "shell") || !strings.Contains(r.stdout, "/bin/sh") || !strings.Contains(r.stdout, "/bin/bash") {
		t.Errorf("restore under a profile naming bash: %s, want the shell change adopted", r.stdout)
	}
	adopted := 0
	for _, rec := range h.log(id) {
		if rec.Type == "ConfigurationAdopted" {
			adopted++
		}
	}
	if adopted != 1 {
		t.Errorf("%d ConfigurationAdopted records, want 1", adopted)
	}
	r = h.mustShell(0, "/bin/sh", "run", "--in-process", id, "--", `echo "bash=[$BASH_VERSION]"`)
	if strings.Contains(r.stdout, "bash=[]") {
		t.Errorf("turn after adopting bash printed %q", r.stdout)
	}
	// Restored again, under any $SHELL: nothing to adopt.
	r = h.mustShell(0, "/bin/sh", "restore", id, "--json")
	if !strings.Contains(r.stdout, `"adopted":[]`) {
		t.Errorf("restore after adopting bash: %s, want nothing adopted", r.stdout)
	}

	// A shell that is gone: $SHELL it is, adopted.
	gone := filepath.Join(t.TempDir(), "myshell")
	if err := os.WriteFile(gone, []byte("#!/bin/sh\nexec /bin/sh \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	id = decode[newShellJSON](t, h.mustShell(0, gone, "new", "--json").stdout).ID
	os.Remove(gone)
	r = h.mustShell(0, "/bin/bash", "restore", id)
	if !strings.Contains(r.stdout, "adopted info-level configuration drift") || !strings.Contains(r.stdout, "myshe") || !strings.Contains(r.stdout, "/bin/bash") {
		t.Errorf("restore of a session whose shell is gone: %s, want $SHELL adopted", r.stdout)
	}
}
