package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"looprig/internal/agenttest"
)

// forkOut is what fork --json prints.
type forkOut struct {
	ID         string `json:"id"`
	Title      string `json:"title"`
	Workspace  string `json:"workspace"`
	ForkedFrom struct {
		Session      string `json:"session"`
		TurnIndex    int    `json:"turn_index"`
		TurnID       string `json:"turn_id"`
		Checkpoint   string `json:"checkpoint"`
		Conversation string `json:"conversation"`
	} `json:"forked_from"`
	Files              int    `json:"files"`
	Bytes              int64  `json:"bytes"`
	Conversation       string `json:"conversation"`
	ConversationForked bool   `json:"conversation_forked"`
}

// fork of a shell session, as a user tries it: --turn 0 and the default
// (the last turn) hold the files as after that turn, each in a directory of
// its own; the source goes on with its own; the fork's turns run in its
// files; ls -l, ls --json and log say where it came from; a turn that
// does not exist and a --root that is not empty are errors that say so,
// an empty --root takes the files.
func TestForkShellSession(t *testing.T) {
	h := newHarness(t)
	id := h.newSession("--title", "src")
	h.must(0, "run", id, "--", `printf 'one\n' > a.txt && printf 'b\n' > b.sh && mkdir d && printf 'deep\n' > d/f.txt`)
	h.must(0, "run", id, "--", `printf 'two\n' > a.txt && chmod 755 b.sh && rm -r d && printf 'new\n' > n.txt`)

	f0 := decode[forkOut](t, h.must(0, "fork", id, "--turn", "0", "--json").stdout)
	if f0.ForkedFrom.Session != id || f0.ForkedFrom.TurnIndex != 0 || len(f0.ForkedFrom.Checkpoint) != 64 || f0.Files != 3 || f0.Title != "src (fork)" {
		t.Errorf("fork --turn 0 --json: %+v", f0)
	}
	read := func(dir, name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return string(b)
	}
	if read(f0.Workspace, "a.txt") != "one\n" || read(f0.Workspace, "d/f.txt") != "deep\n" || read(f0.Workspace, "n.txt") != "" {
		t.Errorf("the fork at turn 0 in %s: a.txt %q, d/f.txt %q, n.txt %q", f0.Workspace, read(f0.Workspace, "a.txt"), read(f0.Workspace, "d/f.txt"), read(f0.Workspace, "n.txt"))
	}
	if fi, err := os.Stat(filepath.Join(f0.Workspace, "b.sh")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("b.sh in the fork at turn 0: %v, %v; want mode 0644", fi, err)
	}

	r := h.must(0, "fork", id, "--title", "last")
	f1 := strings.TrimSpace(r.stdout)
	if !strings.Contains(r.stderr, "forked session "+f1[:8]+" from "+id[:8]+" at turn 1 (files as after turn 1: 3 files, ") {
		t.Errorf("fork's stderr: %q", r.stderr)
	}
	if out := h.must(0, "run", f1, "--", "cat a.txt && ls -l b.sh && test ! -e d && echo fork-ok").stdout; !strings.Contains(out, "two") || !strings.Contains(out, "-rwxr-xr-x") || !strings.Contains(out, "fork-ok") {
		t.Errorf("a turn in the fork at the last turn: %q", out)
	}
	if out := h.must(0, "run", f0.ID, "--", "cat a.txt && printf 'mine\n' > a.txt").stdout; !strings.Contains(out, "one") {
		t.Errorf("a turn in the fork at turn 0: %q", out)
	}
	if out := h.must(0, "run", id, "--", "cat a.txt").stdout; !strings.Contains(out, "two") {
		t.Errorf("the source after its forks' turns: %q", out)
	}

	rows := decode[[]struct {
		ID         string `json:"id"`
		ForkedFrom *struct {
			Session   string `json:"session"`
			TurnIndex int    `json:"turn_index"`
		} `json:"forked_from"`
	}](t, h.must(0, "ls", "--json").stdout)
	forks := 0
	for _, row := range rows {
		switch {
		case row.ID == id && row.ForkedFrom != nil:
			t.Errorf("the source is listed as a fork: %+v", row.ForkedFrom)
		case row.ID == f0.ID && (row.ForkedFrom == nil || row.ForkedFrom.Session != id || row.ForkedFrom.TurnIndex != 0),
			row.ID == f1 && (row.ForkedFrom == nil || row.ForkedFrom.TurnIndex != 1):
			t.Errorf("ls --json: %s forked_from %+v", row.ID, row.ForkedFrom)
		case row.ForkedFrom != nil:
			forks++
		}
	}
	if forks != 2 {
		t.Errorf("ls --json lists %d forks, want 2: %+v", forks, rows)
	}
	if l := h.must(0, "ls", "-l").stdout; !strings.Contains(l, "FORKED FROM") || !strings.Contains(l, id[:8]+" turn 0") || !strings.Contains(l, id[:8]+" turn 1") {
		t.Errorf("ls -l:\n%s", l)
	}
	if lg := h.must(0, "log", f1, "--json").stdout; !strings.Contains(lg, `"forked_from":{"session":"`+id+`","turn_index":1,`) || !strings.Contains(lg, `"trigger":"fork"`) {
		t.Errorf("the fork's log:\n%s", lg)
	}

	e := h.run("fork", id, "--turn", "9", "--json")
	if e.code != 1 || !strings.Contains(e.stdout, `"type":"ForkError"`) || !strings.Contains(e.stdout, `"kind":"not_forkable"`) || !strings.Contains(e.stdout, "has no turn 9") {
		t.Errorf("fork --turn 9: exit %d\n%s\n%s", e.code, e.stdout, e.stderr)
	}
	busy := t.TempDir()
	if err := os.WriteFile(filepath.Join(busy, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if e := h.run("fork", id, "--root", busy); e.code != 1 || !strings.Contains(e.stderr, "is not an empty directory") {
		t.Errorf("fork --root (not empty): exit %d\n%s", e.code, e.stderr)
	}
	root := filepath.Join(t.TempDir(), "elsewhere")
	fr := decode[forkOut](t, h.must(0, "fork", id, "--turn", "0", "--root", root, "--json").stdout)
	if fr.Workspace != root || read(root, "a.txt") != "one\n" {
		t.Errorf("fork --root %s: workspace %s, a.txt %q", root, fr.Workspace, read(root, "a.txt"))
	}
	if out := h.must(0, "run", fr.ID, "--", "cat d/f.txt").stdout; !strings.Contains(out, "deep") {
		t.Errorf("a turn in the fork in %s: %q", root, out)
	}

	fd := decode[struct {
		ID        string `json:"id"`
		PID       int    `json:"pid"`
		Detached  bool   `json:"detached"`
		Workspace string `json:"workspace"`
	}](t, h.must(0, "fork", id, "--turn", "0", "--detach", "--json").stdout)
	if row := h.row(fd.ID); !fd.Detached || fd.PID == 0 || row.State != "live" || read(fd.Workspace, "a.txt") != "one\n" {
		t.Errorf("fork --detach: %+v, listed %s", fd, row.State)
	}
	h.must(0, "stop", fd.ID)
}

// fork of a Claude Code session (the real CLI, a scripted model): the
// fork at turn 1 has the file turn 1's tool call made and continues the
// conversation as it was after turn 1 (its request carries turns 0 and 1,
// not turn 2), under a conversation id of its own; the fork at turn 0 has
// no such file; the source's next turn continues its own conversation,
// which the forks' turns did not touch.
func TestForkAgentSession(t *testing.T) {
	claude := agenttest.Claude(t)
	h := newHarness(t)
	script := newAgentScript()
	srv := agenttest.NewServer(t, script.answer)
	t.Cleanup(func() { close(script.hanging) })
	agentHome(t, h, srv, claude)

	id, ws := h.newAgentSession()
	h.stopWhenDone(id)
	h.must(0, "run", id, "--", "remember the word apple")
	h.must(0, "run", id, "--detach", "--", "please use the tool")
	h.waitCount(id, "GateOpened", 1)
	h.must(0, "gate", id, "approve")
	h.waitTurnEnd(id, 2)
	h.must(0, "run", id, "--", "remember the word banana")
	if b, err := os.ReadFile(filepath.Join(ws, "made.txt")); err != nil || string(b) != "made\n" {
		t.Fatalf("made.txt in the source: %q, %v", b, err)
	}

	f1 := decode[forkOut](t, h.must(0, "fork", id, "--turn", "1", "--json").stdout)
	if !f1.ConversationForked || len(f1.Conversation) != 36 {
		t.Fatalf("fork --turn 1 --json: %+v; want a forked conversation", f1)
	}
	if b, err := os.ReadFile(filepath.Join(f1.Workspace, "made.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("made.txt in the fork at turn 1: %q, %v", b, err)
	}
	if out := h.must(0, "run", f1.ID, "--", "what was the word?").stdout; !strings.Contains(out, "you said: what was the word?") {
		t.Errorf("the fork's turn: %q", out)
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	if !last.Carries("remember the word apple") || !last.Carries("the tool said: ") || last.Carries("remember the word banana") {
		t.Errorf("the fork's request carries apple %v, the tool's turn %v, banana %v; want the conversation as after turn 1",
			last.Carries("remember the word apple"), last.Carries("the tool said: "), last.Carries("remember the word banana"))
	}
	// The fork's transcript names its own conversation on every line, the
	// turns copied from the source's too, as Claude Code's --fork-session
	// writes one.
	paths, _ := filepath.Glob(filepath.Join(h.home, ".claude", "projects", "*", f1.Conversation+".jsonl"))
	if len(paths) != 1 {
		t.Fatalf("the fork's transcript: %v", paths)
	}
	tr, _ := os.ReadFile(paths[0])
	if src := f1.ForkedFrom.Conversation; len(src) != 36 || strings.Contains(string(tr), src) ||
		strings.Count(string(tr), `"sessionId":"`+f1.Conversation+`"`) < 4 || !strings.Contains(string(tr), "remember the word apple") {
		t.Errorf("the fork's transcript (forked from %s):\n%s", src, tr)
	}
	if lg := h.must(0, "log", f1.ID).stdout; !strings.Contains(lg, "claude conversation "+f1.Conversation) || strings.Contains(lg, "Refused") {
		t.Errorf("the fork's log:\n%s", lg)
	}

	r := h.must(0, "fork", id, "--turn", "0")
	f0 := strings.TrimSpace(r.stdout)
	if !strings.Contains(r.stderr, "conversation") || !strings.Contains(r.stderr, "continues the source's") {
		t.Errorf("fork --turn 0 says: %q", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(h.store, "workspaces", f0, "made.txt")); err == nil {
		t.Error("the fork at turn 0 has turn 1's made.txt")
	}
	if out := h.must(0, "run", f0, "--", "what now?").stdout; !strings.Contains(out, "you said: what now?") {
		t.Errorf("the fork at turn 0: %q", out)
	}
	reqs = srv.Requests()
	if last := reqs[len(reqs)-1]; !last.Carries("remember the word apple") || last.Carries("the tool said: ") {
		t.Errorf("the fork at turn 0 carries the tool's turn: %v", last.Carries("the tool said: "))
	}

	if out := h.must(0, "run", id, "--", "and the source?").stdout; !strings.Contains(out, "you said: and the source?") {
		t.Errorf("the source's turn: %q", out)
	}
	reqs = srv.Requests()
	if last := reqs[len(reqs)-1]; !last.Carries("remember the word banana") || last.Carries("what was the word?") || last.Carries("what now?") {
		t.Errorf("the source's request: banana %v, the forks' turns %v %v; want its own conversation only",
			last.Carries("remember the word banana"), last.Carries("what was the word?"), last.Carries("what now?"))
	}
}
