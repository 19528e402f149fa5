package rig

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/procgroup"
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
	// Held reports that someone held the lease. False: nothing was broken
	// and, unless Epoch is set, nothing written.
	Held bool
	// Epoch is the epoch the break took and fenced the journal at (0 when
	// nothing was broken). A lease nobody held is taken too (an ordinary
	// grant) when a turn of its last holder still runs on this machine, to
	// stop it.
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
	// Turn is the turn of an earlier holder that the session's process
	// record named as running, and what the break did about it; nil when
	// none was recorded.
	Turn *BrokenTurn
	// TurnErr says why the break could not deal with that turn (its
	// process record could not be read or written, its process group not
	// inspected): a warning, the break itself happened.
	TurnErr error
	// Interrupted lists the turns the journal had open, which the break
	// journaled as TurnInterrupted{lease_lost} (and their open gates as
	// closed): nothing more of them can be journaled, and no later restore
	// takes them for a crash. CloseErr says why it could not.
	Interrupted []string
	CloseErr    error
}

// BrokenTurn is the turn of an earlier holder a break found recorded as
// running, and what became of it.
type BrokenTurn struct {
	ID    string
	Index int
	Epoch uint64 // the epoch of the holder that ran it
	PGID  int    // its process group
	Host  string
	// Here reports that it runs on this machine, in its current boot: the
	// break looked for its process group. A turn elsewhere (a NATS store
	// shared with another machine) is not the break's to stop: its holder
	// stops it once it notices the loss.
	Here bool
	// Signalled reports that the break sent its process group SIGTERM, and
	// Killed that it needed SIGKILL after the grace.
	Signalled, Killed bool
	// Gone reports that no process of the group was left when the break
	// returned (true too when the turn had ended before). When Here and
	// neither Signalled nor Gone, the group's live processes do not carry
	// the turn's environment: they are not the turn's, and were left alone.
	Gone bool
}

// BreakOption adjusts BreakLease.
type BreakOption func(*breakOptions)

type breakOptions struct {
	grace time.Duration
}

// WithStopGrace sets how long BreakLease gives a turn it stops between
// SIGTERM and SIGKILL (default: the shell engine's, engine.DefaultShellGrace).
func WithStopGrace(d time.Duration) BreakOption {
	return func(o *breakOptions) {
		if d > 0 {
			o.grace = d
		}
	}
}

// BreakLease takes session id's lease by force when someone holds it,
// fences its journal at the new epoch (retrying a *journal.FencedError a
// few times: a wedged holder may still be appending), stops the old
// holder's running turn when it runs on this machine (SIGTERM to its
// process group, SIGKILL after the grace; only once its processes are
// recognised as the turn's), journals the journal's open turns as
// TurnInterrupted{lease_lost} (their gates closed), claims the session's
// process record at the new epoch and releases the lease — in that one
// order, for every presenter. A session without a journal gets no fence
// and no journal. The lease stays free afterwards: a restore takes it and
// fences the journal again.
//
// A lease nobody holds is not broken, unless a turn of its last holder
// still runs on this machine (its holder stopped and its lease expired, or
// it died and the turn outlived it): then BreakLease takes the lease, an
// ordinary grant, and does the same.
//
// The error reports a failed probe or break (nothing was broken; Epoch is
// 0) or a failed release after the break (Epoch > 0: the break happened,
// and the result says what it did).
func BreakLease(ctx context.Context, store storage.Store, id uuid.UUID, opts ...BreakOption) (BreakResult, error) {
	o := breakOptions{grace: engine.DefaultShellGrace}
	for _, opt := range opts {
		opt(&o)
	}
	short := ShortID(id.String())
	name := storage.SessionName(id.String())
	status, err := ProbeSession(ctx, store, id)
	if err != nil {
		return BreakResult{}, fmt.Errorf("probe the lease of session %s: %w", short, err)
	}
	res := BreakResult{Held: status.Held, PreviousEpoch: status.Epoch, PreviousHolder: status.Holder}
	if !status.Held {
		p, _, err := readProcess(ctx, store, id)
		if err != nil {
			return res, err
		}
		left, err := earlierTurnHere(ctx, id, p, status.Epoch+1)
		if err != nil || left == nil {
			return res, err
		}
	}
	l, err := store.Break(ctx, name)
	if err != nil {
		return res, fmt.Errorf("break the lease of session %s: %w", short, err)
	}
	res.Epoch = l.Epoch()
	var j *journal.SessionJournal
	j, res.FenceErr = fence(ctx, store, id, l)
	res.Fenced = j != nil
	res.Turn, res.TurnErr = stopEarlierTurn(ctx, store, id, l.Epoch(), o.grace)
	if j != nil {
		res.Interrupted, res.CloseErr = closeOpenTurns(ctx, store, id, j)
	}
	if err := l.Release(ctx); err != nil {
		return res, fmt.Errorf("release the broken lease of session %s: %w", short, err)
	}
	return res, nil
}

// fence appends a fence at lease's epoch to session id's journal when it
// has one, and returns the journal writer: the records of an older epoch
// after it are refused. A session without a journal gets no fence: nil
// and no error.
func fence(ctx context.Context, store storage.Store, id uuid.UUID, lease storage.Lease) (*journal.SessionJournal, error) {
	tip, err := JournalTip(ctx, store, id)
	if err != nil {
		return nil, fmt.Errorf("read the journal tip: %w", err)
	}
	if tip == 0 {
		return nil, nil
	}
	for attempt := 1; ; attempt++ {
		j, err := journal.Open(ctx, store, storage.SessionName(id.String()), lease)
		var fenced *journal.FencedError
		if err == nil || !errors.As(err, &fenced) || attempt == fenceAttempts {
			return j, err
		}
	}
}

// stopEarlierTurn deals with the turn session id's process record names
// as running under an epoch before epoch: on this machine it stops its
// process group (procgroup.Stop, recognised by the turn's environment);
// then it claims the record at epoch, so that the old holder can record no
// turn any more (claimProcess).
func stopEarlierTurn(ctx context.Context, store storage.Store, id uuid.UUID, epoch uint64, grace time.Duration) (*BrokenTurn, error) {
	var turn *BrokenTurn
	_, err := claimProcess(ctx, store, id, epoch, func(p processRecord) error {
		if !p.running() || p.Epoch >= epoch {
			return nil
		}
		turn = &BrokenTurn{ID: p.Turn, Index: p.Index, Epoch: p.Epoch, PGID: p.PGID, Host: p.Host, Here: p.machine().Here()}
		if !turn.Here {
			return nil
		}
		st, err := procgroup.Stop(ctx, p.group(id), grace)
		turn.Signalled, turn.Killed, turn.Gone = st.Terminated, st.Killed, st.Gone
		if err != nil && !errors.Is(err, procgroup.ErrUnsupported) {
			return fmt.Errorf("stop process group %d of turn %d: %w", p.PGID, p.Index, err)
		}
		return nil
	})
	return turn, err
}

// closeOpenTurns journals, through j, the end of every turn session id's
// journal has open — its open gates closed first — as interrupted by the
// lost lease, and returns their ids.
func closeOpenTurns(ctx context.Context, store storage.Store, id uuid.UUID, j *journal.SessionJournal) ([]string, error) {
	rp, err := journal.NewEventReplayer(ctx, store, storage.SessionName(id.String()), 0)
	if err != nil {
		return nil, fmt.Errorf("read the journal: %w", err)
	}
	var st State
	for rp.Next() {
		st.Apply(rp.Envelope())
	}
	err = rp.Err()
	rp.Close()
	if err != nil {
		return nil, fmt.Errorf("read the journal: %w", err)
	}
	for _, g := range st.Gates {
		if _, err := j.AppendEvent(ctx, st.LoopID, event.GateResolved{GateID: g.ID, Action: event.ActionClose, Reason: event.ReasonLeaseLost}); err != nil {
			return nil, fmt.Errorf("journal the end of gate %s: %w", g.ID, err)
		}
	}
	var ids []string
	for _, t := range st.Open {
		if _, err := j.AppendEvent(ctx, st.LoopID, event.TurnInterrupted{TurnID: t.ID, Index: t.Index, Reason: event.ReasonLeaseLost}); err != nil {
			return ids, fmt.Errorf("journal the end of turn %d: %w", t.Index, err)
		}
		ids = append(ids, t.ID)
	}
	return ids, nil
}
