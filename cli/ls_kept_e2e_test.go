package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"looprig/internal/tmuxtest"
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

// The TUI's first frame starts from the kept listing too, and its next
// refresh lists in full: the kept title gives way to the real one, and a
// host killed afterwards is seen crashed at the next refresh, not at the
// next liveness question 30 s later (the full listing's probes watch the
// holder).
func TestTUIStartsFromKeptListing(t *testing.T) {
	if testing.Short() {
		t.Skip("tmux end-to-end tests are slow; skipped with -short")
	}
	h := newHarness(t)
	live, pid := h.detached() // listed below the idle one: not selected, not attached to
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	stillStore()
	idle := h.newSession("--title", "idle-one")
	// A TUI ran here before: its first run makes its files in the store's
	// directory (tui.log, tui/), which moves the store's stamp.
	srv := tmuxtest.New(t)
	looprigPane(h, srv, "first", 200, 40, "")
	srv.WaitFor("first", screenWait, "idle-one", live[:8])
	srv.Type("first", "q")
	srv.WaitFor("first", screenWait, "[exit 0]")
	stillStore()
	h.ls()
	stillStore()
	h.ls()
	stillStore()
	kept := filepath.Join(h.store, "cache", "listing.json")
	b, err := os.ReadFile(kept)
	if err != nil || !bytes.Contains(b, []byte(`"idle-one"`)) {
		t.Fatalf("the kept listing: %v\n%s", err, b)
	}
	if err := os.WriteFile(kept, bytes.ReplaceAll(b, []byte(`"idle-one"`), []byte(`"from-the-kept-listing"`)), 0o600); err != nil {
		t.Fatal(err)
	}

	looprigPane(h, srv, "tui", 200, 40, "")
	srv.WaitFor("tui", screenWait, "from-the-kept-listing", live[:8])
	waitRow(t, srv, "tui", idle[:8], "idle-one", 10*time.Second) // the next refresh lists in full
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExit(t, pid)
	waitRow(t, srv, "tui", live[:8], "crashed", 10*time.Second)
}

// waitRow waits until the line of pane name that shows short (a session's
// row) holds want, failing past limit.
func waitRow(t *testing.T, srv *tmuxtest.Server, name, short, want string, limit time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		screen := srv.Run("capture-pane", "-p", "-t", name)
		for _, l := range strings.Split(screen, "\n") {
			if strings.Contains(l, short) && strings.Contains(l, want) {
				return
			}
		}
		if time.Since(start) > limit {
			t.Fatalf("the row of %s does not show %q after %s:\n%s", short, want, limit, screen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
