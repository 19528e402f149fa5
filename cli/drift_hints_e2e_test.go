package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Every way out a refused restore names is a command that works: each
// test below gets a restore refused for configuration drift (or a busy
// root, whose way out accepts drift too), reads the hint the CLI prints
// for people, runs every restore or run it names with the real binary (its
// placeholders filled in: INPUT, DIR, NAME) on the session as the refusal
// left it, and checks that the command restores the session, and where.

// hintCommand finds the commands a hint names.
var hintCommand = regexp.MustCompile(`looprig (?:--\S+ \S+ )*(?:restore|run) [^;]+`)

// hintOf is the hint line of what looprig printed for people on stderr.
func hintOf(t *testing.T, stderr string) string {
	t.Helper()
	for _, l := range strings.Split(stderr, "\n") {
		if h, ok := strings.CutPrefix(l, "hint: "); ok {
			return h
		}
	}
	t.Fatalf("no hint in:\n%s", stderr)
	return ""
}

// hintCommands are the commands hint names, as arguments of the binary,
// with its placeholders replaced by fill's values.
func hintCommands(t *testing.T, hint string, fill map[string]string) [][]string {
	t.Helper()
	var out [][]string
	for _, m := range hintCommand.FindAllString(hint, -1) {
		args := strings.Fields(strings.TrimRight(m, " ."))[1:]
		for i, a := range args {
			if v, ok := fill[a]; ok {
				args[i] = v
			}
		}
		for _, a := range args {
			if a == "INPUT" || a == "DIR" || a == "NAME" {
				t.Fatalf("placeholder %s left in %q (hint %q)", a, args, hint)
			}
		}
		out = append(out, args)
	}
	if len(out) == 0 {
		t.Fatalf("the hint names no command: %q", hint)
	}
	return out
}

// restoredJSON is what restore --json says of a restore that worked.
type restoredJSON struct {
	ID        string   `json:"id"`
	Adopted   []change `json:"adopted"`
	Workspace *struct {
		Materialized bool   `json:"materialized"`
		New          bool   `json:"new"`
		MovedFrom    string `json:"moved_from"`
		Kept         bool   `json:"kept"`
		Files        int    `json:"files"`
	} `json:"workspace"`
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// inProcess is args (a run) with --in-process before its "--".
func inProcess(args []string) []string {
	for i, a := range args {
		if a == "--" {
			return append(append(append([]string{}, args[:i]...), "--in-process"), args[i:]...)
		}
	}
	return append(args, "--in-process")
}

// A session made with --placement exclusive --root R under a profile that
// pins session placement (placement = "session": its sessions in their
// own directories) is refused by a plain restore; a profile that pins no
// placement restores it where it was made, with no drift
// (TestNewWorksInTheCurrentDirectory). The
// hint's "where it was made" restores it in R, and its --accept-drift
// restores it into a new directory of its own (not materialize_failed),
// leaving R's files where they are; a plain restore then works. The same
// through run (whose hint carries "-- INPUT"), and through the TUI's way
// (a host started with --accept-drift --accepted-by "tui confirm", as the
// TUI's confirm dialog starts it).
func TestDriftHintsForAPlacementOverride(t *testing.T) {
	for _, via := range []string{"restore", "run", "tui"} {
		t.Run(via, func(t *testing.T) {
			h := newHarness(t)
			h.writeConfig("default_profile = \"pinned\"\n[profiles.pinned]\nplacement = \"session\"\ncheckpoint = \"off\"\n")
			root, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			id := h.newSession("--placement", "exclusive", "--root", root)
			h.must(0, "run", id, "--in-process", "--placement", "exclusive", "--root", root, "--", "echo made > made.txt")
			if !exists(filepath.Join(root, "made.txt")) {
				t.Fatal("the turn did not run in the root")
			}

			var refused result
			switch via {
			case "run":
				refused = h.must(125, "run", id, "--", "true")
			default:
				refused = h.must(3, "restore", id)
			}
			hint := hintOf(t, refused.stderr)
			if via == "tui" {
				// The TUI's remedy names the same restore where it was
				// made; its accept starts a host as below.
				hint = "looprig restore " + id[:8] + " --placement exclusive --root " + root
			}
			cmds := hintCommands(t, hint, map[string]string{"INPUT": "true"})
			wantCmds := 2
			if via == "tui" {
				wantCmds = 1
			}
			if len(cmds) != wantCmds {
				t.Fatalf("hint %q names %d commands, want %d", hint, len(cmds), wantCmds)
			}
			if !strings.Contains(hint, "--placement exclusive --root "+root) {
				t.Errorf("the hint does not say where the session was made: %q", hint)
			}
			if via == "run" && !strings.Contains(hint, "-- INPUT") {
				t.Errorf("run's hint names a run without input: %q", hint)
			}

			// Where it was made: restored in the root, nothing adopted.
			if via == "run" {
				h.must(0, cmds[0]...)
				h.must(0, "stop", id) // run leaves it live in the host it started
			} else if v := decode[restoredJSON](t, h.must(0, append(cmds[0], "--json")...).stdout); len(v.Adopted) != 0 {
				t.Errorf("restore where it was made adopted %+v", v.Adopted)
			}

			// Accepting the drift: a new, empty directory of its own.
			switch via {
			case "tui":
				p := h.start("host", id, "--accept-drift", "--accepted-by", "tui confirm")
				waitUntil(t, "the host serves the session, or exits", func() bool {
					select {
					case <-p.reap():
						t.Fatalf("the host exited before it served the session: %s", p.stderr.String())
					default:
					}
					return h.row(id).State == "live"
				})
				h.must(0, "stop", id)
				if code := p.wait(t, 20*time.Second); code != 0 {
					t.Fatalf("the host exited %d: %s", code, p.stderr.String())
				}
			case "run":
				h.must(0, cmds[1]...)
				h.must(0, "stop", id)
			default:
				v := decode[restoredJSON](t, h.must(0, append(cmds[1], "--json")...).stdout)
				if v.Workspace == nil || !v.Workspace.New || v.Workspace.MovedFrom != root {
					t.Errorf("the accepted restore's workspace: %+v; want a new directory, moved from %s", v.Workspace, root)
				}
			}
			ws := filepath.Join(h.store, "workspaces", id)
			fi, err := os.Stat(ws)
			if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Fatalf("the session's new workspace %s: %v, %v; want a 0700 directory", ws, fi, err)
			}
			if !exists(filepath.Join(root, "made.txt")) {
				t.Error("the files where the session worked were not left there")
			}
			adopted := 0
			for _, rec := range h.log(id) {
				if rec.Type == "ConfigurationAdopted" {
					adopted++
				}
			}
			if adopted != 1 {
				t.Errorf("%d ConfigurationAdopted after the accepted restore, want 1", adopted)
			}
			// Accepted once: the plain restore that was refused works now,
			// in the new directory.
			h.must(0, "run", id, "--in-process", "--", "echo here > here.txt")
			if !exists(filepath.Join(ws, "here.txt")) {
				t.Error("a turn after the accepted restore did not run in the new directory")
			}
		})
	}
}

// A session whose exclusive root another session holds: the hint's
// "restore it into another directory" works for a session made with
// --placement/--root (where it named --root alone, a usage error before),
// and for an exclusive profile with checkpoints, whose last checkpoint
// it brings back into the new directory, empty or missing.
func TestRootBusyHintRestoresIntoAnotherDirectory(t *testing.T) {
	cases := []struct {
		name       string
		checkpoint bool
		missing    bool // DIR does not exist yet
	}{
		{"placement override", false, false},
		{"profile with checkpoints, empty DIR", true, false},
		{"profile with checkpoints, new DIR", true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			root, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"--placement", "exclusive", "--root", root}
			if c.checkpoint {
				h.writeConfig("[profiles.ex]\nplacement = \"exclusive\"\nroot = \"" + root + "\"\ncheckpoint = \"stop\"\n")
				args = []string{"--rig", "ex"}
			}
			a := h.newSession(args...)
			h.must(0, append(append([]string{"run", a, "--in-process"}, args...), "--", "echo a > a.txt")...)
			h.detached(args...) // now holds the root

			r := h.must(4, append([]string{"restore", a}, args...)...)
			hint := hintOf(t, r.stderr)
			dir := filepath.Join(t.TempDir(), "elsewhere")
			if !c.missing {
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			cmds := hintCommands(t, hint, map[string]string{"DIR": dir})
			if len(cmds) != 1 {
				t.Fatalf("hint %q names %d commands, want 1", hint, len(cmds))
			}
			v := decode[restoredJSON](t, h.must(0, append(cmds[0], "--json")...).stdout)
			if c.checkpoint {
				if v.Workspace == nil || !v.Workspace.Materialized || v.Workspace.Files != 1 {
					t.Errorf("workspace %+v: want the last checkpoint brought back", v.Workspace)
				}
				if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "a\n" {
					t.Errorf("a.txt in the new directory: %q, %v", b, err)
				}
			}
			h.must(0, "run", a, "--in-process", "--root", dir, "--placement", "exclusive", "--", "echo b > b.txt")
			if !exists(filepath.Join(dir, "b.txt")) {
				t.Error("the session does not work in the directory it was restored into")
			}
			if !exists(filepath.Join(root, "a.txt")) {
				t.Error("the busy root lost a file")
			}
		})
	}
}

// A restore refused for drift of the engine, and for a profile that is
// gone: each command the hint names runs (through restore and through
// run), with the profile name the hint names or one the user picks.
func TestDriftHintsForTheProfile(t *testing.T) {
	t.Run("engine changed, --rig named", func(t *testing.T) {
		h := newHarness(t)
		id := h.newSession()
		r := h.must(3, "restore", id, "--rig", "demo")
		hint := hintOf(t, r.stderr)
		if !strings.Contains(hint, "--rig default") {
			t.Errorf("the hint does not name the profile the session was made with: %q", hint)
		}
		cmds := hintCommands(t, hint, nil)
		if len(cmds) != 2 {
			t.Fatalf("hint %q names %d commands", hint, len(cmds))
		}
		h.must(0, cmds[0]...)
		h.must(0, cmds[1]...)
	})
	t.Run("engine changed, run", func(t *testing.T) {
		h := newHarness(t)
		h.writeConfig("[profiles.work]\n")
		id := h.newSession("--rig", "work")
		h.writeConfig("[profiles.work]\nengine = \"demo\"\n")
		r := h.must(125, "run", id, "--", "true")
		hint := hintOf(t, r.stderr)
		cmds := hintCommands(t, hint, map[string]string{"INPUT": "true", "NAME": "default"})
		if len(cmds) != 2 {
			t.Fatalf("hint %q names %d commands", hint, len(cmds))
		}
		h.must(0, inProcess(cmds[0])...) // the profile it was made with: the shell
		h.must(0, inProcess(cmds[1])...) // the demo engine, accepted
	})
	t.Run("profile gone, run", func(t *testing.T) {
		h := newHarness(t)
		h.writeConfig("[profiles.work]\n")
		id := h.newSession("--rig", "work")
		h.writeConfig("")
		r := h.must(125, "run", id, "--", "true")
		hint := hintOf(t, r.stderr)
		cmds := hintCommands(t, hint, map[string]string{"INPUT": "true", "NAME": "default"})
		if len(cmds) != 1 {
			t.Fatalf("hint %q names %d commands", hint, len(cmds))
		}
		h.must(0, inProcess(cmds[0])...)
	})
}
