package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"looprig/host"
	"looprig/internal/textsafe"
	"looprig/rig"
)

// revertTimeout bounds a revert: the checkpoints it waits for and takes,
// the writes, a restore and a shutdown when no host serves the session.
const revertTimeout = 10 * time.Minute

var cmdRevert = &command{
	name: "revert", brief: "put a session's workspace back as it was before a turn", help: helpRevert,
	json: true, args: oneID, needs: needsStore, interrupts: true, timeout: revertTimeout,
	flags: func(fs *flag.FlagSet, o *opts) {
		restoreFlags(fs, o)
		fs.StringVar(&o.revertTurn, "turn", "", "the turn's number, as ls, log and the TUI show it (default: the last turn, or the last revert when one came after it)")
	},
	run: runRevert,
}

// revertTurnIndex is --turn as Session.Revert takes it.
func (c *call) revertTurnIndex() (int, error) {
	if c.revertTurn == "" {
		return rig.LastTurn, nil
	}
	n, err := strconv.Atoi(strings.TrimPrefix(c.revertTurn, "#"))
	if err != nil || n < 0 {
		return 0, usageErr(c.cmd, fmt.Sprintf("--turn takes a turn's number (0, 1, …), not %q", c.revertTurn))
	}
	return n, nil
}

// runRevert reverts in the session's host when one serves it here, and
// otherwise restores the session in this process, reverts and shuts it
// down (as run --in-process does).
func runRevert(c *call) int {
	turn, err := c.revertTurnIndex()
	if err != nil {
		return c.fail(err)
	}
	id, err := rig.FindSession(c.ctx, c.st, c.args[0])
	if err != nil {
		return c.fail(err)
	}
	sid := id.String()
	ctx, cancel := context.WithTimeout(c.ctx, connectTimeout)
	cl, err := c.connect(ctx, sid)
	cancel()
	var rv host.Reverted
	var notHosted *NotHostedError
	switch {
	case err == nil:
		defer cl.Close()
		var line *waitLine
		if !c.json {
			line = newWaitLine(c.stderr)
		}
		rv, err = cl.Revert(c.ctx, turn, host.WithProgress(line.update))
		line.finish()
	case errors.As(err, &notHosted):
		rv, err = c.revertInProcess(turn)
	}
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		c.writeJSON(revertJSON{ID: sid, ShortID: rig.ShortID(sid), TurnID: rv.TurnID, Turn: rv.TurnIndex, Undo: rv.Undo,
			Manifest: rv.Manifest, From: rv.From, Changed: rv.Changed, Removed: rv.Removed, Paths: nonNil(rv.Paths),
			Agent: rv.Agent})
		return exitOK
	}
	summary := rig.Reverted{TurnIndex: rv.TurnIndex, Undo: rv.Undo, Changed: rv.Changed, Removed: rv.Removed}.Summary()
	fmt.Fprintln(c.stdout, summary)
	if len(rv.Paths) > 0 {
		paths := make([]string, len(rv.Paths))
		for i, p := range rv.Paths {
			paths[i] = textsafe.Line(p)
		}
		more := ""
		if n := rv.Changed + rv.Removed; n > len(paths) {
			more = fmt.Sprintf(" and %d more", n-len(paths))
		}
		fmt.Fprintf(c.stdout, " %s%s\n", strings.Join(paths, ", "), more)
	}
	if rv.Agent {
		fmt.Fprintln(c.stdout, "the agent's conversation is not rewound: it still remembers the turns reverted (looprig fork ID --turn N goes back in both, in a new session)")
	}
	return exitOK
}

// revertInProcess restores the session in this process, reverts, and
// shuts it down.
func (c *call) revertInProcess(turn int) (host.Reverted, error) {
	s, err := c.restoreSession(c.args[0])
	if err != nil {
		return host.Reverted{}, err
	}
	if info := s.Restored(); info != nil && !c.json {
		if r := workspaceReport(info.Workspace); r != "" {
			fmt.Fprintf(c.stderr, "looprig: %s\n", r)
		}
	}
	rv, err := s.Revert(c.ctx, turn)
	if serr := shutdown(s, c.sig); serr != nil && err == nil && s.Err() == nil && !errors.Is(serr, errForced) {
		fmt.Fprintf(c.stderr, "looprig: warning: session %s did not shut down cleanly: %s\n",
			rig.ShortID(s.SessionID().String()), textsafe.Sanitize(serr.Error()))
	}
	if err != nil {
		return host.Reverted{}, err
	}
	return host.Reverted{TurnID: rv.TurnID, TurnIndex: rv.TurnIndex, Undo: rv.Undo, Manifest: rv.Manifest, From: rv.From,
		Changed: rv.Changed, Removed: rv.Removed, Paths: rv.Paths, Agent: rv.Agent}, nil
}

// revertJSON is what revert --json prints.
type revertJSON struct {
	ID       string `json:"id"`
	ShortID  string `json:"short_id"`
	TurnID   string `json:"turn_id"`
	Turn     int    `json:"turn"`
	Undo     bool   `json:"undo"`
	Manifest string `json:"manifest"` // the checkpoint restored
	From     string `json:"from"`     // the checkpoint of the workspace before the revert
	Changed  int    `json:"changed"`
	Removed  int    `json:"removed"`
	// Paths names the first few entries written or removed.
	Paths []string `json:"paths"`
	// Agent: the session's engine is an agent; ConversationRewound is
	// always false: a revert puts back files only.
	Agent               bool `json:"agent"`
	ConversationRewound bool `json:"conversation_rewound"`
}
