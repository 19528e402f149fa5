package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A crashed session whose exclusive root another live session holds: the
// restore is refused as a lease failure (exit 4) naming the root and its
// holder, and journals nothing after its fence but RestoreErrored — in
// particular not the crashed turn's TurnInterrupted. Once the holder lets
// go, the restore works.
func TestRestoreRootBusy(t *testing.T) {
	h := newHarness(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.toml")
	profile := fmt.Sprintf("[profiles.ex]\nengine = \"shell\"\nplacement = \"exclusive\"\nroot = %q\n", root)
	if err := os.WriteFile(cfg, []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	crashed := h.newSession("--config", cfg, "--rig", "ex")
	p := h.start("--config", cfg, "run", crashed, "--", `echo started; sleep 100`)
	p.waitLine(t, "started")
	h.killHostOf(crashed) // the host run started for it
	p.wait(t, 10*time.Second)
	if row := h.row(crashed); row.State != "crashed" {
		t.Fatalf("after SIGKILL: %+v", row)
	}

	other := h.newSession("--config", cfg, "--rig", "ex")
	holder := h.start("--config", cfg, "restore", other, "--hold", "--json")
	holder.waitLine(t, `"epoch"`)
	defer holder.cmd.Process.Kill()

	before := len(h.log(crashed))
	r := h.must(4, "--config", cfg, "restore", crashed, "--json")
	e := decode[struct {
		Error struct {
			Type        string `json:"type"`
			Kind        string `json:"kind"`
			CauseType   string `json:"cause_type"`
			Root        string `json:"root"`
			HolderEpoch uint64 `json:"holder_epoch"`
			Holder      struct {
				PID int `json:"pid"`
			} `json:"holder"`
		} `json:"error"`
	}](t, r.stdout)
	if e.Error.Type != "RestoreError" || e.Error.Kind != "lease_failed" || e.Error.CauseType != "WorkspaceRootBusyError" ||
		e.Error.Root != root || e.Error.HolderEpoch == 0 || e.Error.Holder.PID != holder.cmd.Process.Pid {
		t.Fatalf("restore into a busy root, --json: %s (holder pid %d, root %s)", r.stdout, holder.cmd.Process.Pid, root)
	}
	r = h.must(4, "--config", cfg, "restore", crashed)
	if !strings.Contains(r.stderr, "workspace root "+root+" is held by another session (pid "+fmt.Sprint(holder.cmd.Process.Pid)+"@") ||
		!strings.Contains(r.stderr, fmt.Sprintf("root-lease epoch %d", e.Error.HolderEpoch)) {
		t.Fatalf("restore into a busy root, human: %s", r.stderr)
	}
	recs := h.log(crashed)
	for _, rec := range recs[before:] {
		if rec.Kind != "fence" && rec.Type != "RestoreErrored" {
			t.Fatalf("the refused restores journaled %v after their fences", types(recs[before:]))
		}
	}
	if row := h.row(crashed); row.State != "crashed" {
		t.Fatalf("after the refused restores: %+v, want still crashed (and its lease free)", row)
	}

	holder.cmd.Process.Signal(syscall.SIGINT)
	if code := holder.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("holder exited %d after SIGINT", code)
	}
	r = h.must(0, "--config", cfg, "restore", crashed, "--json")
	if !strings.Contains(r.stdout, `"interrupted":["`) {
		t.Fatalf("restore after the holder stopped: %s", r.stdout)
	}
}
