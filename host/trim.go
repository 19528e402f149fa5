package host

import (
	"context"
	"runtime/debug"
	"time"
)

// Between turns a host gives its free memory back. The Go runtime keeps
// the pages a collection freed up to its heap goal, at least 4 MiB, and
// collects an idle process only every two minutes: a host whose turn
// printed a few megabytes, or whose restore read a long journal, kept
// 4–6 MB resident while idle though under 1 MB of it was live. Once the
// session has had no turn for idleTrimAfter, trimWhenIdle collects and
// returns the free pages to the system (debug.FreeOSMemory: about a
// millisecond), once per idle spell.

// idleTrimAfter is how long a session is idle before its host trims.
const idleTrimAfter = 2 * time.Second

// trimWhenIdle trims after each idle spell has lasted the trim delay, until
// ctx ends (Serve's end).
func (srv *server) trimWhenIdle(ctx context.Context) {
	defer srv.wg.Done()
	after, trim := srv.cfg.idleTrimAfter, srv.cfg.trim
	if after <= 0 {
		after = idleTrimAfter
	}
	if trim == nil {
		trim = debug.FreeOSMemory
	}
	for {
		if srv.s.WaitIdle(ctx) != nil {
			return // ctx ended, or the session takes no more turns: Serve is ending
		}
		busy := srv.s.Busy()
		t := time.NewTimer(after)
		select {
		case <-t.C:
			trim()
			select { // the next spell begins with the next turn
			case <-busy:
			case <-ctx.Done():
				return
			}
		case <-busy:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}
