package cli_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"looprig/host"
)

// detached creates a session live in a background host and returns its id
// and the host's pid.
func (h *harness) detached(args ...string) (string, int) {
	h.t.Helper()
	r := h.must(0, append([]string{"new", "--detach", "--json"}, scratchUnlessPlaced(args)...)...)
	v := decode[struct {
		ID       string `json:"id"`
		PID      int    `json:"pid"`
		Detached bool   `json:"detached"`
	}](h.t, r.stdout)
	if v.PID <= 0 || !v.Detached {
		h.t.Fatalf("new --detach --json = %s", r.stdout)
	}
	return v.ID, v.PID
}

// dialHost connects to the host of session id as any client would.
func (h *harness) dialHost(id string) *host.Client {
	h.t.Helper()
	key, err := filepath.EvalSymlinks(h.store)
	if err != nil {
		h.t.Fatal(err)
	}
	path := filepath.Join(h.runtime, "looprig", host.StoreHash(key), id+".sock")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := host.Dial(ctx, path)
	if err != nil {
		h.t.Fatalf("dial the host of %s: %v", id, err)
	}
	h.t.Cleanup(func() { c.Close() })
	return c
}

// waitLog waits until the journal of id has a record of type typ.
func (h *harness) waitLog(id, typ string) []record {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		recs := h.log(id)
		for _, r := range recs {
			if r.Type == typ {
				return recs
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("no %s in the journal of %s: %v", typ, id, types(recs))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func waitExit(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not exit", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A session in a host runs on while clients come and go: attach shows its
// live output and detaches on Ctrl-C without touching the turn; stop shuts
// it down.
func TestHostOutlivesClients(t *testing.T) {
	h := newHarness(t)
	id, pid := h.detached("--title", "hosted")
	if row := h.row(id); row.State != "live" || row.Holder == nil || row.Holder.PID != pid {
		t.Fatalf("ls after new --detach: %+v, want live held by the host %d", row, pid)
	}
	c := h.dialHost(id)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Submit(ctx, "for i in 1 2 3 4 5 6; do echo tick $i; sleep 0.3; done"); err != nil {
		t.Fatal(err)
	}
	a := h.start("attach", id)
	a.waitLine(t, "tick 2")
	if err := a.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := a.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("attach after Ctrl-C: exit %d, want 0 (stderr %q)", code, a.stderr.String())
	}
	if !strings.Contains(a.stderr.String(), "detached") {
		t.Errorf("attach stderr = %q, want it to say it detached", a.stderr.String())
	}
	// The turn went on without the client.
	recs := h.waitLog(id, "TurnDone")
	var out strings.Builder
	for _, r := range recs {
		if r.Type == "TurnOutput" {
			out.WriteString(r.Text)
		}
	}
	if !strings.Contains(out.String(), "tick 6") {
		t.Fatalf("turn output = %q, want all six ticks", out.String())
	}
	if !alive(pid) {
		t.Fatal("the host exited after its client detached")
	}

	r := h.must(0, "stop", id)
	if !strings.Contains(r.stdout, "stopped session") {
		t.Errorf("stop printed %q", r.stdout)
	}
	waitExit(t, pid)
	if row := h.row(id); row.State != "idle" {
		t.Fatalf("ls after stop: %s, want idle", row.State)
	}
	if got := types(h.log(id)); got[len(got)-1] != "SessionStopped" {
		t.Fatalf("journal after stop ends with %v", got[len(got)-3:])
	}
	if r := h.run("attach", id); r.code != 1 || !strings.Contains(r.stderr, "not live") {
		t.Fatalf("attach to a stopped session: exit %d, stderr %q", r.code, r.stderr)
	}
}

// A killed host is a crashed session, restored as any other.
func TestKilledHostIsCrashed(t *testing.T) {
	h := newHarness(t)
	id, pid := h.detached()
	c := h.dialHost(id)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ti, err := c.Submit(ctx, "echo started; sleep 30")
	if err != nil {
		t.Fatal(err)
	}
	h.waitLog(id, "TurnOutput")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExit(t, pid)
	if row := h.row(id); row.State != "crashed" {
		t.Fatalf("ls after SIGKILL of the host: %s, want crashed", row.State)
	}
	r := h.must(0, "restore", id, "--json")
	v := decode[struct {
		Interrupted []string `json:"interrupted"`
	}](t, r.stdout)
	if len(v.Interrupted) != 1 || v.Interrupted[0] != ti.ID {
		t.Fatalf("restore after a killed host: interrupted %v, want [%s]", v.Interrupted, ti.ID)
	}
}

// restore --detach reports the host's failures as restore does its own:
// same exit code, kind and typed fields.
func TestRestoreDetachFailures(t *testing.T) {
	h := newHarness(t)
	r := h.run("restore", "--detach", "--json", "0000aaaa")
	if r.code != 3 || !strings.Contains(r.stdout, `"kind":"discovery_failed"`) {
		t.Fatalf("restore --detach of an unknown id: exit %d, %s", r.code, r.stdout)
	}
	id, pid := h.detached()
	r = h.run("restore", "--detach", "--json", id)
	if r.code != 4 || !strings.Contains(r.stdout, `"kind":"lease_failed"`) {
		t.Fatalf("restore --detach of a live session: exit %d, %s %s", r.code, r.stdout, r.stderr)
	}
	v := decode[struct {
		Error struct {
			Holder struct {
				PID int `json:"pid"`
			} `json:"holder"`
		} `json:"error"`
	}](t, r.stdout)
	if v.Error.Holder.PID != pid {
		t.Fatalf("lease_failed names holder %d, want the host %d: %s", v.Error.Holder.PID, pid, r.stdout)
	}
	h.must(0, "stop", id)
	waitExit(t, pid)
	r = h.must(0, "restore", "--detach", id)
	if !strings.Contains(r.stdout, "restored session") || !strings.Contains(r.stdout, "live in host pid") {
		t.Fatalf("restore --detach: %q", r.stdout)
	}
	if row := h.row(id); row.State != "live" {
		t.Fatalf("after restore --detach: %s, want live", row.State)
	}
	if r := h.run("restore", "--detach", "--hold", id); r.code != 2 {
		t.Fatalf("--detach with --hold: exit %d, want usage", r.code)
	}
}

// rm removes the log a session's hosts kept.
func TestRmRemovesHostLog(t *testing.T) {
	h := newHarness(t)
	id, pid := h.detached()
	key, err := filepath.EvalSymlinks(h.store)
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(h.runtime, "looprig", host.StoreHash(key), id+".log")
	if _, err := os.Stat(logPath); err != nil {
		t.Fatalf("the host's log: %v", err)
	}
	h.must(0, "stop", id)
	waitExit(t, pid)
	h.must(0, "rm", id, "--yes")
	if _, err := os.Stat(logPath); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after rm, the host's log: %v, want it gone", err)
	}
}
