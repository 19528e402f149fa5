package cli_test

import (
	"strings"
	"testing"
)

// A round trip between two machines (homes on one NATS server): the
// session made on A is taken to B, where a turn adds a file, deletes one
// and edits one; back on A — by take, by run, by restore --detach — the
// directory A left is brought up to date with B's work, the command says
// so, and A's next turn changes nothing (no checkpoint "deletes" B's
// files).
func TestRoundTripBetweenHomes(t *testing.T) {
	for _, via := range []string{"take", "run", "restore --detach"} {
		t.Run(strings.ReplaceAll(via, " ", ""), func(t *testing.T) {
			a, b := twoHomesOnNATS(t)
			id, _ := a.detached()
			a.must(0, "run", id, "--", "printf 'one\n' > keep.txt && printf 'two\n' > gone.txt && printf 'v1\n' > edit.txt")
			a.waitLog(id, "SessionIdle")
			b.must(0, "take", id)
			b.must(0, "run", id, "--", "printf 'made on B\n' > new.txt && rm gone.txt && printf 'v2 from B\n' > edit.txt")
			onB := b.must(0, "run", id, "--", describeTree).stdout

			const report = "workspace brought up to date from the checkpoint at hand-over after turn 0 on "
			var said string
			switch via {
			case "take":
				said = a.must(0, "take", id).stdout
			case "run":
				b.must(0, "stop", id)
				said = a.must(0, "run", id, "--", "true").stderr
			case "restore --detach":
				b.must(0, "stop", id)
				said = a.must(0, "restore", id, "--detach").stdout
			}
			if !strings.Contains(said, report) || !strings.Contains(said, ": 3 entries changed") {
				t.Errorf("%s back on A said:\n%s\nwant %q…: 3 entries changed", via, said, report)
			}
			if onA := a.must(0, "run", id, "--", describeTree).stdout; onA != onB {
				t.Errorf("the workspace back on A:\n%s\nwant B's:\n%s", onA, onB)
			}
			if r := a.must(0, "diff", id); !strings.Contains(r.stdout, "changed nothing") {
				t.Errorf("A's first turn back changed the workspace:\n%s", r.stdout)
			}
			a.must(0, "stop", id)
		})
	}
}
