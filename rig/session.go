package rig

import (
	"context"
	"errors"
	"fmt"
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
	turn   *turnRun
	gate   *gateState
	// state is the fold of what the session journaled (its journal's, when
	// restored): the turns counted, the next index, the last end.
	state State
	// window is the size of the terminal of the next turns (Resize).
	window struct{ cols, rows int }
	// seenMu orders SeeAttention's look at the pending attention and its
	// record, so two clients looking at once record it once.
	seenMu sync.Mutex

	// ckpt is the state of the workspace's checkpoints.
	ckpt checkpointer
	// handingOff names the taker while HandOff runs (guarded by mu);
	// handoffStarted: a request was acted on (handoff.go).
	handingOff     string
	handoffStarted atomic.Bool

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

type turnRun struct {
	id      string
	index   int
	input   string
	started time.Time
	cancel  context.CancelCauseFunc
	done    chan struct{} // closed when runTurn is over (or Submit failed)
	ending  chan struct{} // closed when runTurn records the turn's end
	console *engine.Console
	// interrupted: Interrupt sent the terminal's ^C; however the turn then
	// ends, it ended because the user interrupted it.
	interrupted atomic.Bool

	// endMu orders the turn's records against its end (see record and
	// claimEnd in shutdown.go): once Shutdown abandoned the turn, nothing
	// more of it is journaled.
	endMu    sync.Mutex
	end      turnEnd       // guarded by endMu
	openGate string        // guarded by endMu: gate journaled open, not yet resolved
	gone     chan struct{} // closed when Shutdown abandons the turn

	recorded bool // guarded by the session's procMu: the process record names the turn
}

type gateState struct {
	id, turnID, prompt string
	at                 time.Time // when it opened
	answer             chan bool
	// opened is closed once GateOpened is journaled, or its append failed
	// (then openErr is set first). The gate is answerable from the moment
	// GateOpened is delivered; an answer waits for opened, so it is never
	// journaled before the question.
	opened  chan struct{}
	openErr error
}

// TurnInfo identifies a submitted turn.
type TurnInfo struct {
	ID    string
	Index int
}

// RestoreInfo is the outcome of the restore that produced a session.
type RestoreInfo struct {
	Epoch       uint64
	Interrupted []string       // turn ids closed with TurnInterrupted{crash}
	GatesClosed []string       // gate ids closed with GateResolved{restore_unavailable}
	Adopted     []event.Change // drift adopted by this restore, if any
	AdoptedBy   string         // the Source of the decider that accepted it
	Records     uint64         // journal records replayed
	// Workspace is how the restore found the workspace against its last
	// checkpoint; nil when the session has none.
	Workspace *WorkspaceFound
}

// WorkspaceFound is how a restore found a session's workspace against its
// last checkpoint.
type WorkspaceFound struct {
	// Materialized: the directory was missing and was brought back from
	// the checkpoint (Files files, Bytes bytes).
	Materialized bool
	Files        int
	Bytes        int64
	// Differs counts the entries of the directory found that differ from
	// the checkpoint by presence, kind, size or mode (no file is read);
	// Paths names the first few. They are kept as they are.
	Differs int
	Paths   []string
	// Err says why the comparison could not be made ("" when it was).
	Err string
}

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

// WaitIdle waits until no turn is running.
func (s *Session) WaitIdle(ctx context.Context) error { return s.hub.WaitIdle(ctx) }

// admitLocked refuses mutations on a faulted or closing session.
func (s *Session) admitLocked() error {
	if s.fault != nil {
		return s.fault
	}
	if s.closed {
		return ErrSessionClosed
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

// Submit starts a turn running input. It returns once TurnStarted is
// durable; the turn runs on. A second Submit while a turn runs is
// *BusyError.
func (s *Session) Submit(ctx context.Context, input string) (TurnInfo, error) {
	s.mu.Lock()
	if err := s.admitLocked(); err != nil {
		s.mu.Unlock()
		return TurnInfo{}, err
	}
	if s.handingOff != "" { // the running turn still takes input, interrupts, answers
		s.mu.Unlock()
		return TurnInfo{}, &HandingOffError{To: s.handingOff}
	}
	for s.turn != nil {
		t := s.turn
		s.mu.Unlock()
		select {
		case <-t.ending:
		default:
			return TurnInfo{}, &BusyError{TurnID: t.id, Index: t.index}
		}
		// Its end is being recorded (a client that saw it may submit the
		// next turn at once): wait for the turn to be over.
		select {
		case <-t.done:
		case <-ctx.Done():
			return TurnInfo{}, &BusyError{TurnID: t.id, Index: t.index}
		}
		s.mu.Lock()
		if err := s.admitLocked(); err != nil {
			s.mu.Unlock()
			return TurnInfo{}, err
		}
		if s.handingOff != "" {
			s.mu.Unlock()
			return TurnInfo{}, &HandingOffError{To: s.handingOff}
		}
	}
	turnCtx, cancel := context.WithCancelCause(s.ctx)
	t := &turnRun{id: uuid.NewString(), index: s.state.NextIndex, input: input, started: s.rig.now(),
		cancel: cancel, done: make(chan struct{}), ending: make(chan struct{}), gone: make(chan struct{}),
		console: engine.NewConsole(s.window.cols, s.window.rows)}
	s.turn = t
	s.mu.Unlock()

	fail := func(err error) (TurnInfo, error) {
		cancel(nil)
		s.mu.Lock()
		if s.turn == t {
			s.turn = nil
		}
		s.mu.Unlock()
		close(t.done) // a Shutdown or Interrupt that saw t waits for it
		return TurnInfo{}, s.mutationErr(err)
	}
	if _, err := s.journal.AppendCommand(ctx, journal.Command{Name: journal.CommandSubmit, LoopID: s.loopID, TurnID: t.id, Input: input}); err != nil {
		return fail(s.commandErr(err))
	}
	// The command is on record: the turn starts whatever happens to ctx
	// now. A cancellation reaching the hub would fault the whole session.
	pctx, pcancel := s.bg()
	defer pcancel()
	if err := s.hub.Begin(pctx); err != nil {
		s.endActivity()
		return fail(err)
	}
	if _, err := s.hub.Publish(pctx, s.loopID, event.TurnStarted{TurnID: t.id, Index: t.index, Input: input}); err != nil {
		s.endActivity()
		return fail(err)
	}
	s.updateCatalog()
	go s.runTurn(turnCtx, t)
	return TurnInfo{ID: t.id, Index: t.index}, nil
}

// runningTurnLocked is the running turn, nil when none runs: a turn whose
// end is journaled is over for its clients, though runTurn may still be
// checkpointing the workspace after it. s.mu is held.
func (s *Session) runningTurnLocked() *turnRun {
	t := s.turn
	if t == nil {
		return nil
	}
	select {
	case <-t.ending:
		return nil
	default:
		return t
	}
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

// endActivity closes the activity Submit opened, on a fresh context.
func (s *Session) endActivity() {
	ctx, cancel := s.bg()
	defer cancel()
	s.hub.End(ctx)
}

// runTurn runs t on the engine and records how it ended. When Shutdown
// gave up on the engine first (it ignored its context), Shutdown recorded
// the end: the late return journals nothing, writes no catalog entry, and
// only closes the turn's activity once Shutdown is over (so WaitIdle
// returns), on a stopped hub.
func (s *Session) runTurn(ctx context.Context, t *turnRun) {
	defer close(t.done)
	defer t.cancel(nil)
	sink := newTurnSink(s, t)
	conversation, resume, err := s.prepareConversation(ctx)
	var res engine.Result
	if err == nil {
		res, err = s.eng.Run(ctx, engine.Turn{
			SessionID: s.id.String(), LoopID: s.loopID, ID: t.id, Index: t.index, Input: t.input, Dir: s.ws.dir,
			Env:          turnEnv(s.id.String(), t.id),
			Console:      t.console,
			Started:      s.recordTurn(t),
			Conversation: conversation, Resume: resume,
		}, sink)
	}
	s.turnReaped(t)
	if !t.claimEnd(endReturned) {
		sink.finish() // stops the ticker; the abandoned turn's records are refused
		<-s.shutdownDone
		s.endActivity()
		return
	}
	sink.finish()
	if s.agent() != nil {
		// Bounded as a checkpoint is: a first store of a long transcript
		// (a new machine's) takes longer than a journal append.
		bg, cancel := context.WithTimeout(context.Background(), checkpointTimeout)
		s.saveTranscript(bg, t.id)
		cancel()
	}

	var end event.Event
	var denied *engine.GateDeniedError
	var cause *interruptCause
	switch {
	case ctx.Err() != nil && errors.As(context.Cause(ctx), &cause):
		end = event.TurnInterrupted{TurnID: t.id, Index: t.index, Reason: cause.reason}
	case t.interrupted.Load():
		end = event.TurnInterrupted{TurnID: t.id, Index: t.index, Reason: event.ReasonUser}
	case errors.As(err, &denied):
		end = event.TurnFailed{TurnID: t.id, Err: "denied at gate: " + denied.Prompt}
	case err != nil:
		end = event.TurnFailed{TurnID: t.id, Err: err.Error()}
	default:
		end = event.TurnDone{TurnID: t.id, ExitCode: res.ExitCode, Duration: s.rig.now().Sub(t.started)}
	}
	close(t.ending)
	bg, cancel := s.bg()
	s.hub.Publish(bg, s.loopID, end) // a failure faults the session
	cancel()
	// Before the next turn can start (Submit waits for t.done).
	s.checkpointWorkspace(event.TriggerTurn, t.id)
	s.mu.Lock()
	s.turn = nil
	s.gate = nil
	s.mu.Unlock()
	s.endActivity()
	s.updateCatalog()
}

// Interrupt stops the running turn and waits until it has ended, recorded
// as TurnInterrupted{user}. A turn on a terminal is first sent ^C, as a
// terminal would (SIGINT to its foreground process group); if it is still
// running after SigintGrace, or has no terminal, its process group gets
// SIGTERM, then SIGKILL after the engine's grace period.
func (s *Session) Interrupt(ctx context.Context) error {
	s.mu.Lock()
	if err := s.admitLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	t := s.runningTurnLocked()
	s.mu.Unlock()
	if t == nil {
		return &NoTurnError{}
	}
	if _, err := s.journal.AppendCommand(ctx, journal.Command{Name: journal.CommandInterrupt, LoopID: s.loopID, TurnID: t.id}); err != nil {
		return s.commandErr(err)
	}
	if terminal, _ := t.console.State(); terminal {
		t.interrupted.Store(true)
		if t.console.Interrupt(ctx) == nil {
			timer := time.NewTimer(SigintGrace)
			select {
			case <-t.done:
				timer.Stop()
				return nil
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				return ctx.Err()
			}
		}
	}
	t.cancel(causeUser)
	select {
	case <-t.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RespondGate answers the open gate: approve runs the gated command, deny
// refuses it. Both are journaled before the turn goes on.
func (s *Session) RespondGate(ctx context.Context, gateID string, approve bool) error {
	s.mu.Lock()
	if err := s.admitLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	g, t := s.gate, s.turn
	if g == nil || g.id != gateID {
		open := ""
		if g != nil {
			open = g.id
		}
		s.mu.Unlock()
		return &NoGateError{GateID: gateID, Open: open}
	}
	s.gate = nil // claimed: a second answer is refused
	s.mu.Unlock()
	action := event.ActionDeny
	if approve {
		action = event.ActionApprove
	}
	unclaim := func(err error) error {
		s.mu.Lock()
		if s.gate == nil {
			s.gate = g
		}
		s.mu.Unlock()
		return s.mutationErr(err)
	}
	select {
	case <-g.opened:
	case <-ctx.Done():
		return unclaim(ctx.Err())
	}
	if g.openErr != nil {
		return s.mutationErr(g.openErr)
	}
	if _, err := s.journal.AppendCommand(ctx, journal.Command{Name: journal.CommandRespondGate, LoopID: s.loopID, TurnID: g.turnID, GateID: g.id, Action: string(action)}); err != nil {
		return unclaim(s.commandErr(err))
	}
	// The answer is on record: a cancellation of ctx must not reach the hub.
	pctx, pcancel := s.bg()
	defer pcancel()
	var err error
	resolve := func() {
		_, err = s.hub.Publish(pctx, s.loopID, event.GateResolved{GateID: g.id, Action: action, Reason: "user"})
		if err == nil && t != nil {
			t.openGate = ""
		}
	}
	if t == nil || t.id != g.turnID {
		t = nil
		resolve()
	} else if !t.record(resolve) {
		return ErrSessionClosed // Shutdown abandoned the turn and closed the gate
	}
	if err != nil {
		return unclaim(err)
	}
	g.answer <- approve
	s.updateCatalog()
	return nil
}

// maxSeenFrom bounds the name of the client an AttentionSeen records.
const maxSeenFrom = 32

// SeeAttention records that the user looked at the session (a client
// showed it to them): the attention pending, if it was recorded at or
// before sequence through (0: whatever is pending now), is dealt with,
// journaled as AttentionSeen. from names the client. Nothing pending, or
// only attention recorded after through (a client that had not seen it
// yet), journals nothing.
func (s *Session) SeeAttention(ctx context.Context, through uint64, from string) error {
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	s.mu.Lock()
	if err := s.admitLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	a := s.state.Attention
	s.mu.Unlock()
	if a == nil || through != 0 && a.Seq > through {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Not on ctx: a cancellation reaching the hub would fault the session.
	pctx, cancel := s.bg()
	defer cancel()
	if _, err := s.hub.Publish(pctx, s.loopID, event.AttentionSeen{Through: a.Seq, From: cutUTF8(from, maxSeenFrom)}); err != nil {
		return s.mutationErr(err)
	}
	s.updateCatalog()
	return nil
}

// Status is a snapshot of a live session.
type Status struct {
	ID        uuid.UUID
	Title     string
	Profile   string
	Engine    string
	Epoch     uint64
	LoopID    string
	Placement Placement
	Workspace string
	Root      string
	// TTY says whether the profile runs turns on a terminal (a pty, the
	// shell engine's default) rather than on pipes (NoTTY).
	TTY       bool
	Shell     string // the shell turns run in (Profile.Shell, or /bin/sh)
	Tip       uint64 // journal sequence of the last record
	LastEvent uint64 // journal sequence of the last event (Tip may be a command's or a fence's)
	Turns     int    // turns started, over the session's life
	Turn      *TurnStatus
	Gate      *GateStatus
	LastEnd   *TurnEnd // how the last turn that ended ended; nil before any did
	// Attention is what the running turn asked of the user since the user
	// last looked (State.Attention); nil when nothing is pending.
	Attention *Attention
	// Checkpoint is the workspace pointer (State.Checkpoint), nil before
	// any checkpoint.
	Checkpoint *Checkpoint
	// Conversation is an agent session's conversation
	// (State.Conversation), nil for other engines.
	Conversation *Conversation
	Fault        error
	Closed       bool
}

// TurnStatus describes the running turn.
type TurnStatus struct {
	ID      string
	Index   int
	Input   string
	Started time.Time
}

// GateStatus describes the open gate.
type GateStatus struct {
	ID     string
	TurnID string
	Prompt string
	Opened time.Time
}

// Status returns a snapshot of the session.
func (s *Session) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{
		ID: s.id, Title: s.title, Profile: s.rig.profile.Name, Engine: s.rig.profile.Engine,
		Epoch: s.lease.Epoch(), LoopID: s.loopID, Placement: s.ws.placement, Workspace: s.ws.dir, Root: s.ws.root,
		TTY: !s.rig.profile.NoTTY, Shell: s.rig.profile.shell(), Tip: s.journal.Tip(), LastEvent: s.state.LastSeq, Turns: s.state.Turns, Fault: s.fault, Closed: s.closed,
	}
	if t := s.turn; t != nil {
		st.Turn = &TurnStatus{ID: t.id, Index: t.index, Input: t.input, Started: t.started}
	}
	if g := s.gate; g != nil {
		st.Gate = &GateStatus{ID: g.id, TurnID: g.turnID, Prompt: g.prompt, Opened: g.at}
	}
	if e := s.state.LastEnd; e != nil {
		end := *e
		st.LastEnd = &end
	}
	if a := s.state.Attention; a != nil {
		attn := *a
		st.Attention = &attn
	}
	if cp := s.state.Checkpoint; cp != nil {
		c := *cp
		st.Checkpoint = &c
	}
	if cv := s.state.Conversation; cv != nil {
		c := *cv
		st.Conversation = &c
	}
	return st
}

// catalogEntry builds the session's catalog entry from its live state.
func (s *Session) catalogEntry(state CatalogState) CatalogEntry {
	st := s.Status()
	c := CatalogEntry{
		ID: s.id.String(), Title: s.title, Profile: st.Profile, Engine: st.Engine, Shell: st.Shell, Placement: st.Placement,
		Root: st.Root, State: state, Epoch: st.Epoch, LastSeq: st.Tip, Turns: st.Turns,
		Created: s.created, Updated: s.rig.now().UTC(), LastEnd: st.LastEnd, Attention: st.Attention,
	}
	if st.Turn != nil {
		c.OpenTurn, c.TurnIndex, c.TurnSince = st.Turn.ID, st.Turn.Index, st.Turn.Started.UTC()
	}
	if st.Gate != nil {
		c.OpenGate, c.GateSince, c.GatePrompt = st.Gate.ID, st.Gate.Opened.UTC(), cutUTF8(st.Gate.Prompt, MaxCatalogPrompt)
	}
	if cp := st.Checkpoint; cp != nil {
		c.Checkpoint = &CatalogCheckpoint{Manifest: cp.Manifest, Files: cp.Files, Bytes: cp.Bytes, At: cp.At.UTC()}
	}
	if cv := st.Conversation; cv != nil {
		c.Conversation = &CatalogConversation{Agent: cv.Agent, ID: cv.ID}
	}
	return c
}

// updateCatalog rewrites the catalog entry after a state change. It is
// best effort (the journal is the truth) and skipped once the session lost
// its lease (the successor owns the entry then) or Shutdown wrote the last
// entry.
func (s *Session) updateCatalog() {
	s.writeCatalogState(CatalogRunning, "", false)
}

// writeCatalogState writes the entry in state; final seals it: no later
// write happens (Shutdown's last entry, written before the leases go).
func (s *Session) writeCatalogState(state CatalogState, reason string, final bool) error {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	if s.catSealed || s.Err() != nil {
		return nil
	}
	select {
	case <-s.lease.Lost():
		return nil
	default:
	}
	s.catSealed = final
	ctx, cancel := s.bg()
	defer cancel()
	c := s.catalogEntry(state)
	c.Reason = reason
	err := writeCatalog(ctx, s.rig.store, c)
	if err != nil {
		s.rig.log.Warn("catalog write failed", "session", s.id, "err", err)
	}
	return err
}

// faultWith latches err as the session's fault (the first one wins),
// publishes SessionFaulted, and cancels the session context so running
// turns stop.
func (s *Session) faultWith(err error) {
	// A fenced journal means a successor appended after our tip: the lease
	// is lost even if the watchdog has not said so yet. Report it as such.
	var fenced *journal.FencedError
	var lost *journal.JournalLeaseLostError
	if errors.As(err, &fenced) && !errors.As(err, &lost) {
		err = &journal.JournalLeaseLostError{Name: s.name, Epoch: s.lease.Epoch(), Cause: err}
	}
	s.mu.Lock()
	if s.fault != nil {
		s.mu.Unlock()
		return
	}
	s.fault = err
	s.mu.Unlock()
	s.hub.Publish(context.Background(), "", event.SessionFaulted{Cause: err.Error()})
	s.cancel(causeLeaseLost)
}

// watch turns lease loss into a latched fault. It runs from the moment the
// session is live until Shutdown stops it.
func (s *Session) watch() {
	defer close(s.watchDone)
	var rootLost <-chan struct{}
	if s.ws.lease != nil {
		rootLost = s.ws.lease.Lost()
	}
	poll := time.NewTicker(s.rig.handoffPoll)
	defer poll.Stop()
	for {
		select {
		case <-s.lease.Lost():
			s.faultWith(&journal.JournalLeaseLostError{Name: s.name, Epoch: s.lease.Epoch(), Cause: storage.LostCause(s.name, s.lease)})
			return
		case <-rootLost:
			s.faultWith(&WorkspaceRootLeaseLostError{Root: s.ws.root, Epoch: s.ws.lease.Epoch(),
				Cause: storage.LostCause(rootLeaseName(s.ws.root), s.ws.lease)})
			return
		case <-poll.C:
			s.checkHandOff()
		case <-s.stopWatch:
			return
		}
	}
}

// Shutdown stops the session: it closes admission, interrupts the running
// turn and waits for its engine to return (for the shell engine: its
// process group is gone), stops the hub with SessionStopped, marks the
// catalog entry stopped, then releases the root lease and the session
// lease, once each, on fresh bounded contexts.
//
// The wait for the engine is bounded by the deadline of the first call's
// context or, when it has none, by the rig's shutdown grace
// (WithShutdownGrace; 8 s by default). Cancelling a context without a
// deadline does not cut the wait short. An engine that has not returned
// by then — one that ignores its context — is abandoned: the turn is
// journaled as TurnInterrupted{engine_unresponsive}, the hub is stopped,
// the catalog entry is left running (with a reason) so the session lists
// as crashed rather than cleanly stopped, the leases are released, and
// Shutdown returns *EngineUnresponsiveError (joined with any other
// failure). Nothing the abandoned engine does later is journaled.
//
// Every call returns the result of the one teardown; the context of a
// later call bounds only how long that call waits for it.
func (s *Session) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	first := !s.shutdownStarted
	s.shutdownStarted = true
	s.mu.Unlock()
	if first {
		s.shutdownErr = s.teardown(ctx)
		close(s.shutdownDone)
		return s.shutdownErr
	}
	select { // a finished teardown wins over a done ctx
	case <-s.shutdownDone:
		return s.shutdownErr
	default:
	}
	select {
	case <-s.shutdownDone:
		return s.shutdownErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// teardown is the one Shutdown; ctx bounds only the wait for the running
// turn's engine (see Shutdown).
func (s *Session) teardown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	t := s.turn
	healthy := s.fault == nil
	s.mu.Unlock()

	bctx, cancel := s.bg()
	defer cancel()
	var errs []error
	if healthy {
		if _, err := s.journal.AppendCommand(bctx, journal.Command{Name: journal.CommandShutdown, LoopID: s.loopID}); err != nil {
			errs = append(errs, fmt.Errorf("record shutdown: %w", s.mutationErr(err)))
		}
	}
	var stuck *EngineUnresponsiveError
	if t != nil {
		var err error
		if stuck, err = s.awaitTurn(ctx, t); err != nil {
			errs = append(errs, err)
		}
	}
	if healthy && stuck == nil && s.Err() == nil {
		s.checkpointWorkspace(event.TriggerStop, s.lastTurnID())
	}
	close(s.stopWatch)
	<-s.watchDone
	stopCtx, stopCancel := s.bg()
	defer stopCancel()
	if err := s.hub.Stop(stopCtx); err != nil && healthy {
		errs = append(errs, fmt.Errorf("stop hub: %w", s.mutationErr(err)))
	}
	if s.Err() == nil {
		// A session whose engine was abandoned did not stop cleanly: the
		// engine may still run (and touch the workspace) in this process.
		// Its entry stays running, so that once the leases are free it
		// lists as crashed, not idle; its journal is closed all the same.
		state, reason := CatalogStopped, ""
		if stuck != nil {
			state, reason = CatalogRunning, fmt.Sprintf("shutdown abandoned turn %d: %s", stuck.Index, event.ReasonEngineStuck)
		}
		if err := s.writeCatalogState(state, reason, true); err != nil {
			errs = append(errs, fmt.Errorf("catalog: %w", err))
		}
	}
	s.cancel(ErrSessionClosed)
	errs = append(errs, s.releaseLeases()...)
	if stuck != nil {
		if len(errs) == 0 {
			return stuck
		}
		errs = append([]error{stuck}, errs...)
	}
	return errors.Join(errs...)
}

// releaseLeases releases the root lease, then the session lease, each on
// a fresh bounded context.
func (s *Session) releaseLeases() []error {
	var errs []error
	if s.ws != nil && s.ws.lease != nil {
		ctx, cancel := context.WithTimeout(context.Background(), s.rig.releaseTimeout)
		if err := s.ws.lease.Release(ctx); err != nil {
			s.rig.log.Warn("root lease release failed", "root", s.ws.root, "err", err)
			errs = append(errs, fmt.Errorf("release root lease: %w", err))
		}
		cancel()
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.rig.releaseTimeout)
	defer cancel()
	if err := s.lease.Release(ctx); err != nil {
		s.rig.log.Warn("session lease release failed", "session", s.id, "err", err)
		errs = append(errs, fmt.Errorf("release session lease: %w", err))
	}
	return errs
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
