package search

import (
	"context"
	"time"

	"looprig/rig/storage"
)

// sessionSlice is how many bytes of lines IndexSession writes with the index
// open, at most (and a commit's worth more): about a sixth of a second
// of a catch-up's writing, so that a search that waits for the index
// waits no longer.
var sessionSlice = 8 << 20

// sessionPause is how long IndexSession leaves the index closed between
// slices: longer than bbolt's 50 ms between tries for the file's lock,
// so that a search waiting for it gets it.
const sessionPause = 100 * time.Millisecond

// IndexSession brings the index of store up to date with one session,
// ses, without the store-wide work of an Update (updateSession): for the
// host of a session, between turns, so that a search finds the index up
// to date instead of reading what a turn printed. It writes a slice at a
// time and closes the index between slices; what it committed stays when
// ctx ends. When another process has the index for longer than o.Wait it
// returns the *BusyError: a search, which reads the session itself, or
// another session's host.
func IndexSession(ctx context.Context, store storage.Store, ses Session, o Options) (Stats, error) {
	var total Stats
	for {
		ix, err := Open(ctx, store, o)
		if err != nil {
			return total, err
		}
		st, more, err := ix.updateSession(ctx, ses, sessionSlice)
		if cerr := ix.Close(); err == nil {
			err = cerr
		}
		total.Sessions = max(total.Sessions, st.Sessions)
		total.Records += st.Records
		total.Lines += st.Lines
		if err != nil || !more {
			return total, err
		}
		t := time.NewTimer(sessionPause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return total, ctx.Err()
		}
	}
}
