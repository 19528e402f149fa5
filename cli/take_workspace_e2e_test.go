package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// take of a session whose holder does not checkpoint its workspace
// (exclusive placement, whose default is checkpoint = "off") is refused
// before anything is asked of the holder, saying why and the two ways on;
// with --without-workspace it is taken, saying the files stayed behind. A
// profile that checkpoints at a stop is handed over without a word.
func TestTakeWithoutCheckpointsRefuses(t *testing.T) {
	a, b := twoHomesOnNATS(t)
	root := t.TempDir()
	config := fmt.Sprintf(`[profiles.work]
placement = "exclusive"
root = %q
checkpoint = "off"

[profiles.travel]
placement = "exclusive"
root = %q
checkpoint = "stop"
`, filepath.Join(root, "work"), filepath.Join(root, "travel"))
	a.writeConfig(config)
	b.writeConfig(config)
	for _, d := range []string{"work", "travel"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}

	id, aPID := a.detached("--rig", "work")
	short := id[:8]
	r := b.run("take", id)
	if r.code != 1 ||
		!strings.Contains(r.stderr, fmt.Sprintf(`session %s does not checkpoint its workspace (checkpoint = "off" in profile "work"): its files would not come with it`, short)) ||
		!strings.Contains(r.stderr, "take "+short+" --without-workspace") || !strings.Contains(r.stderr, `set checkpoint = "stop" in profile "work"`) ||
		strings.Contains(r.stderr, "asked pid") {
		t.Fatalf("take of a session that does not checkpoint: exit %d\n%s", r.code, r.stderr)
	}
	r = b.run("take", id, "--json")
	e := decode[struct {
		Error struct {
			Type      string `json:"type"`
			Kind      string `json:"kind"`
			Session   string `json:"session"`
			Profile   string `json:"profile"`
			Placement string `json:"placement"`
			Hint      string `json:"hint"`
		} `json:"error"`
	}](t, r.stdout).Error
	if r.code != 1 || e.Type != "HandOffWithoutWorkspaceError" || e.Kind != "workspace_not_checkpointed" || e.Session != id ||
		e.Profile != "work" || e.Placement != "exclusive" || !strings.Contains(e.Hint, "--without-workspace") {
		t.Fatalf("take --json: exit %d %s", r.code, r.stdout)
	}
	// Nothing was asked of the holder: it serves on, nothing journaled.
	if row := a.row(id); row.State != "live" || row.Holder == nil || row.Holder.PID != aPID {
		t.Fatalf("after the refusal the session is %+v, want live in A's host %d", row, aPID)
	}
	for _, rec := range a.log(id) {
		if rec.Type == "HandedOff" || rec.Type == "SessionStopped" {
			t.Fatalf("the refused take reached the holder: %s in the journal", rec.Type)
		}
	}

	r = b.must(0, "take", id, "--without-workspace")
	if !strings.Contains(r.stderr, "taken anyway (--without-workspace): its turns here run in "+filepath.Join(root, "work")) {
		t.Errorf("take --without-workspace says:\n%s", r.stderr)
	}
	waitExit(t, aPID)
	if row := b.row(id); row.State != "live" {
		t.Errorf("after take --without-workspace: %+v", row)
	}
	b.must(0, "stop", id)

	// A profile that checkpoints at a stop hands its workspace over.
	id2, pid2 := a.detached("--rig", "travel")
	a.must(0, "run", id2, "--", "echo travelled > note.txt")
	r = b.must(0, "take", id2)
	if strings.Contains(r.stderr, "does not checkpoint") {
		t.Errorf("take of a profile that checkpoints at a stop:\n%s", r.stderr)
	}
	waitExit(t, pid2)
	if r := b.must(0, "run", id2, "--", "cat note.txt"); r.stdout != "travelled\n" {
		t.Errorf("the file on B: %q", r.stdout)
	}
	b.must(0, "stop", id2)
}
