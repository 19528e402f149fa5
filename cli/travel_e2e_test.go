package cli_test

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"looprig/natsstore"
	"looprig/natsstore/embedded"
)

// twoHomesOnNATS is two homes sharing one store on an embedded NATS
// server, as two machines sharing it; their hosts are killed when the test
// ends.
func twoHomesOnNATS(t *testing.T) (a, b *harness) {
	t.Helper()
	srv, err := embedded.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	a, b = newHarness(t), newHome(t)
	a.store, b.store = srv.URL(), srv.URL()
	t.Cleanup(a.killHosts)
	t.Cleanup(b.killHosts)
	return a, b
}

// describeTree is a turn that prints every entry of the workspace (path,
// mode, type, link target) and the SHA-256 of every regular file, sorted:
// equal output, equal trees.
const describeTree = `find . -mindepth 1 -printf '%p %m %y %l\n' | LC_ALL=C sort && find . -type f -exec sha256sum {} + | LC_ALL=C sort`

// Two homes on one NATS server, as two machines sharing it: a session's
// files made in a turn on A (text, a 3 MB binary, a nested directory, an
// inner link, an executable) come back on B, identical, after A's host is
// SIGKILLed, and B's next turn runs in them.
func TestWorkspaceTravelsBetweenHomes(t *testing.T) {
	a, b := twoHomesOnNATS(t)

	id, _ := a.detached()
	a.must(0, "run", id, "--", `printf 'notes\n' > notes.txt && head -c 3000000 /dev/urandom > big.bin &&
mkdir -p src/deep && printf 'package deep\n' > src/deep/x.go && ln -s src/deep/x.go link.go &&
printf '#!/bin/sh\necho ran\n' > tool && chmod 750 tool`)
	onA := a.must(0, "run", id, "--", describeTree).stdout
	a.waitLog(id, "SessionIdle")        // the last turn's checkpoint is on record
	if strings.Count(onA, "\n") != 11 { // 7 entries, 4 files' hashes
		t.Fatalf("the tree on A:\n%s", onA)
	}
	a.killHostOf(id)

	var r result
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if r = b.run("run", id, "--", describeTree); r.code == 0 || time.Now().After(deadline) {
			break
		}
	}
	if r.code != 0 {
		t.Fatalf("run on B after A's host died: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r.stdout != onA {
		t.Errorf("the tree on B differs from A's:\nA:\n%s\nB:\n%s", onA, r.stdout)
	}
	if r := b.must(0, "run", id, "--", "./tool && cat notes.txt"); r.stdout != "ran\nnotes\n" {
		t.Errorf("a turn on B: %q", r.stdout)
	}
	b.must(0, "stop", id)
}

// take on B of a session live on A with a turn running: A lets the turn
// end, checkpoints, journals HandedOff and shuts down, B restores it in a
// host of its own with A's files; the journal shows one owner after the
// other. A holder that is stopped (SIGSTOP) does not answer: take gives
// up after --timeout and names the lease break that would force it.
func TestTakeBetweenHomes(t *testing.T) {
	a, b := twoHomesOnNATS(t)

	id, aPID := a.detached()
	turn := strings.TrimSpace(a.must(0, "run", id, "--detach", "--", "printf 'from A\n' > a.txt && sleep 1.5 && echo done-on-a").stdout)
	r := b.must(0, "take", id, "--json")
	took := decode[struct {
		From       string `json:"from"`
		PID        int    `json:"pid"`
		Epoch      uint64 `json:"epoch"`
		HandedOver bool   `json:"handed_over"`
		Previous   string `json:"previous"`
	}](t, r.stdout)
	if !strings.HasPrefix(took.From, strconv.Itoa(aPID)+"@") || took.PID <= 0 || took.PID == aPID || took.Epoch < 2 ||
		!took.HandedOver || took.Previous != "handed_off" {
		t.Fatalf("take --json = %s; want it handed over from A's host %d into another", r.stdout, aPID)
	}
	waitExit(t, aPID)
	recs := b.log(id)
	var seq []string
	for _, rec := range recs {
		switch {
		case rec.Type == "TurnDone" && rec.TurnID == turn, rec.Type == "HandedOff", rec.Type == "SessionStopped",
			rec.Type == "RestoreStarted", rec.Type == "RestoreDone", rec.Kind == "fence":
			seq = append(seq, rec.Kind+":"+rec.Type)
		}
	}
	want := "fence:fence event:TurnDone event:HandedOff event:SessionStopped fence:fence event:RestoreStarted event:RestoreDone"
	if got := strings.Join(seq, " "); got != want {
		t.Errorf("the journal's owners: %s\nwant %s", got, want)
	}
	// The journal names the new holder: the host that restored it.
	for _, rec := range recs {
		if rec.Type == "RestoreDone" && !strings.HasPrefix(rec.Holder, strconv.Itoa(took.PID)+"@") {
			t.Errorf("RestoreDone names the holder %q, want B's host %d", rec.Holder, took.PID)
		}
	}
	if row := b.row(id); row.State != "live" || row.Holder == nil || row.Holder.PID != took.PID {
		t.Errorf("ls on B after take: %+v", row)
	}
	if r := b.must(0, "run", id, "--", "cat a.txt"); r.stdout != "from A\n" {
		t.Errorf("a turn on B reads %q", r.stdout)
	}

	id2, pid2 := a.detached()
	held := a.row(id2)
	if err := syscall.Kill(pid2, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	t.Cleanup(func() { syscall.Kill(pid2, syscall.SIGCONT) })
	r = b.run("take", id2, "--timeout", "1s")
	if r.code == 0 || !strings.Contains(r.stderr, "did not hand it over within 1s") || !strings.Contains(r.stderr, "lease break "+id2[:8]) {
		t.Errorf("take from a stopped holder: exit %d\n%s", r.code, r.stderr)
	}
	// The take that gave up took nothing: the lease is at the stopped
	// holder's epoch, still held by it unless it expired meanwhile, as a
	// stopped holder's lease does (each look at a holder that does not
	// answer takes seconds: the take's two and ls's one, more under load).
	// It cannot have expired before half its TTL: the holder renews it
	// every third.
	row := b.row(id2)
	switch {
	case row.Epoch != held.Epoch:
		t.Errorf("after a take that gave up, the session is %+v: its lease went from epoch %d to %d", row, held.Epoch, row.Epoch)
	case row.Holder != nil && row.Holder.PID == pid2:
	case row.Holder == nil && time.Since(stopped) > natsstore.DefaultLeaseTTL/2:
		t.Logf("the stopped holder's lease expired before ls looked, %s after the stop", time.Since(stopped).Round(time.Millisecond))
	default:
		t.Errorf("after a take that gave up, the session is %+v, want still held by %d", row, pid2)
	}
}

// A host SIGKILLed while it checkpoints a turn's big file leaves the
// previous checkpoint the pointer, whole: a restore where the workspace
// is gone brings back the files of that checkpoint, not half of the new
// one.
func TestKilledCheckpointKeepsThePrevious(t *testing.T) {
	h := newHarness(t)
	id, pid, ws := h.detachedIn()
	h.must(0, "run", id, "--", "printf 'first\n' > first.txt")
	h.waitLog(id, "SessionIdle")
	turn := strings.TrimSpace(h.must(0, "run", id, "--detach", "--", "head -c 268435456 /dev/zero > big.bin").stdout)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		ended := false
		for _, r := range h.log(id) {
			if r.Type == "TurnDone" && r.TurnID == turn {
				ended = true
			}
		}
		if ended {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the big turn did not end")
		}
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExit(t, pid)
	for _, r := range h.log(id) {
		if r.Type == "WorkspaceCheckpointed" && r.TurnID == turn {
			t.Skip("the checkpoint of 256 MiB was over before the kill: nothing to test on this machine")
		}
	}
	if err := os.RemoveAll(ws); err != nil {
		t.Fatal(err)
	}
	r := h.must(0, "run", id, "--", "cat first.txt && ls")
	if r.stdout != "first\nfirst.txt\n" {
		t.Errorf("the workspace restored after the killed checkpoint: %q, want the previous checkpoint's first.txt alone", r.stdout)
	}
}

// A restore says how it found the workspace against the last checkpoint:
// brought back when it was missing; kept, with what differs, when it was
// changed behind the session's back (nothing is overwritten).
func TestRestoreReportsTheWorkspace(t *testing.T) {
	h := newHarness(t)
	id, _, ws := h.detachedIn()
	h.must(0, "run", id, "--", "printf 'a\n' > a.txt && printf 'b\n' > b.txt")
	h.must(0, "stop", id)
	if err := os.WriteFile(ws+"/a.txt", []byte("changed behind its back\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(ws + "/b.txt"); err != nil {
		t.Fatal(err)
	}
	r := h.must(0, "restore", id)
	if !strings.Contains(r.stdout, "workspace kept as found, with this machine's changes since the last checkpoint: 2 entries (a.txt, b.txt)") {
		t.Errorf("restore of a changed workspace:\n%s", r.stdout)
	}
	if b, _ := os.ReadFile(ws + "/a.txt"); string(b) != "changed behind its back\n" {
		t.Errorf("the restore overwrote a.txt: %q", b)
	}
	if err := os.RemoveAll(ws); err != nil {
		t.Fatal(err)
	}
	js := decode[struct {
		Workspace *struct {
			Materialized bool  `json:"materialized"`
			Files        int   `json:"files"`
			Bytes        int64 `json:"bytes"`
		} `json:"workspace"`
	}](t, h.must(0, "restore", id, "--json").stdout)
	// The first restore shut down with a checkpoint of the workspace as
	// it found it: a.txt changed, b.txt gone.
	if w := js.Workspace; w == nil || !w.Materialized || w.Files != 1 || w.Bytes != 24 {
		t.Errorf("restore --json of a missing workspace: %+v", js.Workspace)
	}
}
