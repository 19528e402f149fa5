package rig

import (
	"context"
	"errors"
	"fmt"

	"looprig/rig/event"
)

// Following a session: a Follower yields the events of a session from a
// sequence number on, then live, every durable event exactly once and in
// sequence order, whichever Feed they come from: the hub and journal of a
// session of this process (Session), a host's stream (package host's
// Client), or the journal of a session no process here serves
// (JournalFeed). A reading that falls behind is not an error its reader
// sees: the Follower reads again after the last durable event it yielded.
// Every presenter follows sessions this way, and nothing else subscribes to
// a hub or replays a journal to follow one (internal/archtest pins it).

// ErrFollowEnded ends a Follower whose session stopped: every event it
// journaled was yielded.
var ErrFollowEnded = errors.New("the session stopped: its events are over")

// FellBehindError ends a FeedReader that could not keep a durable event
// for its reader (its subscription's buffer was full). A Follower reads
// again after the last durable event it yielded.
type FellBehindError struct {
	Err error
}

func (e *FellBehindError) Error() string {
	return fmt.Sprintf("fell behind the session's events: %v", e.Err)
}

func (e *FellBehindError) Unwrap() error { return e.Err }

// Feed is a source of a session's events.
type Feed interface {
	// OpenFeed starts a reading of the session's events: the durable
	// events after sequence after, then the live ones.
	OpenFeed(ctx context.Context, after uint64) (FeedReader, error)
}

// FeedReader is one reading of a Feed.
type FeedReader interface {
	// Next waits for events and returns them, or an error but no events.
	// Durable events come in sequence order, every one after the
	// reading's start; a few at or below what was returned already may
	// come again (the Follower skips them). Live events (output deltas)
	// come between them, and may be missing. At the end Next returns
	// *FellBehindError, ErrFollowEnded, or another error; a done ctx
	// returns ctx's error and leaves the reader usable.
	Next(ctx context.Context) ([]event.Envelope, error)
	// Close ends the reading.
	Close() error
}

// Follower follows one session. Its methods are for one goroutine at a
// time.
type Follower struct {
	feed       Feed
	r          FeedReader
	last       uint64 // the last durable sequence read
	returned   uint64 // the last durable sequence Next returned
	recoveries int
	end        error
	limit      int              // most events one Next returns; 0: no bound
	held       []event.Envelope // what a bounded Next did not return yet
}

// Follow starts following the session feed reads from after durable
// sequence after (0: from the start).
func Follow(ctx context.Context, feed Feed, after uint64) (*Follower, error) {
	r, err := feed.OpenFeed(ctx, after)
	if err != nil {
		return nil, err
	}
	return &Follower{feed: feed, r: r, last: after, returned: after}, nil
}

// ReplayStart says where a presenter that shows the last n records of a
// long journal, whose tip is tip, starts reading it (Follow's after): 0,
// the whole journal, when it holds no more than n records and a quarter
// more (skipping so few saves little and costs a note of what was
// skipped); else tip-n, its last n records. `attach` and the TUI's attach
// start there.
func ReplayStart(tip, n uint64) uint64 {
	if tip <= n+n/4 {
		return 0
	}
	return tip - n
}

// Next waits for the next events and returns them: every durable event
// after the start exactly once, in sequence order, with the live events
// between them. A reading that fell behind is read again from the last
// durable event returned. At the end it returns ErrFollowEnded (the
// session stopped; everything it journaled was returned) or the feed's
// error; ctx ending returns ctx's error, and Next may be called again.
func (f *Follower) Next(ctx context.Context) ([]event.Envelope, error) {
	evs, _, err := f.next(ctx, false)
	return evs, err
}

// NextOrTip is Next for a reader that must not wait at the tip: when the
// feed has nothing more journaled than what was returned, it returns no
// events and atTip true instead of waiting for more; Next or NextOrTip
// may be called again later to read on from there. A JournalFeed's
// readings can tell; the others (a Session's, a host's, whose live
// events have no tip to reach) wait as Next does and never report it.
func (f *Follower) NextOrTip(ctx context.Context) (evs []event.Envelope, atTip bool, err error) {
	return f.next(ctx, true)
}

// TipReader is a FeedReader that can read without waiting: ReadNow
// returns the events journaled after what it returned, as Next does, or
// none (and no error) when there are none yet.
type TipReader interface {
	FeedReader
	ReadNow(ctx context.Context) ([]event.Envelope, error)
}

func (f *Follower) next(ctx context.Context, noWait bool) ([]event.Envelope, bool, error) {
	if len(f.held) > 0 {
		return f.bounded(f.held), false, nil
	}
	for {
		if f.end != nil {
			return nil, false, f.end
		}
		if f.r == nil {
			r, err := f.feed.OpenFeed(ctx, f.last)
			if err != nil {
				return nil, false, err
			}
			f.r = r
		}
		var (
			batch []event.Envelope
			err   error
		)
		tr, canTell := f.r.(TipReader)
		if noWait && canTell {
			batch, err = tr.ReadNow(ctx)
		} else {
			batch, err = f.r.Next(ctx)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, false, err
			}
			f.r.Close()
			f.r = nil
			var behind *FellBehindError
			if errors.As(err, &behind) {
				f.recoveries++
				continue
			}
			f.end = err
			return nil, false, err
		}
		if noWait && canTell && len(batch) == 0 {
			return nil, true, nil
		}
		out := batch[:0]
		for _, env := range batch {
			if env.Seq != 0 {
				if env.Seq <= f.last {
					continue
				}
				f.last = env.Seq
			}
			out = append(out, env)
		}
		if len(out) > 0 {
			return f.bounded(out), false, nil
		}
	}
}

// Limit bounds how many events each Next returns to n (n <= 0: no
// bound); what a Next does not return, the next one does, before reading
// more. A presenter that folds each batch in one step (the TUI) keeps its
// steps short with it.
func (f *Follower) Limit(n int) { f.limit = n }

// bounded returns the first limit events of evs and holds the rest.
func (f *Follower) bounded(evs []event.Envelope) []event.Envelope {
	f.held = nil
	if f.limit > 0 && len(evs) > f.limit {
		f.held = evs[f.limit:]
		evs = evs[:f.limit:f.limit]
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Seq != 0 {
			f.returned = evs[i].Seq
			break
		}
	}
	return evs
}

// LastSeq returns the sequence of the last durable event Next returned
// (the start before the first).
func (f *Follower) LastSeq() uint64 { return f.returned }

// Recoveries counts the readings that fell behind and were read again.
func (f *Follower) Recoveries() int { return f.recoveries }

// Close ends the following. It is idempotent.
func (f *Follower) Close() error {
	if f.end == nil {
		f.end = errFollowerClosed
	}
	if f.r == nil {
		return nil
	}
	r := f.r
	f.r = nil
	return r.Close()
}

var errFollowerClosed = errors.New("follower closed")
