package cli_test

import (
	"strings"
	"testing"
	"time"

	"looprig/natsstore/embedded"
)

// describeTree is a turn that prints every entry of the workspace (path,
// mode, type, link target) and the SHA-256 of every regular file, sorted:
// equal output, equal trees.
const describeTree = `find . -mindepth 1 -printf '%p %m %y %l\n' | LC_ALL=C sort && find . -type f -exec sha256sum {} + | LC_ALL=C sort`

// Two homes on one NATS server, as two machines sharing it: a session's
// files made in a turn on A (text, a 3 MB binary, a nested directory, an
// inner link, an executable) come back on B, identical, after A's host is
// SIGKILLed, and B's next turn runs in them.
func TestWorkspaceTravelsBetweenHomes(t *testing.T) {
	srv, err := embedded.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	a, b := newHarness(t), newHome(t)
	a.store, b.store = srv.URL(), srv.URL()
	t.Cleanup(a.killHosts)
	t.Cleanup(b.killHosts)

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
