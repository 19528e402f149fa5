package cli

import (
	"fmt"
	"time"

	"looprig/rig"
)

// gcTimeout bounds a sweep: it reads every journal of the store.
const gcTimeout = 10 * time.Minute

var cmdGC = &command{
	name: "gc", brief: "delete the blobs no session's checkpoints reference (deleted sessions', crashed checkpoints')", help: helpGC,
	json: true, needs: needsStore, timeout: gcTimeout, run: runGC,
}

func runGC(c *call) int {
	res, err := rig.SweepBlobs(c.ctx, c.st, rig.SweepOptions{Grace: rig.SweepGrace, Workspaces: c.st.WorkspacesDir()})
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		c.writeJSON(gcJSON{Referenced: res.Referenced, Deleted: res.Deleted, DeletedBytes: res.DeletedBytes, Recent: res.Recent})
		return exitOK
	}
	fmt.Fprintf(c.stdout, "deleted %s (%s) no checkpoint references; kept %s referenced",
		plural(res.Deleted, "blob"), byteSize(res.DeletedBytes), plural(res.Referenced, "blob"))
	if res.Recent > 0 {
		fmt.Fprintf(c.stdout, " and %d put in the last %s (a checkpoint in progress may reference them)", res.Recent, rig.SweepGrace)
	}
	fmt.Fprintln(c.stdout)
	return exitOK
}

// gcJSON is what gc --json prints.
type gcJSON struct {
	Referenced   int   `json:"referenced"`
	Deleted      int   `json:"deleted"`
	DeletedBytes int64 `json:"deleted_bytes"`
	Recent       int   `json:"recent"`
}
