package rig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"looprig/rig/event"
	"looprig/rig/storage"
)

// Handover: a process that wants a session another process holds (on
// another machine, through a shared store) asks for it through the store;
// the holder finishes or interrupts the running turn, checkpoints the
// workspace, journals HandedOff and shuts down, and the taker restores
// it. The lease stays the only owner at every instant; a holder that does
// not answer is fenced as always (lease break).

// handoffKey is the KV key of the request to hand session id over.
func handoffKey(id string) string { return sessionsPrefix + id + "/handoff" }

// HandOffRequest asks the holder of a session at Epoch to hand it over.
//
// A request is the taker's for as long as it waits: the holder acts on it
// only while it is there. The taker withdraws it when it gives up (its
// timeout, its cancellation), and renews it while it waits (Beat, every
// RenewMS): a holder waiting for its running turn looks at it every poll
// and calls the handover off when it is gone, replaced by another one, or
// no longer renewed (its taker died). Before it journals HandedOff, the
// holder marks it Committed by compare-and-swap; from then on the taker
// can no longer withdraw it (its delete conflicts), and a taker that
// withdrew first leaves nothing to commit: exactly one of the two wins.
type HandOffRequest struct {
	// To names the taker ("pid@host" of the looprig take that asks);
	// HandedOff records it.
	To string `json:"to"`
	// Interrupt: interrupt the running turn rather than wait for its end.
	Interrupt bool `json:"interrupt"`
	// Epoch is the holder's lease epoch the request is for: a later
	// holder does not take it for itself.
	Epoch uint64    `json:"epoch"`
	At    time.Time `json:"at"`
	// ID tells this request from any other for the same session (a
	// request withdrawn and written again): AwaitHandOff draws one.
	ID string `json:"id,omitempty"`
	// RenewMS is how often, in milliseconds, the taker writes the request
	// again while it waits (each time with the next Beat); 0 for a taker
	// that does not. A holder that sees no new beat for
	// handoffStaleRenewals renewals calls the handover off.
	RenewMS int64  `json:"renew_ms,omitempty"`
	Beat    uint64 `json:"beat,omitempty"`
	// Committed: the holder has agreed to hand the session over (it
	// journals HandedOff next, then shuts down); the request can no longer
	// be withdrawn.
	Committed bool `json:"committed,omitempty"`
}

// maxHandOffRequest bounds the request a holder reads.
const maxHandOffRequest = 4 << 10

// handoffStaleRenewals is how many renewals a taker may miss before its
// holder takes it for gone.
const handoffStaleRenewals = 10

// RequestHandOff writes req for session id, replacing any request there.
func RequestHandOff(ctx context.Context, store storage.Store, id uuid.UUID, req HandOffRequest) error {
	_, err := putHandOffRequest(ctx, store, id, req, storage.AnyRevision)
	return err
}

// putHandOffRequest writes req at the expected revision and returns the
// new one.
func putHandOffRequest(ctx context.Context, store storage.Store, id uuid.UUID, req HandOffRequest, expected uint64) (uint64, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return 0, err
	}
	rev, err := store.Put(ctx, handoffKey(id.String()), b, expected)
	if err != nil {
		return 0, fmt.Errorf("ask the holder of %s to hand it over: %w", ShortID(id.String()), err)
	}
	return rev, nil
}

// WithdrawHandOff removes the request to hand session id over, if any.
func WithdrawHandOff(ctx context.Context, store storage.Store, id uuid.UUID) error {
	return store.DeleteKey(ctx, handoffKey(id.String()), storage.AnyRevision)
}

// readHandOffRequest reads the request for session id and its revision;
// ok is false when there is none, or it cannot be read (an unreadable
// request is never acted on), and err says whether the store could not be
// asked (then ok is false too).
func readHandOffRequest(ctx context.Context, store storage.Store, id string) (req HandOffRequest, rev uint64, ok bool, err error) {
	e, err := store.Get(ctx, handoffKey(id))
	var nf *storage.NotFoundError
	switch {
	case errors.As(err, &nf):
		return HandOffRequest{}, 0, false, nil
	case err != nil:
		return HandOffRequest{}, 0, false, err
	}
	if len(e.Value) > maxHandOffRequest || json.Unmarshal(e.Value, &req) != nil || req.To == "" {
		return HandOffRequest{}, 0, false, nil
	}
	return req, e.Revision, true, nil
}

// HandingOffError refuses a turn while the session is being handed over.
type HandingOffError struct {
	To string
}

func (e *HandingOffError) Error() string {
	return "the session is being handed over to " + e.To + ": it takes no new turn"
}

// HandOffCalledOffError: the holder called a handover off because its
// request was withdrawn (the taker gave up), replaced by another one, or
// no longer renewed (the taker is gone). The session goes on.
type HandOffCalledOffError struct {
	To     string
	Reason string
}

func (e *HandOffCalledOffError) Error() string {
	return fmt.Sprintf("hand over to %s called off: %s; the session goes on", e.To, e.Reason)
}

// HandOff hands the session over to to: admission closes (new turns get
// *HandingOffError), the running turn ends (interrupted when interrupt,
// recorded as TurnInterrupted{handoff}, else awaited until ctx ends: then
// the handover is called off and the session goes on), the workspace is
// checkpointed (event.TriggerHandoff, whatever the profile's mode but
// off), HandedOff{to} is journaled, and the session shuts down, releasing
// its leases for the taker.
func (s *Session) HandOff(ctx context.Context, to string, interrupt bool) error {
	return s.handOff(ctx, to, interrupt, nil)
}

// handOff is HandOff; req, when not nil, is the request it answers: it is
// read again at every poll while the running turn is awaited, and marked
// committed before HandedOff is journaled; a request that is gone,
// replaced or stale calls the handover off (*HandOffCalledOffError).
func (s *Session) handOff(ctx context.Context, to string, interrupt bool, req *heldRequest) error {
	s.mu.Lock()
	if err := s.admitLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	s.handingOff = to
	t := s.runningTurnLocked()
	s.mu.Unlock()
	if t != nil {
		if interrupt {
			if err := s.interrupt(ctx, causeHandoff); err != nil && !isNoTurn(err) {
				s.callOffHandOff()
				return err
			}
		}
		tick := time.NewTicker(s.rig.handoffPoll)
		defer tick.Stop()
	wait:
		for {
			select {
			case <-t.done:
				break wait
			case <-ctx.Done():
				s.callOffHandOff()
				return fmt.Errorf("hand over to %s: turn %d is still running: %w", to, t.index, context.Cause(ctx))
			case <-tick.C:
				if req == nil {
					continue
				}
				if why := req.gone(ctx); why != "" {
					s.callOffHandOff()
					return &HandOffCalledOffError{To: to, Reason: why}
				}
			}
		}
	}
	s.checkpointWorkspace(event.TriggerHandoff, s.lastTurnID())
	if req != nil {
		if err := req.commit(ctx); err != nil {
			s.callOffHandOff()
			return err
		}
	}
	bg, cancel := s.bg()
	_, err := s.hub.Publish(bg, "", event.HandedOff{To: to})
	cancel()
	if err != nil {
		s.callOffHandOff()
		return fmt.Errorf("hand over to %s: %w", to, s.mutationErr(err))
	}
	s.rig.log.Info("session handed over", "session", s.id, "to", to)
	return s.Shutdown(ctx)
}

// callOffHandOff opens admission again after a handover that did not
// happen.
func (s *Session) callOffHandOff() {
	s.mu.Lock()
	s.handingOff = ""
	s.mu.Unlock()
}

func isNoTurn(err error) bool {
	_, ok := err.(*NoTurnError)
	return ok
}

// heldRequest is the request a holder answers, as it last read it.
type heldRequest struct {
	s     *Session
	req   HandOffRequest
	rev   uint64
	beat  time.Time // when the holder last saw it renewed (handoffNow)
	since time.Time // when the holder took it up
}

// gone reads the request again: "" while it is still the one the holder
// answers and still wanted, else why not (withdrawn, replaced, no longer
// renewed, or waited for longer than handoffWait). A store that cannot be
// asked counts as no renewal.
func (h *heldRequest) gone(ctx context.Context) string {
	now := h.s.rig.handoffNow()
	if now.Sub(h.since) > handoffWait {
		return fmt.Sprintf("its running turn did not end within %s", handoffWait)
	}
	rctx, cancel := h.s.bg()
	req, rev, ok, err := readHandOffRequest(rctx, h.s.rig.store, h.s.id.String())
	cancel()
	switch {
	case err == nil && !ok:
		return "the request was withdrawn (the taker gave up)"
	case err == nil && req.ID != h.req.ID:
		return "the request was replaced by another one"
	case err == nil && req.Beat != h.req.Beat:
		h.req, h.rev, h.beat = req, rev, now
		return ""
	case err == nil:
		h.rev = rev
	}
	if h.req.RenewMS > 0 && now.Sub(h.beat) > handoffStaleRenewals*time.Duration(h.req.RenewMS)*time.Millisecond {
		return fmt.Sprintf("the taker stopped renewing the request %s ago (it is gone)", now.Sub(h.beat).Round(time.Second))
	}
	return ""
}

// commit marks the request committed, by compare-and-swap at the
// revision last read (read again after a renewal came between): from
// then on the taker cannot withdraw it. A request that is gone, replaced
// or stale is *HandOffCalledOffError.
func (h *heldRequest) commit(ctx context.Context) error {
	for range 8 {
		if why := h.gone(ctx); why != "" {
			return &HandOffCalledOffError{To: h.req.To, Reason: why}
		}
		req := h.req
		req.Committed = true
		rctx, cancel := h.s.bg()
		rev, err := putHandOffRequest(rctx, h.s.rig.store, h.s.id, req, h.rev)
		cancel()
		var conflict *storage.ConflictError
		switch {
		case err == nil:
			h.req, h.rev = req, rev
			return nil
		case !errors.As(err, &conflict):
			return &HandOffCalledOffError{To: h.req.To, Reason: "the request could not be marked committed: " + err.Error()}
		}
	}
	return &HandOffCalledOffError{To: h.req.To, Reason: "the request kept changing while the holder committed to it"}
}

// handoffPoll is how often a session looks for a request to hand it over
// (WithHandOffPoll): a KV read.
const handoffPoll = time.Second

// handoffWait bounds how long a holder waits for its running turn to end
// before a handover it was asked for (without interrupt) is called off,
// whatever its taker does.
const handoffWait = 10 * time.Minute

// checkHandOff acts on a request to hand the session over, once: a
// request for this holder's epoch starts HandOff in a goroutine the
// session owns (it ends with the session's shutdown, or when the handover
// is called off).
func (s *Session) checkHandOff() {
	if s.handoffStarted.Load() {
		return
	}
	ctx, cancel := s.bg()
	req, rev, ok, err := readHandOffRequest(ctx, s.rig.store, s.id.String())
	cancel()
	s.mu.Lock()
	dropped := req.ID != "" && req.ID == s.handoffDropped
	s.mu.Unlock()
	if err != nil || !ok || dropped || req.Committed || req.Epoch != s.lease.Epoch() || !s.handoffStarted.CompareAndSwap(false, true) {
		return
	}
	now := s.rig.handoffNow()
	h := &heldRequest{s: s, req: req, rev: rev, beat: now, since: now}
	go func() {
		err := s.handOff(s.ctx, req.To, req.Interrupt, h)
		if err == nil {
			return
		}
		s.rig.log.Warn("handover not done", "session", s.id, "to", req.To, "err", err)
		// A request called off is never taken up again; one its taker
		// left behind (no longer renewed) is removed, unless it changed.
		s.mu.Lock()
		s.handoffDropped = h.req.ID
		s.mu.Unlock()
		var off *HandOffCalledOffError
		if errors.As(err, &off) && h.req.ID != "" {
			ctx, cancel := s.bg()
			s.rig.store.DeleteKey(ctx, handoffKey(s.id.String()), h.rev)
			cancel()
		}
		s.handoffStarted.Store(false)
	}()
}

// SessionHolder is who holds session id's lease now, and its epoch; nil
// when nobody does.
func SessionHolder(ctx context.Context, store storage.Store, id uuid.UUID) (*storage.Holder, uint64, error) {
	st, err := store.Probe(ctx, storage.SessionName(id.String()))
	if err != nil || !st.Held {
		return nil, st.Epoch, err
	}
	h := st.Holder
	return &h, st.Epoch, nil
}

// HandOffTimeoutError: the holder did not hand the session over in time
// (stopped, wedged, gone, or its turn runs on). Its request was withdrawn:
// the holder calls the handover off and its session goes on.
type HandOffTimeoutError struct {
	Session string
	Holder  storage.Holder
	Waited  time.Duration
}

func (e *HandOffTimeoutError) Error() string {
	return fmt.Sprintf("the holder of session %s (pid %d on %s) did not hand it over within %s; the request is withdrawn and the session goes on there (a running turn is awaited: --interrupt interrupts it)",
		ShortID(e.Session), e.Holder.PID, e.Holder.Host, e.Waited)
}

// handOffPoll is how often AwaitHandOff looks whether the holder let go.
const handOffPoll = 200 * time.Millisecond

// handOffRenew is how often AwaitHandOff writes its request again while
// it waits, so that the holder knows it is still wanted.
const handOffRenew = time.Second

// HandOffOption configures AwaitHandOff.
type HandOffOption func(*handOffConfig)

type handOffConfig struct {
	progress func(CheckpointProgress)
	renew    time.Duration
}

// WithHandOffProgress has progress called whenever the holder's catalog
// entry says it checkpoints the workspace (the last turn's checkpoint,
// then the handover's) and how far it is, so that the taker says what it
// waits for.
func WithHandOffProgress(progress func(CheckpointProgress)) HandOffOption {
	return func(c *handOffConfig) { c.progress = progress }
}

// WithHandOffRenew sets how often AwaitHandOff renews its request
// (default 1 s; a holder takes a request not renewed for ten times that
// for its taker's).
func WithHandOffRenew(d time.Duration) HandOffOption {
	return func(c *handOffConfig) { c.renew = d }
}

// HandOffOutcome is how the wait for a holder ended.
type HandOffOutcome struct {
	// Committed: the holder agreed to hand the session over (it journals
	// HandedOff, then lets go). False when the lease came free without
	// that: the holder's lease expired (it was stopped, or its machine
	// lost the store) or it died. Then no hand-over happened: what the
	// holder did after its last checkpoint is not in it.
	Committed bool
}

// AwaitHandOff asks the holder of session id at epoch to hand it over (as
// req says) and waits until it let go, at most wait without a sign of
// progress: then *HandOffTimeoutError. A holder whose catalog entry says
// its checkpoint of the workspace moves on is answering: the wait runs
// again from each move (a checkpoint of minutes never fails a handover).
// A lease held at another epoch meanwhile (someone else took it) is an
// error too.
//
// The request is renewed while it waits, and withdrawn whenever the wait
// ends without the holder letting go (a timeout, ctx's end, an error), by
// compare-and-swap: a holder that has not committed to it calls the
// handover off and goes on; one that did (its commit came first) hands
// the session over, and the wait goes on for it to let go. The outcome
// says whether the holder committed: a lease that came free without it
// (expired, its holder dead) was not handed over.
func AwaitHandOff(ctx context.Context, store storage.Store, id uuid.UUID, holder storage.Holder, req HandOffRequest, wait time.Duration, opts ...HandOffOption) (HandOffOutcome, error) {
	cfg := handOffConfig{renew: handOffRenew}
	for _, o := range opts {
		o(&cfg)
	}
	if req.ID == "" {
		req.ID = newID()
	}
	req.RenewMS, req.Beat, req.Committed = cfg.renew.Milliseconds(), 0, false
	if req.RenewMS <= 0 {
		req.RenewMS = 1
	}
	rev, err := putHandOffRequest(ctx, store, id, req, storage.AnyRevision)
	if err != nil {
		return HandOffOutcome{}, err
	}
	w := &handOffWait{ctx: ctx, store: store, id: id, holder: holder, wait: wait, cfg: cfg, req: req, rev: rev}
	done := false
	defer func() { w.end(done) }()
	done, err = w.await()
	return w.out, err
}

// handOffWait is one AwaitHandOff under way: the request it wrote (req,
// at revision rev, last renewed at renewed) and what it learned (out).
type handOffWait struct {
	ctx     context.Context
	store   storage.Store
	id      uuid.UUID
	holder  storage.Holder
	wait    time.Duration
	cfg     handOffConfig
	req     HandOffRequest
	rev     uint64
	renewed time.Time
	out     HandOffOutcome
}

// await polls until the holder let go (done), its lease is held at
// another epoch, ctx ends or the wait times out, renewing the request
// meanwhile.
func (w *handOffWait) await() (done bool, err error) {
	deadline := time.NewTimer(w.wait)
	defer deadline.Stop()
	// expired ends the wait at its deadline: the request is withdrawn,
	// and the wait is over (*HandOffTimeoutError) unless the holder
	// committed to it first; then it journals HandedOff and shuts down,
	// and the wait goes on for that (nil).
	expired := func() error {
		if err := w.timedOut(); err != nil {
			return err
		}
		deadline.Reset(w.wait)
		return nil
	}
	tick := time.NewTicker(handOffPoll)
	defer tick.Stop()
	w.renewed = time.Now()
	var last *CheckpointProgress
	for {
		now, epoch, err := SessionHolder(w.ctx, w.store, w.id)
		switch {
		case err == nil && now == nil:
			w.letGo()
			return true, nil
		case err == nil && epoch != w.req.Epoch:
			return false, fmt.Errorf("session %s was taken by pid %d on %s meanwhile", ShortID(w.id.String()), now.PID, now.Host)
		}
		if c, err := ReadCatalog(w.ctx, w.store, w.id.String()); err == nil && c.Checkpointing != nil && c.Epoch == w.req.Epoch {
			if last == nil || *c.Checkpointing != *last {
				deadline.Reset(w.wait) // it answers: the checkpoint moves on
				last = c.Checkpointing
			}
			if w.cfg.progress != nil {
				w.cfg.progress(*c.Checkpointing)
			}
		}
		// The deadline comes first. A look at a holder that does not
		// answer (stopped: its presence is silent) takes seconds, so the
		// deadline and the next tick are both there when it returns; left
		// to select's random pick, the wait would run on by another look
		// at each pick of the tick, past its timeout and, for a stopped
		// holder, past its lease's expiry: the session would be taken
		// from it after all.
		select {
		case <-deadline.C:
			if err := expired(); err != nil {
				return false, err
			}
			continue
		default:
		}
		select {
		case <-w.ctx.Done():
			return false, w.cancelled()
		case <-deadline.C:
			if err := expired(); err != nil {
				return false, err
			}
		case <-tick.C:
			if w.out.Committed || time.Since(w.renewed) < w.cfg.renew {
				continue
			}
			if err := w.renew(); err != nil {
				return false, err
			}
		}
	}
}

// bg is a bounded context for the writes that must happen even once ctx
// is done (the withdrawal, the cleanup).
func (w *handOffWait) bg() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(w.ctx), 5*time.Second)
}

// letGo is the holder's letting go: it may have committed to the request
// since the last renewal (then out.Committed).
func (w *handOffWait) letGo() {
	if w.out.Committed {
		return
	}
	rctx, cancel := w.bg()
	if r, _, ok, _ := readHandOffRequest(rctx, w.store, w.id.String()); ok && r.ID == w.req.ID && r.Committed {
		w.out.Committed = true
	}
	cancel()
}

// cancelled withdraws the request once ctx is done, and says whether the
// holder had committed to it first.
func (w *handOffWait) cancelled() error {
	if err := w.withdraw(); err == nil && w.out.Committed {
		return fmt.Errorf("%w; the holder had already agreed to hand session %s over: it stops, and 'looprig restore %s' brings it back",
			w.ctx.Err(), ShortID(w.id.String()), ShortID(w.id.String()))
	}
	return w.ctx.Err()
}

// timedOut withdraws the request once the wait timed out:
// *HandOffTimeoutError unless the holder committed to it first (then nil:
// the wait goes on for it to let go).
func (w *handOffWait) timedOut() error {
	if err := w.withdraw(); err != nil {
		return err
	}
	if !w.out.Committed {
		return &HandOffTimeoutError{Session: w.id.String(), Holder: w.holder, Waited: w.wait}
	}
	return nil
}

// renew writes the request again, one beat on, by compare-and-swap; a
// conflict is settled.
func (w *handOffWait) renew() error {
	next := w.req
	next.Beat++
	rctx, cancel := w.bg()
	r, err := putHandOffRequest(rctx, w.store, w.id, next, w.rev)
	cancel()
	var conflict *storage.ConflictError
	switch {
	case err == nil:
		w.req, w.rev, w.renewed = next, r, time.Now()
	case errors.As(err, &conflict):
		if err := w.settle(); err != nil {
			return err
		}
	}
	return nil
}

// settle reads what became of the request after a write of ours
// conflicted: committed by the holder (ours still), or someone else's
// (replaced), or gone.
func (w *handOffWait) settle() error {
	rctx, cancel := w.bg()
	defer cancel()
	now, _, ok, err := readHandOffRequest(rctx, w.store, w.id.String())
	switch {
	case err != nil:
		return err
	case ok && now.ID == w.req.ID && now.Committed:
		w.out.Committed = true
		return nil
	case ok && now.ID != w.req.ID:
		return fmt.Errorf("another take replaced the request to hand session %s over (to %s)", ShortID(w.id.String()), now.To)
	}
	return fmt.Errorf("the request to hand session %s over was removed by someone else", ShortID(w.id.String()))
}

// withdraw removes the request unless the holder committed to it first
// (then out.Committed).
func (w *handOffWait) withdraw() error {
	if w.out.Committed {
		return nil
	}
	rctx, cancel := w.bg()
	err := w.store.DeleteKey(rctx, handoffKey(w.id.String()), w.rev)
	cancel()
	var conflict *storage.ConflictError
	if errors.As(err, &conflict) {
		return w.settle()
	}
	return err
}

// end is the last of a wait: once the holder let go (done) the request
// served its purpose and only ours is removed (the holder committed it:
// another revision); else it is withdrawn.
func (w *handOffWait) end(done bool) {
	if done {
		rctx, cancel := w.bg()
		defer cancel()
		if r, rev, ok, _ := readHandOffRequest(rctx, w.store, w.id.String()); ok && r.ID == w.req.ID {
			w.store.DeleteKey(rctx, handoffKey(w.id.String()), rev)
		}
		return
	}
	w.withdraw()
}
