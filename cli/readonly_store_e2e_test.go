package cli_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A store that cannot be written can still be read: log and diff open its
// journals for reading only; a command that writes says the store cannot
// be written. Not root: the store is chmod'ed read-only. Root (whom
// permissions do not stop): looprig runs in a mount namespace of its own
// where the store is a read-only bind mount (unshare -m), skipped where
// that is not allowed.
func TestReadOnlyStore(t *testing.T) {
	h := newHarness(t)
	id := h.newSession()
	h.must(0, "run", id, "--in-process", "--", "printf 'hi\\n' > f.txt")

	roRun := h.readOnlyStore()
	r := roRun("log", id)
	if r.code != 0 || !strings.Contains(r.stdout, "TurnDone") {
		t.Fatalf("log on a read-only store: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if r := roRun("diff", id); r.code != 0 || !strings.Contains(r.stdout, "+hi") {
		t.Fatalf("diff on a read-only store: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if r := roRun("run", id, "--in-process", "--", "true"); r.code != 125 || !strings.Contains(r.stderr, "the store cannot be written") {
		t.Fatalf("run on a read-only store: exit %d, want 125 saying the store cannot be written\nstderr: %s", r.code, r.stderr)
	}
}

// readOnlyStore returns how to run looprig on h's store made read-only.
func (h *harness) readOnlyStore() func(args ...string) result {
	t := h.t
	t.Helper()
	run := func(wrap []string, args ...string) result {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := h.command(ctx, args...)
		if wrap != nil {
			cmd.Args = append(append(wrap, cmd.Path), cmd.Args[1:]...)
			cmd.Path = wrap[0]
			if lp, err := exec.LookPath(wrap[0]); err == nil {
				cmd.Path = lp
			}
		}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("looprig %v: %v", args, err)
		}
		return result{code: code, stdout: out.String(), stderr: errb.String()}
	}
	if os.Geteuid() != 0 {
		var dirs []string
		filepath.WalkDir(h.store, func(p string, d fs.DirEntry, err error) error {
			if err == nil {
				fi, _ := d.Info()
				if fi != nil {
					os.Chmod(p, fi.Mode().Perm()&^0o222)
				}
				if d.IsDir() {
					dirs = append(dirs, p)
				}
			}
			return nil
		})
		t.Cleanup(func() {
			for _, d := range dirs {
				os.Chmod(d, 0o700)
			}
		})
		return func(args ...string) result { return run(nil, args...) }
	}
	mount := `mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && exec "$@"`
	wrap := []string{"unshare", "-m", "sh", "-c", mount, h.store}
	if out, err := exec.Command("unshare", "-m", "sh", "-c", `mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && ! touch "$0/probe" 2>/dev/null`, h.store).CombinedOutput(); err != nil {
		t.Skipf("running as root, and a read-only bind mount in a mount namespace is not allowed here: %v %s", err, out)
	}
	return func(args ...string) result { return run(wrap, args...) }
}
