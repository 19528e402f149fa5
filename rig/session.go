// The live session: its record (Session), how it is made, its accessors,
// admission and the errors of its mutations. What it does lives beside it:
// turns in session_turn.go, gates and attention in session_gate.go, its
// snapshot in session_status.go, catalog writes in session_catalog.go,
// faults and the lease watcher in session_watch.go, Shutdown in
// shutdown.go.

package rig

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// interruptCause is the cause a turn's context is cancelled with; its
// reason is what TurnInterrupted records.
type interruptCause struct{ reason string }

func (c *interruptCause) Error() string { return "turn interrupted: " + c.reason }

var (
	causeUser      = &interruptCause{event.ReasonUser}
	causeShutdown  = &interruptCause{event.ReasonShutdown}
	causeLeaseLost = &interruptCause{event.ReasonLeaseLost}
	causeHandoff   = &interruptCause{event.ReasonHandoff}
)

// Session is a live session: it owns the session lease, the fenced
// journal, the hub and the root loop until Shutdown. Its methods are safe
// for concurrent use.
type Session struct {
	rig     *Rig
	id      uuid.UUID
	name    string // storage name of the lease and the journal
	lease   storage.Lease
	journal *journal.SessionJournal
	hub     *hub.Hub
	ws      *workspace
	eng     engine.Engine
	loopID  string
	title   string
	created time.Time
	restore *RestoreInfo

	// ctx is cancelled (with a cause) on lease loss, persistence fault and
	// shutdown; running turns derive from it.
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu     sync.Mutex
	closed bool  // admission closed: Shutdown began
	fault  error // latched lease loss or persistence fault
	// turn and gate are the handles of the running turn (its process,
	// console, cancellation) and of the gate it waits at (where the answer
	// goes); what they are is state's.
	turn *turnRun
	gate *gateState
	// state is the fold of what the session journaled (its journal's, when
	// restored), applied before anyone sees an event: all the session says
	// of itself (Status, statusOf; its catalog entry, catalogOf) is its.
	state State
	// window is the size of the terminal of the next turns (Resize).
	window struct{ cols, rows int }
	// seenMu orders SeeAttention's look at the pending attention and its
	// record, so two clients looking at once record it once.
	seenMu sync.Mutex

	// ckpt is the state of the workspace's checkpoints.
	ckpt checkpointer
	// ckptRun is the checkpoint being taken, nil when none is (guarded by
	// mu; checkpoint_busy.go).
	ckptRun *checkpointRun
	// reverting: a Revert runs (guarded by mu; revert.go).
	reverting bool
	// handingOff names the taker while HandOff runs (guarded by mu);
	// handoffStarted: a request was acted on (handoff.go).
	handingOff     string
	handoffStarted atomic.Bool
	// handoffDropped is the id of the last request the session called
	// off (guarded by mu): it is never taken up again.
	handoffDropped string

	catMu     sync.Mutex // orders catalog writes
	catSealed bool       // guarded by catMu: Shutdown wrote the last entry

	// procMu orders the writes of the session's process record (see
	// processRecord); procRev is the revision of the one it last wrote or
	// claimed (storage.MustNotExist: none yet).
	procMu  sync.Mutex
	procRev uint64

	stopWatch chan struct{}
	watchDone chan struct{}

	shutdownStarted bool
	shutdownDone    chan struct{}
	shutdownErr     error
}

// RestoreInfo is the outcome of the restore that produced a session.
type RestoreInfo struct {
	Epoch       uint64
	Interrupted []string       // turn ids closed with TurnInterrupted{crash}
	GatesClosed []string       // gate ids closed with GateResolved{restore_unavailable}
	Adopted     []event.Change // drift adopted by this restore, if any
	AdoptedBy   string         // the Source of the decider that accepted it
	Records     uint64         // journal records read: the journal up to this restore's fence
	// Workspace is how the restore found the workspace against its last
	// checkpoint; nil when the session has none.
	Workspace *WorkspaceFound
	// Previous is how the session's previous holder (the one since it last
	// went live: its creation or its last committed restore) let it go:
	// PreviousHandedOff, PreviousStopped or PreviousCrashed; "" when the
	// journal has no such holder. PreviousEpoch is that holder's epoch,
	// HandedOffTo who it handed the session over to (HandedOff.to).
	Previous      string
	PreviousEpoch uint64
	HandedOffTo   string
	// Holder is this process, as RestoreDone records it ("pid@host").
	Holder string
}

// How a session's previous holder let it go (RestoreInfo.Previous).
const (
	// PreviousHandedOff: it handed the session over (HandedOff).
	PreviousHandedOff = "handed_off"
	// PreviousStopped: it shut the session down (SessionStopped).
	PreviousStopped = "stopped"
	// PreviousCrashed: its journal ends without either: it died, or its
	// lease expired or was broken while it was stopped or cut off.
	PreviousCrashed = "crashed"
)

func newSession(r *Rig, id uuid.UUID, lease storage.Lease) *Session {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Session{
		rig: r, id: id, name: storage.SessionName(id.String()), lease: lease,
		ctx: ctx, cancel: cancel,
		stopWatch: make(chan struct{}), watchDone: make(chan struct{}),
		shutdownDone: make(chan struct{}),
	}
}

// SessionID returns the session's id.
func (s *Session) SessionID() uuid.UUID { return s.id }

// LoopID returns the root loop's id; it survives restores.
func (s *Session) LoopID() string { return s.loopID }

// Epoch returns the session lease's epoch.
func (s *Session) Epoch() uint64 { return s.lease.Epoch() }

// Restored returns the outcome of the restore that produced this session,
// or nil for a session made by NewSession.
func (s *Session) Restored() *RestoreInfo { return s.restore }

// Workspace returns the directory turns run in.
func (s *Session) Workspace() string { return s.ws.dir }

// Done is closed when the session stops accepting work: on lease loss, on
// a persistence fault, or when Shutdown has finished.
func (s *Session) Done() <-chan struct{} { return s.ctx.Done() }

// Err returns the latched fault (a lease-lost error or a persistence
// fault), or nil.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fault
}

// Subscribe opens a subscription to the session's events.
func (s *Session) Subscribe(f hub.Filter) *hub.Subscription { return s.hub.Subscribe(f) }

// WaitIdle waits until no turn is running (a turn Shutdown abandoned
// counts until its engine returns), then says whether the session still
// takes work: nil when it does; its latched fault when it faulted (a lost
// lease, a persistence fault: the turn that ended was interrupted by it);
// ErrSessionClosed once Shutdown has begun. It returns ctx's error when
// ctx ends first.
func (s *Session) WaitIdle(ctx context.Context) error {
	if err := s.hub.WaitIdle(ctx); err != nil {
		return err
	}
	return s.stopped()
}

// Busy returns a channel that is closed when a turn begins (closed
// already while one runs): with WaitIdle, what a process that serves the
// session needs to act between turns (the host trims its memory then).
func (s *Session) Busy() <-chan struct{} { return s.hub.Busy() }

// stopped is why the session takes no more work, nil while it does: its
// latched fault, or ErrSessionClosed once Shutdown has begun.
func (s *Session) stopped() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.fault != nil:
		return s.fault
	case s.closed:
		return ErrSessionClosed
	}
	return nil
}

// admitLocked refuses mutations on a faulted or closing session.
func (s *Session) admitLocked() error {
	if s.fault != nil {
		return s.fault
	}
	if s.closed {
		return ErrSessionClosed
	}
	// The leases' health before anything that writes: a loss the watcher
	// has not latched yet (it runs on its own) refuses all the same.
	select {
	case <-s.lease.Lost():
		return &journal.JournalLeaseLostError{Name: s.name, Epoch: s.lease.Epoch(), Cause: storage.LostCause(s.name, s.lease)}
	default:
	}
	if s.ws != nil && s.ws.lease != nil {
		select {
		case <-s.ws.lease.Lost():
			return &WorkspaceRootLeaseLostError{Root: s.ws.root, Epoch: s.ws.lease.Epoch(), Cause: storage.LostCause(rootLeaseName(s.ws.root), s.ws.lease)}
		default:
		}
	}
	return nil
}

// mutationErr prefers the latched fault to the error an append returned:
// an append that failed because the lease was lost reports the loss.
func (s *Session) mutationErr(err error) error {
	if f := s.Err(); f != nil {
		return f
	}
	var fe *hub.FaultError
	if errors.As(err, &fe) {
		return fe.Err
	}
	return err
}

// commandErr is the error of a failed command append. A failure the
// journal latched (lease lost, fenced, store fault) means nothing more can
// be recorded: it faults the session, as a failed event append does.
func (s *Session) commandErr(err error) error {
	if jerr := s.journal.Err(); jerr != nil {
		s.faultWith(jerr)
	}
	return s.mutationErr(err)
}

// bg is a fresh, bounded context for journaling what must be recorded even
// when the caller's or the session's context is done (a turn's end, a
// shutdown).
func (s *Session) bg() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.rig.releaseTimeout)
}

// newHub makes the session's hub over its journal; the session folds what
// it journals into its state.
func (s *Session) newHub() *hub.Hub {
	return hub.New(s.id.String(), s.journal, hub.WithClock(s.rig.now), hub.WithFaultHandler(s.faultWith),
		hub.WithJournaled(func(env event.Envelope) {
			s.mu.Lock()
			s.state.Apply(env)
			s.mu.Unlock()
		}))
}
