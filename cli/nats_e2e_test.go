package cli_test

// End-to-end tests of --store nats://HOST:PORT: the real binary against an
// embedded NATS server living in this test process.

import (
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"looprig/natsstore/embedded"
)

func newNATSHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t)
	srv, err := embedded.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	h.store = srv.URL()
	t.Cleanup(h.killHosts) // before the server goes: ls needs it
	return h
}

// Hosting works the same on a NATS store: the socket is local, the lease
// is the store's.
func TestNATSHost(t *testing.T) {
	h := newNATSHarness(t)
	id, pid := h.detached("--title", "over nats")
	if row := h.row(id); row.State != "live" || row.Holder == nil || row.Holder.PID != pid {
		t.Fatalf("ls after new --detach on NATS: %+v, want live held by %d", row, pid)
	}
	r := h.must(3, "run", id, "--", "echo via host; exit 3")
	if r.stdout != "via host\n" {
		t.Fatalf("run through the host: stdout %q", r.stdout)
	}
	if row := h.row(id); row.State != "live" {
		t.Fatalf("after run through the host: %s, want still live", row.State)
	}
	h.must(0, "stop", id)
	waitExit(t, pid)
	if row := h.row(id); row.State != "idle" {
		t.Fatalf("after stop: %s, want idle", row.State)
	}
}

// The commands work the same on a NATS store: a crashed session (demo's
// SIGKILLed helper) is seen as crashed at once and restores; a session held
// by another process shows its holder and epoch and cannot be restored
// until its lease is broken; turns run.
func TestNATSStore(t *testing.T) {
	h := newNATSHarness(t)
	h.must(0, "demo")
	rows := h.ls()
	if len(rows) != 1 || rows[0].State != "crashed" {
		t.Fatalf("ls after demo: %+v", rows)
	}
	r := h.must(0, "restore", rows[0].ShortID)
	if !strings.Contains(r.stdout, "interrupted 1 turn") || !strings.Contains(r.stdout, "| line 3") {
		t.Fatalf("restore of the demo session:\n%s", r.stdout)
	}

	id := h.newSession()
	holder := h.start("restore", id, "--hold")
	holder.waitLine(t, "holding session")
	pid := holder.cmd.Process.Pid
	row := h.row(id)
	if row.State != "held" || row.Holder == nil || row.Holder.PID != pid || row.Epoch != 2 {
		t.Fatalf("ls while held by pid %d: %+v", pid, row)
	}
	r = h.must(4, "restore", id, "--json")
	e := decode[errorShape](t, r.stdout)
	if e.Error.Kind != "lease_failed" || e.Error.HolderEpoch != row.Epoch || e.Error.Holder.PID != pid {
		t.Fatalf("restore of a held session: %s", r.stdout)
	}
	start := time.Now()
	h.must(0, "lease", "break", id, "--yes")
	if code := holder.wait(t, 5*time.Second); code == 0 || !strings.Contains(holder.stderr.String(), "LEASE LOST") {
		t.Fatalf("holder exited %d after the break; stderr: %s", code, holder.stderr.String())
	}
	t.Logf("holder noticed the break in %s", time.Since(start).Round(time.Millisecond))
	if r := h.must(0, "run", id, "--", "echo", "over-nats"); !strings.Contains(r.stdout, "over-nats") {
		t.Fatalf("run: %s", r.stdout)
	}
	if row := h.row(id); row.State != "live" { // in the host run started
		t.Fatalf("after run: %+v, want live", row)
	}
	h.must(0, "stop", id)

	// A holder that is stopped cleanly releases at once.
	holder = h.start("restore", id, "--hold")
	holder.waitLine(t, "holding session")
	holder.cmd.Process.Signal(syscall.SIGINT)
	if code := holder.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("holder exited %d after SIGINT", code)
	}
	if row := h.row(id); row.State != "idle" {
		t.Fatalf("after the holder's SIGINT: %+v", row)
	}
}

// An unreachable server and credentials on the command line are clear
// errors.
func TestNATSStoreErrors(t *testing.T) {
	h := newHarness(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	h.store = "nats://" + addr
	r := h.must(1, "ls", "--json")
	e := decode[errorShape](t, r.stdout)
	if e.Error.Kind != "store_unavailable" || !strings.Contains(e.Error.Message, "cannot reach the NATS server") {
		t.Fatalf("unreachable server: %s", r.stdout)
	}
	h.store = "nats://user:hunter2@" + addr
	r = h.must(1, "ls")
	if strings.Contains(r.stdout+r.stderr, "hunter2") || !strings.Contains(r.stderr, "NATS_CREDS") {
		t.Fatalf("credentials in the URL: %s", r.stderr)
	}
}
