package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"looprig/host"
	"looprig/rig"
)

// stopSilence bounds what a stop waits for without a word from the host:
// its hello, then its shutdown, which waits for the running turn as long
// as the rig's shutdown grace (8 s) and says it is alive every quarter of
// a second meanwhile (and how far a checkpoint it waits for is). A host
// that says nothing for the grace and a second more is stopped (SIGSTOP,
// ^Z) or wedged: stop reports *host.HostUnresponsiveError, whose hint is
// the lease break that takes the session from it. A checkpoint takes as
// long as it takes: stop says how far it is on stderr.
const stopSilence = rig.DefaultShutdownGrace + time.Second

// stopExit bounds the wait for the host to hang up once it has shut the
// session down.
const stopExit = 30 * time.Second

var cmdStop = &command{
	name: "stop", brief: "shut down a live session's host (journals SessionStopped)", help: helpStop,
	json: true, args: oneID, needs: needsStore,
	run: runStop,
}

func runStop(c *call) int {
	id, err := rig.FindSession(c.ctx, c.st, c.args[0])
	if err != nil {
		return c.fail(err)
	}
	sid := id.String()
	cctx, cancel := context.WithTimeout(c.ctx, stopSilence)
	cl, err := c.connect(cctx, sid)
	cancel()
	if err != nil {
		if c.ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			err = c.unresponsive(sid, "hello")
		}
		return c.fail(err)
	}
	defer cl.Close()
	pid := cl.Hello().PID
	var line *waitLine
	if !c.json {
		line = newWaitLine(c.stderr)
	}
	err = cl.Shutdown(c.ctx, host.WithSilence(stopSilence), host.WithProgress(line.update))
	line.finish()
	var silent *host.SilenceError
	if errors.As(err, &silent) {
		err = &host.HostUnresponsiveError{Session: sid, PID: pid, Request: "shutdown", Waited: silent.Silent}
	}
	if err != nil {
		return c.fail(err)
	}
	// The host exits once its clients are told; wait for it to hang up so
	// that, when stop returns, the lease is free.
	ectx, ecancel := context.WithTimeout(c.ctx, stopExit)
	defer ecancel()
	select {
	case <-cl.Done():
	case <-ectx.Done():
		return c.fail(fmt.Errorf("host %d of session %s shut the session down but did not exit: %w", pid, rig.ShortID(sid), context.Cause(ectx)))
	}
	if c.json {
		c.writeJSON(stopJSON{ID: sid, ShortID: rig.ShortID(sid), PID: pid})
		return exitOK
	}
	fmt.Fprintf(c.stdout, "stopped session %s (host pid %d)\n", rig.ShortID(sid), pid)
	return exitOK
}

// unresponsive is the error of a host of session id that did not answer
// request for stopSilence: the kernel says who listens on its socket,
// without a word from the host.
func (c *call) unresponsive(id, request string) error {
	pid := 0
	if key, err := storeKey(c.st); err == nil {
		if dir, err := host.SocketDir(key); err == nil {
			ctx, cancel := context.WithTimeout(c.ctx, time.Second)
			pid, _ = host.ServingPID(ctx, dir, id)
			cancel()
		}
	}
	return &host.HostUnresponsiveError{Session: id, PID: pid, Request: request, Waited: stopSilence}
}

// stopJSON is what stop prints.
type stopJSON struct {
	ID      string `json:"id"`
	ShortID string `json:"short_id"`
	PID     int    `json:"pid"`
}
