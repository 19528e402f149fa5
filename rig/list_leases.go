package rig

import (
	"context"

	"looprig/rig/storage"
)

// SessionLease is what a listing of leases alone says of a session
// (ListLeases): enough to know whether its journal may grow, without its
// catalog entry.
type SessionLease struct {
	ID string
	// Epoch is the latest epoch granted for its lease.
	Epoch uint64
	// Held: some process holds the lease now, or its state could not be
	// told (Err); a journal whose lease is not held cannot grow until a
	// process takes it, at a new epoch.
	Held bool
	// Err is the probe's error when the lease's state could not be told.
	Err error
}

// ListLeases lists the store's sessions by their leases only: what
// ListSessions reads but their catalog entries, whose reading and
// decoding are most of a listing's cost (a search, which needs only
// whether each journal may have grown, reads the entries of the sessions
// it prints). opts are ListSessions's; with WithLiveness a lease whose
// holder on this machine serves it is held, and one whose holder is gone
// free, without asking the store's lock table. The order is the store's.
func ListLeases(ctx context.Context, store storage.Store, opts ...ListOption) ([]SessionLease, error) {
	ids, names, served, err := startListing(ctx, store, opts)
	if err != nil {
		return nil, err
	}
	probes, errs := probeAll(ctx, store, names, storage.WithVouch(served.vouch))
	out := make([]SessionLease, len(ids))
	for i, id := range ids {
		out[i] = SessionLease{ID: id, Epoch: probes[i].Epoch, Held: probes[i].Held || errs[i] != nil, Err: errs[i]}
	}
	return out, nil
}
