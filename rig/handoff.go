package rig

import (
	"context"
	"encoding/json"
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
type HandOffRequest struct {
	// To names the taker ("pid@host"); HandedOff records it.
	To string `json:"to"`
	// Interrupt: interrupt the running turn rather than wait for its end.
	Interrupt bool `json:"interrupt"`
	// Epoch is the holder's lease epoch the request is for: a later
	// holder does not take it for itself.
	Epoch uint64    `json:"epoch"`
	At    time.Time `json:"at"`
}

// maxHandOffRequest bounds the request a holder reads.
const maxHandOffRequest = 4 << 10

// RequestHandOff writes req for session id, replacing any request there.
func RequestHandOff(ctx context.Context, store storage.Store, id uuid.UUID, req HandOffRequest) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := store.Put(ctx, handoffKey(id.String()), b, storage.AnyRevision); err != nil {
		return fmt.Errorf("ask the holder of %s to hand it over: %w", ShortID(id.String()), err)
	}
	return nil
}

// WithdrawHandOff removes the request to hand session id over, if any.
func WithdrawHandOff(ctx context.Context, store storage.Store, id uuid.UUID) error {
	return store.DeleteKey(ctx, handoffKey(id.String()), storage.AnyRevision)
}

// readHandOffRequest reads the request for session id; ok is false when
// there is none, or it cannot be read (an unreadable request is never
// acted on).
func readHandOffRequest(ctx context.Context, store storage.Store, id string) (req HandOffRequest, ok bool) {
	e, err := store.Get(ctx, handoffKey(id))
	if err != nil || len(e.Value) > maxHandOffRequest || json.Unmarshal(e.Value, &req) != nil || req.To == "" {
		return HandOffRequest{}, false
	}
	return req, true
}

// HandingOffError refuses a turn while the session is being handed over.
type HandingOffError struct {
	To string
}

func (e *HandingOffError) Error() string {
	return "the session is being handed over to " + e.To + ": it takes no new turn"
}

// HandOff hands the session over to to: admission closes (new turns get
// *HandingOffError), the running turn ends (interrupted when interrupt,
// else awaited until ctx ends: then the handover is called off and the
// session goes on), the workspace is checkpointed (event.TriggerHandoff,
// whatever the profile's mode but off), HandedOff{to} is journaled, and
// the session shuts down, releasing its leases for the taker.
func (s *Session) HandOff(ctx context.Context, to string, interrupt bool) error {
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
			if err := s.Interrupt(ctx); err != nil && !isNoTurn(err) {
				s.callOffHandOff()
				return err
			}
		}
		select {
		case <-t.done:
		case <-ctx.Done():
			s.callOffHandOff()
			return fmt.Errorf("hand over to %s: turn %d is still running: %w", to, t.index, context.Cause(ctx))
		}
	}
	s.checkpointWorkspace(event.TriggerHandoff, s.lastTurnID())
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

// handoffPoll is how often a session looks for a request to hand it over
// (WithHandOffPoll): a KV read.
const handoffPoll = time.Second

// handoffWait bounds how long a holder waits for its running turn to end
// before a handover it was asked for (without interrupt) is called off.
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
	req, ok := readHandOffRequest(ctx, s.rig.store, s.id.String())
	cancel()
	if !ok || req.Epoch != s.lease.Epoch() || !s.handoffStarted.CompareAndSwap(false, true) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), handoffWait)
		defer cancel()
		if err := s.HandOff(ctx, req.To, req.Interrupt); err != nil {
			s.rig.log.Warn("handover not done", "session", s.id, "to", req.To, "err", err)
			s.handoffStarted.Store(false)
		}
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
// (stopped, wedged, gone, or its turn runs on).
type HandOffTimeoutError struct {
	Session string
	Holder  storage.Holder
	Waited  time.Duration
}

func (e *HandOffTimeoutError) Error() string {
	return fmt.Sprintf("the holder of session %s (pid %d on %s) did not hand it over within %s (a running turn is awaited: --interrupt interrupts it); to force it: looprig lease break %s --yes",
		ShortID(e.Session), e.Holder.PID, e.Holder.Host, e.Waited, ShortID(e.Session))
}

// handOffPoll is how often AwaitHandOff looks whether the holder let go.
const handOffPoll = 200 * time.Millisecond

// AwaitHandOff asks the holder of session id at epoch to hand it over (as
// req says) and waits until it let go, at most wait: then
// *HandOffTimeoutError. A lease held at another epoch meanwhile (someone
// else took it) is an error too. The request is withdrawn whatever
// happens.
func AwaitHandOff(ctx context.Context, store storage.Store, id uuid.UUID, holder storage.Holder, req HandOffRequest, wait time.Duration) error {
	if err := RequestHandOff(ctx, store, id, req); err != nil {
		return err
	}
	defer func() {
		bg, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		WithdrawHandOff(bg, store, id)
	}()
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(handOffPoll)
	defer tick.Stop()
	for {
		now, epoch, err := SessionHolder(wctx, store, id)
		switch {
		case err == nil && now == nil:
			return nil
		case err == nil && epoch != req.Epoch:
			return fmt.Errorf("session %s was taken by pid %d on %s meanwhile", ShortID(id.String()), now.PID, now.Host)
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &HandOffTimeoutError{Session: id.String(), Holder: holder, Waited: wait}
		case <-tick.C:
		}
	}
}
