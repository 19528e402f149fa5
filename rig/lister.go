package rig

import (
	"context"
	"sync"
	"time"

	"looprig/rig/storage"
)

// DefaultRelistEvery bounds how long a Lister reuses a listing while the
// store's change stamp stands still.
const DefaultRelistEvery = 30 * time.Second

// Lister lists a store's sessions for a view that shows them for long (the
// TUI asks every second): it lists again only when the store's change
// stamp (storage.ChangeStamper) moved since its last listing, or when
// RelistEvery passed, since a change made by a process that died half-way
// through may leave the stamp where it was. An idle store then costs a stat
// and one read of the kernel's lock table per call instead of a read of
// every catalog entry and lease. A Lister is safe for concurrent use; calls
// are serialized.
type Lister struct {
	store storage.Store
	opts  []ListOption
	// RelistEvery is DefaultRelistEvery when 0.
	RelistEvery time.Duration

	mu    sync.Mutex
	stamp string // taken before the listing in infos
	at    time.Time
	infos []SessionInfo
}

// NewLister returns a Lister of store's sessions, listed with opts (as
// ListSessions). With WithLiveness, a holder that stops or resumes
// without touching the store is seen at the next listing again (at most
// RelistEvery later).
func NewLister(store storage.Store, opts ...ListOption) *Lister {
	return &Lister{store: store, opts: opts}
}

// List returns the sessions, as ListSessions does, and whether they were
// listed again (fresh); when not fresh, infos is the previous listing and
// nothing changed since, as far as the store can tell. The returned slice
// is shared with later calls that are not fresh: do not modify it.
func (l *Lister) List(ctx context.Context) (infos []SessionInfo, fresh bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	every := l.RelistEvery
	if every <= 0 {
		every = DefaultRelistEvery
	}
	// The stamp is taken before the listing: a change during the listing
	// moves the stamp after it, and the next call lists again.
	stamp, serr := l.store.ChangeStamp(ctx)
	if serr == nil && l.infos != nil && stamp == l.stamp && time.Since(l.at) < every {
		return l.infos, false, nil
	}
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
	return infos, true, nil
}
