package cli_test

import (
	"strings"
	"testing"
)

// diff shows what a turn changed, from the checkpoints the session's host
// took, as a user reads it: a unified diff of an edit, lines for a file
// added, removed and made executable, --stat, --json; a file name from
// the turn cannot reach the terminal with its escape sequence; a running
// turn and a turn that does not exist are errors that say so.
func TestDiffOfTurns(t *testing.T) {
	h := newHarness(t)
	id, _ := h.detached()
	h.stopWhenDone(id)
	h.must(0, "run", id, "--", `printf 'one\ntwo\nthree\n' > f.txt && printf 'bye\n' > gone.txt && printf '#!/bin/sh\n' > tool && touch "$(printf 'evil\033]52;c;eA==\007name')"`)
	h.must(0, "run", id, "--", `printf 'one\nTWO\nthree\n' > f.txt && rm gone.txt && chmod 755 tool && printf 'new\n' > added.txt`)
	// At once: run returns at the turn's end, the checkpoint comes after
	// it, and diff waits for it.

	last := h.must(0, "diff", id).stdout
	// ls tells the checkpoint's size and age: -l as a column, --json as an
	// object (the catalog keeps it).
	rows := decode[[]struct {
		ID         string `json:"id"`
		Checkpoint *struct {
			Manifest string `json:"manifest"`
			Files    int    `json:"files"`
			Bytes    int64  `json:"bytes"`
		} `json:"checkpoint"`
	}](t, h.must(0, "ls", "--json").stdout)
	if len(rows) != 1 || rows[0].Checkpoint == nil || rows[0].Checkpoint.Files != 4 || rows[0].Checkpoint.Bytes != 28 || len(rows[0].Checkpoint.Manifest) != 64 {
		t.Errorf("ls --json checkpoint: %+v", rows)
	}
	if l := h.must(0, "ls", "-l").stdout; !strings.Contains(l, "CHECKPOINT") || !strings.Contains(l, "4 files, 28 B, ") {
		t.Errorf("ls -l:\n%s", l)
	}
	for _, want := range []string{"diff f.txt (modified)", "-two", "+TWO", "diff gone.txt (removed", "diff tool (mode changed, mode 0644 → 0755)", "diff added.txt (added, mode 0644)", "+new"} {
		if !strings.Contains(last, want) {
			t.Errorf("diff of the last turn lacks %q:\n%s", want, last)
		}
	}
	first := h.must(0, "diff", id, "--turn", "0", "--stat").stdout
	if !strings.Contains(first, " f.txt ") || !strings.Contains(first, "4 files changed, 5 insertions(+), 0 deletions(-)") {
		t.Errorf("diff --turn 0 --stat:\n%s", first)
	}
	if strings.ContainsAny(first, "\x1b\x07") || strings.ContainsAny(h.must(0, "diff", id, "--turn", "0").stdout, "\x1b\x07") {
		t.Errorf("a file name's escape sequence reached the output:\n%q", first)
	}

	js := decode[struct {
		Turn    int `json:"turn"`
		Changes []struct {
			Path, Kind       string
			OldMode, NewMode string `json:"-"`
			LinesAdded       int    `json:"lines_added"`
		} `json:"changes"`
	}](t, h.must(0, "diff", id, "--json", "--turn", "1").stdout)
	kinds := map[string]string{}
	for _, c := range js.Changes {
		kinds[c.Path] = c.Kind
	}
	if js.Turn != 1 || kinds["f.txt"] != "modified" || kinds["gone.txt"] != "removed" || kinds["tool"] != "mode changed" || kinds["added.txt"] != "added" || len(kinds) != 4 {
		t.Errorf("diff --json --turn 1: turn %d, %v", js.Turn, kinds)
	}

	// gc keeps every blob a recorded checkpoint references.
	gc := decode[struct {
		Referenced int `json:"referenced"`
		Deleted    int `json:"deleted"`
	}](t, h.must(0, "gc", "--json").stdout)
	if gc.Referenced < 5 || gc.Deleted != 0 {
		t.Errorf("gc --json: %+v; want the 2 snapshots, their 2 tree packs and the packs of the files kept, nothing deleted", gc)
	}
	if d := h.must(0, "diff", id, "--turn", "0", "--stat").stdout; d != first {
		t.Errorf("diff --turn 0 --stat after gc:\n%s\nbefore:\n%s", d, first)
	}
	if r := h.run("diff", id, "--turn", "7"); r.code == 0 || !strings.Contains(r.stderr, "has no turn 7") {
		t.Errorf("diff of a turn that does not exist: exit %d, %s", r.code, r.stderr)
	}
	h.must(0, "run", id, "--detach", "--", "sleep 30")
	if r := h.run("diff", id); r.code == 0 || !strings.Contains(r.stderr, "has not ended") {
		t.Errorf("diff of a running turn: exit %d, %s", r.code, r.stderr)
	}
}
