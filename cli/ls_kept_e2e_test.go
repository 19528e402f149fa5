package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stillStore waits past the settling of the store's last change, so that
// the next ls trusts the store's durable stamp.
func stillStore() { time.Sleep(300 * time.Millisecond) }

// ls keeps its listing for the next ls while the store stands still, and
// a kept listing is never wrong: a host stopped, resumed or killed since
// is seen (its liveness is asked again), a session created or removed is
// seen (the store's stamp moved).
func TestLsKeptListing(t *testing.T) {
	h := newHarness(t)
	live, pid := h.detached()
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	idle := h.newSession("--title", "idle-one")
	stillStore()
	h.ls() // lists, keeps (and makes the cache directory: the stamp moves)
	stillStore()
	h.ls() // lists, keeps
	stillStore()

	kept := filepath.Join(h.store, "cache", "listing.json")
	b, err := os.ReadFile(kept)
	if err != nil {
		t.Fatalf("no kept listing: %v", err)
	}
	for path, want := range map[string]os.FileMode{kept: 0o600, filepath.Dir(kept): 0o700} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", path, fi.Mode(), err, want)
		}
	}
	// The next ls takes the kept listing: a title changed in the file
	// shows (the test's only way to see which listing ls took).
	if !bytes.Contains(b, []byte(`"idle-one"`)) {
		t.Fatalf("the kept listing has no title idle-one:\n%s", b)
	}
	if err := os.WriteFile(kept, bytes.ReplaceAll(b, []byte(`"idle-one"`), []byte(`"from-the-kept-listing"`)), 0o600); err != nil {
		t.Fatal(err)
	}
	if row := h.row(idle); row.Title != "from-the-kept-listing" {
		t.Fatalf("ls with the store still: title %q, want the kept listing's", row.Title)
	}

	// Liveness is asked again of a kept listing's holders.
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, pid)
	if row := h.row(live); row.State != "held" || !strings.Contains(row.Reason, "not answering") {
		t.Errorf("ls of a stopped host, from a kept listing: %s %q, want held, not answering", row.State, row.Reason)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if row := h.row(live); row.State != "live" {
		t.Errorf("ls after SIGCONT, from a kept listing: %s, want live", row.State)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExit(t, pid)
	if row := h.row(live); row.State != "crashed" {
		t.Errorf("ls after SIGKILL of the host: %s, want crashed", row.State)
	}

	// A session created, then one removed: the stamp moved, listed again.
	stillStore()
	other := h.newSession("--title", "other-one")
	stillStore()
	if row := h.row(other); row.Title != "other-one" {
		t.Errorf("a session created since: title %q", row.Title)
	}
	if row := h.row(idle); row.Title != "idle-one" {
		t.Errorf("after a change, the kept listing's title is still shown: %q", row.Title)
	}
	h.must(0, "rm", idle, "--yes")
	stillStore()
	for _, r := range h.ls() {
		if r.ID == idle {
			t.Errorf("a session removed since the listing was kept is still listed")
		}
	}
}
