package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// newHere is `looprig new --json` run in dir: the session's id and
// workspace.
func (h *harness) newHere(dir string, args ...string) (id, workspace string) {
	h.t.Helper()
	old := h.cwd
	h.cwd = dir
	defer func() { h.cwd = old }()
	v := decode[struct {
		ID        string `json:"id"`
		Workspace string `json:"workspace"`
	}](h.t, h.must(0, append([]string{"new", "--json"}, args...)...).stdout)
	return v.ID, v.Workspace
}

// A session lives where it is created: `cd repo && looprig new` works in
// repo, and every path that restores it (run after stop, a restore after
// its host was SIGKILLed, restore --all-crashed, take) puts it back there
// with no drift; --scratch keeps a private directory in the store.
func TestNewWorksInTheCurrentDirectory(t *testing.T) {
	h := newHarness(t)
	repo := filepath.Join(h.cwd, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "Makefile"), []byte("test:\n\t@echo tests-pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	canon, err := filepath.EvalSymlinks(repo)
	if err != nil {
		t.Fatal(err)
	}
	id, ws := h.newHere(repo)
	if ws != canon {
		t.Fatalf("new in %s made its workspace %s", repo, ws)
	}
	if r := h.must(0, "run", "--in-process", id, "--", "pwd; make test"); !strings.Contains(r.stdout, canon+"\n") || !strings.Contains(r.stdout, "tests-pass") {
		t.Fatalf("the turn did not run in the project directory:\n%s%s", r.stdout, r.stderr)
	}

	// The placement is recorded: a run in a host (restoring the idle
	// session), stop, a SIGKILLed host restored, restore --all-crashed.
	noDrift := func(what string, r result) {
		t.Helper()
		if strings.Contains(r.stdout+r.stderr, "drift") {
			t.Fatalf("%s saw drift:\n%s%s", what, r.stdout, r.stderr)
		}
	}
	r := h.must(0, "run", id, "--", "pwd")
	noDrift("run", r)
	if !strings.Contains(r.stdout, canon) {
		t.Fatalf("run restored it elsewhere:\n%s", r.stdout)
	}
	h.killHostOf(id)
	r = h.must(0, "restore", "--all-crashed")
	noDrift("restore --all-crashed", r)
	if row := h.row(id); row.State != "idle" {
		t.Fatalf("after restore --all-crashed: %+v", row)
	}
	r = h.must(0, "restore", "--detach", id)
	noDrift("restore --detach", r)
	if r := h.must(0, "run", id, "--", "pwd; ls"); !strings.Contains(r.stdout, canon) || !strings.Contains(r.stdout, "Makefile") {
		t.Fatalf("after restore --detach the turn ran elsewhere:\n%s", r.stdout)
	}
	h.must(0, "stop", id)
	recs := h.log(id)
	for _, rec := range recs {
		if rec.Type == "ConfigurationAdopted" || rec.Type == "RestoreErrored" {
			t.Fatalf("the journal has %s: a restore did not use the recorded placement", rec.Type)
		}
	}

	// --scratch: a private directory in the store, as before.
	_, scratch := h.newHere(repo, "--scratch")
	if !strings.HasPrefix(scratch, h.store) || scratch == canon {
		t.Fatalf("new --scratch made %s, want a directory in the store %s", scratch, h.store)
	}
	if r := h.must(2, "new", "--scratch", "--root", repo); !strings.Contains(r.stderr, "--scratch does not go with") {
		t.Fatalf("--scratch with --root: %s", r.stderr)
	}
}

// The second session in a directory while the first is live is refused,
// naming the holder and the ways out; "/", $HOME itself and the store are
// refused as a session's directory, with --scratch in the hint, and leave
// nothing behind.
func TestNewRefusesBusyAndUnsafeDirectories(t *testing.T) {
	h := newHarness(t)
	id := decode[struct {
		ID string `json:"id"`
	}](t, h.must(0, "new", "--detach", "--json").stdout).ID
	r := h.must(1, "new")
	if !strings.Contains(r.stderr, "is busy: another session holds it") || !strings.Contains(r.stderr, "--scratch") {
		t.Fatalf("a second session in a busy directory: %s", r.stderr)
	}
	h.must(0, "stop", id)

	home := h.home
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"/", home, h.store} {
		old := h.cwd
		h.cwd = dir
		r := h.must(1, "new")
		h.cwd = old
		if !strings.Contains(r.stderr, "--scratch") {
			t.Errorf("new in %s: %s; want a hint naming --scratch", dir, r.stderr)
		}
	}
	if n := len(h.ls()); n != 1 {
		t.Fatalf("%d sessions after the refusals, want the one", n)
	}
}

// A session that works in a project directory travels to another machine
// (two homes on one NATS server): there it is restored to the same path
// when it can (missing: brought back from its checkpoint), to --root DIR
// when asked (moved, adopted as "cli --root", no --accept-drift needed),
// and a clone at the path that diverged from it is never overwritten.
func TestProjectDirectoryTravels(t *testing.T) {
	a, b := twoHomesOnNATS(t)
	base := t.TempDir()
	project := filepath.Join(base, "myproject")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	id, _ := a.newHere(project)
	a.must(0, "run", "--in-process", id, "--", "echo v1 > main.go && mkdir -p pkg && echo lib > pkg/lib.go")
	want := a.must(0, "run", "--in-process", id, "--", describeTree).stdout

	// B, where the project is not (yet): the same path, from the checkpoint.
	if err := os.RemoveAll(project); err != nil {
		t.Fatal(err)
	}
	r := b.must(0, "run", "--in-process", id, "--", describeTree)
	if r.stdout != want {
		t.Fatalf("on B the tree is\n%s\nwant\n%s", r.stdout, want)
	}
	if _, err := os.Stat(filepath.Join(project, "pkg", "lib.go")); err != nil {
		t.Fatalf("not brought back to the same path: %v", err)
	}

	// B, elsewhere: --root moves it, the files come along.
	elsewhere := filepath.Join(base, "checkout")
	r = b.must(0, "restore", id, "--root", elsewhere)
	if !strings.Contains(r.stdout, "moved to the root --root named") {
		t.Errorf("restore --root: %s", r.stdout)
	}
	if got := b.must(0, "run", "--in-process", id, "--", describeTree).stdout; got != want {
		t.Fatalf("after --root the tree is\n%s\nwant\n%s", got, want)
	}
	if row := b.row(id); row.State != "idle" {
		t.Fatalf("after the move: %+v", row)
	}

	// A clone at the path that diverged: refused, untouched.
	other := filepath.Join(base, "clone")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "main.go"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = a.must(3, "restore", id, "--root", other)
	if !strings.Contains(r.stderr, "diverged") && !strings.Contains(r.stderr, "no checkpoint") {
		t.Errorf("restore into a diverged clone: %s", r.stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(other, "main.go")); string(got) != "mine\n" {
		t.Fatalf("the clone's main.go is %q now", got)
	}
}
