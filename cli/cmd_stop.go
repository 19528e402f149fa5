package cli

import (
	"context"
	"fmt"
	"time"

	"looprig/rig"
)

// stopTimeout bounds a stop: the host's shutdown is bounded by the rig's
// shutdown grace (8 s by default); this leaves room for the connection.
const stopTimeout = 30 * time.Second

var cmdStop = &command{
	name: "stop", brief: "shut down a live session's host (journals SessionStopped)", help: helpStop,
	json: true, args: oneID, needs: needsStore, timeout: stopTimeout,
	run: runStop,
}

func runStop(c *call) int {
	id, cl, err := c.connectArg()
	if err != nil {
		return c.fail(err)
	}
	defer cl.Close()
	pid := cl.Hello().PID
	if err := cl.Shutdown(c.ctx); err != nil {
		return c.fail(err)
	}
	// The host exits once its clients are told; wait for it to hang up so
	// that, when stop returns, the lease is free.
	select {
	case <-cl.Done():
	case <-c.ctx.Done():
		return c.fail(fmt.Errorf("host %d of session %s shut the session down but did not exit: %w", pid, rig.ShortID(id.String()), context.Cause(c.ctx)))
	}
	if c.json {
		c.writeJSON(stopJSON{ID: id.String(), ShortID: rig.ShortID(id.String()), PID: pid})
		return exitOK
	}
	fmt.Fprintf(c.stdout, "stopped session %s (host pid %d)\n", rig.ShortID(id.String()), pid)
	return exitOK
}

// stopJSON is what stop prints.
type stopJSON struct {
	ID      string `json:"id"`
	ShortID string `json:"short_id"`
	PID     int    `json:"pid"`
}
