package rig

import (
	"context"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"looprig/rig/storage"
)

// DefaultRelistEvery bounds how long a Lister reuses a listing while the
// store's change stamp stands still, before it asks again whether the
// holders on this machine serve their sessions or are stopped.
const DefaultRelistEvery = 30 * time.Second

// DefaultFullRelistEvery bounds how long a Lister reuses the rest of a
// listing (catalog entries, leases) while the stamp stands still.
const DefaultFullRelistEvery = 5 * time.Minute

// Lister lists a store's sessions for a view that shows them for long (the
// TUI asks every second): it lists again only when the store's change
// stamp (storage.ChangeStamper) moved since its last listing, or when
// FullRelistEvery passed, since a change made by a process that died
// half-way through may leave the stamp where it was. Every RelistEvery in
// between it asks its liveness option again about the sessions held by
// other processes on this machine only (a holder stopped or resumed
// touches no store). An idle store then costs a stat and one read of the
// kernel's lock table per call instead of a read of every catalog entry
// and lease. A Lister is safe for concurrent use; calls are serialized.
type Lister struct {
	store storage.Store
	opts  []ListOption
	// RelistEvery is DefaultRelistEvery when 0; FullRelistEvery is
	// DefaultFullRelistEvery when 0.
	RelistEvery, FullRelistEvery time.Duration

	liveness   func(ctx context.Context, id string, holder storage.Holder) Liveness
	host       string
	pid        int
	mu         sync.Mutex
	stamp      string    // taken before the listing in infos
	at, listed time.Time // infos' liveness asked, and the rest listed
	infos      []SessionInfo
	keepPath   string    // Keep's file ("": none)
	kept       time.Time // when the listing last kept there was listed
	// fromKept: infos came from the kept file; the next call lists in
	// full, whose probes are what tell this process's change stamp of a
	// holder's death (a Lister that lists again, the TUI's).
	fromKept bool
	// shown are the sessions the view shows (Show); nil: all of them.
	shown atomic.Pointer[map[string]bool]
}

// Show tells the Lister which sessions its view shows now (nil: all, as
// before any call): between full listings, only their holders are asked
// whether they serve or are stopped, so that a view of a thousand live
// sessions asks the sixty on its screen every RelistEvery, not the
// thousand. A session that comes into view is asked at the next round,
// at most RelistEvery later, as any session was before. It does not wait
// for a List in progress.
func (l *Lister) Show(ids []string) {
	if ids == nil {
		l.shown.Store(nil)
		return
	}
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	l.shown.Store(&set)
}

// NewLister returns a Lister of store's sessions, listed with opts (as
// ListSessions). With WithLiveness, a holder on this machine that stops
// or resumes is seen at most RelistEvery later.
func NewLister(store storage.Store, opts ...ListOption) *Lister {
	host, _ := os.Hostname()
	return &Lister{store: store, opts: opts, liveness: listConfigOf(opts).liveness, host: host, pid: os.Getpid()}
}

// List returns the sessions, as ListSessions does, and whether they were
// listed again (fresh); when not fresh, infos is the previous listing and
// nothing changed since, as far as the store can tell. The returned slice
// is shared with later calls that are not fresh: do not modify it.
func (l *Lister) List(ctx context.Context) (infos []SessionInfo, fresh bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	every, fullEvery := l.RelistEvery, l.FullRelistEvery
	if every <= 0 {
		every = DefaultRelistEvery
	}
	if fullEvery <= 0 {
		fullEvery = DefaultFullRelistEvery
	}
	// The stamps are taken before the listing: a change during the
	// listing moves them after it, and the next call lists again.
	durable := l.durableStamp(ctx)
	stamp, serr := l.store.ChangeStamp(ctx)
	if serr == nil && l.infos == nil {
		if kept, listed, ok := l.loadKept(durable, fullEvery); ok {
			if infos, _, ok := l.askLiveness(ctx, kept); ok {
				l.infos, l.stamp, l.at, l.listed = infos, stamp, time.Now(), listed
				l.fromKept = true
				return infos, true, nil
			}
		}
	}
	if serr == nil && l.infos != nil && stamp == l.stamp && !l.fromKept {
		if time.Since(l.at) < every {
			return l.infos, false, nil
		}
		if time.Since(l.listed) < fullEvery {
			if infos, changed, ok := l.askLiveness(ctx, l.infos); ok {
				l.at = time.Now()
				if !changed {
					return l.infos, false, nil
				}
				l.infos = infos
				return infos, true, nil
			}
		}
	}
	l.fromKept = false
	infos, err = ListSessions(ctx, l.store, l.opts...)
	if err != nil {
		l.infos = nil
		return nil, true, err
	}
	if serr != nil {
		stamp = "" // no stamp: list again next time
		l.infos = nil
	} else {
		l.infos = infos
	}
	l.stamp, l.at = stamp, time.Now()
	l.listed = l.at
	if durable != "" && time.Since(l.kept) >= fullEvery && keepable(infos) {
		// A hint for the next process: when it cannot be kept, that
		// process lists.
		if l.saveKept(durable, l.listed, infos) == nil {
			l.kept = l.listed
		}
	}
	return infos, true, nil
}

// askLiveness asks liveness again about the sessions of listing (the
// last one, or a kept one: Keep) held by another process on this
// machine. The stamp stood still since that listing, so no lease was
// granted, released or broken, and no catalog entry was put (nor, with
// the change stamp, was a lease lost with its holder's death, which a
// durable stamp does not count: a dead holder is answered gone here,
// and the caller lists again): all that can have changed
// is whether each holder serves its session or is stopped (SIGSTOP,
// SIGCONT), which touches no store. It returns the listing with those
// rows changed, and whether any did; ok is false when an answer is
// neither (the holder gone unseen, or nothing known): the caller lists
// again. O(held sessions shown), not O(sessions): an idle store of idle
// sessions asks nothing.
func (l *Lister) askLiveness(ctx context.Context, listing []SessionInfo) (infos []SessionInfo, changed, ok bool) {
	if l.liveness == nil {
		return nil, false, false
	}
	shown := l.shown.Load()
	for i, in := range listing {
		h := in.Holder
		if h == nil || h.Host != l.host || h.PID == l.pid || in.State != StateLive && in.State != StateHeld ||
			in.Reason != "" && !in.NotAnswering {
			continue // not held here by another process, or its lease state unknown
		}
		if shown != nil && !(*shown)[in.ID] {
			continue // not in view: asked once it is (Show)
		}
		live := l.liveness(ctx, in.ID, *h)
		if live != LivenessServing && live != LivenessStopped {
			return nil, false, false
		}
		row := in
		row.setHeld(live)
		if row.State == in.State && row.NotAnswering == in.NotAnswering {
			continue
		}
		if infos == nil {
			infos = slices.Clone(listing) // the listing given out is not modified
		}
		infos[i] = row
	}
	if infos == nil {
		return listing, false, true
	}
	return infos, true, true
}
