package rig

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"looprig/rig/journal"
	"looprig/rig/storage"
)

// ProbeSession reports who holds session id's lease, without taking it.
func ProbeSession(ctx context.Context, store storage.Store, id uuid.UUID) (storage.LeaseStatus, error) {
	return store.Probe(ctx, storage.SessionName(id.String()))
}

// fenceAttempts bounds how often BreakLease tries to fence a journal that
// another writer appended to between its tip read and its fence.
const fenceAttempts = 3

// BreakResult is what BreakLease did.
type BreakResult struct {
	// Held reports that someone held the lease; false: nothing was broken
	// and nothing written.
	Held bool
	// Epoch is the epoch the break took and fenced the journal at (0 when
	// nothing was broken).
	Epoch uint64
	// PreviousEpoch and PreviousHolder are the latest grant before the
	// break, as a probe saw it (also when the lease was not held).
	PreviousEpoch  uint64
	PreviousHolder storage.Holder
	// Fenced reports that the journal got a fence at Epoch: the old
	// holder's next append conflicts even before it notices the loss.
	Fenced bool
	// FenceErr says why the journal got no fence when the session has one
	// (or its tip could not be read): a warning, the break itself
	// happened. Nil when Fenced or when the session has no journal.
	FenceErr error
}

// BreakLease takes session id's lease by force when someone holds it,
// fences its journal at the new epoch (retrying a *journal.FencedError a
// few times: a wedged holder may still be appending), and releases it — in
// that one order, for every presenter. A session without a journal gets no
// fence and no journal. The lease stays free afterwards: a restore takes
// it and fences the journal again.
//
// The error reports a failed probe or break (nothing was broken; Epoch is
// 0) or a failed release after the break (Epoch > 0: the break happened,
// and the result says what it did).
func BreakLease(ctx context.Context, store storage.Store, id uuid.UUID) (BreakResult, error) {
	short := ShortID(id.String())
	name := storage.SessionName(id.String())
	status, err := ProbeSession(ctx, store, id)
	if err != nil {
		return BreakResult{}, fmt.Errorf("probe the lease of session %s: %w", short, err)
	}
	res := BreakResult{Held: status.Held, PreviousEpoch: status.Epoch, PreviousHolder: status.Holder}
	if !status.Held {
		return res, nil
	}
	l, err := store.Break(ctx, name)
	if err != nil {
		return res, fmt.Errorf("break the lease of session %s: %w", short, err)
	}
	res.Epoch = l.Epoch()
	res.Fenced, res.FenceErr = fence(ctx, store, id, l)
	if err := l.Release(ctx); err != nil {
		return res, fmt.Errorf("release the broken lease of session %s: %w", short, err)
	}
	return res, nil
}

// fence appends a fence at lease's epoch to session id's journal when it
// has one: the records of an older epoch after it are refused.
func fence(ctx context.Context, store storage.Store, id uuid.UUID, lease storage.Lease) (bool, error) {
	tip, err := JournalTip(ctx, store, id)
	if err != nil {
		return false, fmt.Errorf("read the journal tip: %w", err)
	}
	if tip == 0 {
		return false, nil
	}
	for attempt := 1; ; attempt++ {
		_, err := journal.Open(ctx, store, storage.SessionName(id.String()), lease)
		var fenced *journal.FencedError
		if err == nil || !errors.As(err, &fenced) || attempt == fenceAttempts {
			return err == nil, err
		}
	}
}
