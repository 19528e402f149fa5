//go:build linux || darwin

package procgroup

import "testing"

// A group looked at while its only process is in the middle of an execve
// (a shell starting its command) is the turn's all the same: the kernel
// shows that process's environment empty, or cut short, for a moment, and
// one look then would have left the turn running as Unmarked.
func TestInspectDuringExec(t *testing.T) {
	marks := []string{"LOOPRIG_TURN=t-1"}
	n := 200
	if testing.Short() {
		n = 50
	}
	for i := 0; i < n; i++ {
		// Each sh execs the next: the group's one process is often
		// between two programs.
		pgid, _ := startGroup(t, "exec /bin/sh -c 'exec /bin/sh -c \"exec /bin/sh -c \\\"exec sleep 30\\\"\"'", marks...)
		if st, err := Inspect(Group{PGID: pgid, Marks: marks}); err != nil || st != Marked {
			t.Fatalf("look %d: Inspect = %v, %v; want marked", i, st, err)
		}
	}
}
