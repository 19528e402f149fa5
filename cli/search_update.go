package cli

import (
	"fmt"
	"time"

	"looprig/rig"
	"looprig/search"
)

// sessionIndexWait is how long `search --update --session` waits for an
// index another process has: its caller is a session's host between
// turns, and a search that has the index reads the session itself.
const sessionIndexWait = time.Second

// updateSessionIndex is `looprig search --update --session ID`: it
// indexes what session ID's journal holds past what the index has
// (search.IndexSession), leaving every other session as it is.
func (c *call) updateSessionIndex() int {
	id, err := rig.FindSession(c.ctx, c.st, c.search.session)
	if err != nil {
		c.fail(err)
		return exitSearchError
	}
	ls, err := rig.ProbeSession(c.ctx, c.st, id)
	if err != nil {
		c.fail(fmt.Errorf("search --update: the lease of session %s: %w", rig.ShortID(id.String()), err))
		return exitSearchError
	}
	ses := search.Session{ID: id, Epoch: ls.Epoch, Unheld: !ls.Held}
	if _, err := search.IndexSession(c.ctx, c.st, ses, search.Options{Wait: sessionIndexWait, Notes: c.stderr}); err != nil {
		if c.ctx.Err() != nil {
			return exitSearchError // stopped: what was committed stays
		}
		c.fail(err)
		return exitSearchError
	}
	return exitOK
}
