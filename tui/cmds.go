package tui

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage"
	"looprig/themes"
)

// Every message a command sends, and the commands. Commands do all the
// I/O; each has a timeout; none touches the model.

type (
	listTickMsg struct{}
	listMsg     struct {
		infos []rig.SessionInfo
		err   error
		took  time.Duration
	}

	// hostedMsg: a session created or restored here is live.
	hostedMsg struct {
		id      string
		sess    *rig.Session
		sub     *hub.Subscription
		status  rig.Status
		outcome *rig.RestoreInfo // nil for a new session
		broke   *rig.BreakResult // the lease break before the restore (B), nil for none
	}
	// failedMsg: a create, restore, break or delete failed.
	failedMsg struct {
		id    string // "" for a create
		op    opKind
		err   error
		broke *rig.BreakResult // a restore after a lease break (B) failed: what the break did
	}

	// deletedMsg: a session was deleted.
	deletedMsg struct{ id string }

	// historyMsg: a chunk of a journal replay.
	historyMsg struct {
		id      string
		gen     int
		rd      *replay // the read goes on (more); nil once it ended
		envs    []event.Envelope
		lastSeq uint64
		tip     uint64
		more    bool
		err     error
	}
	tailTickMsg struct {
		id  string
		gen int
	}

	// subMsg: what a hub subscription had queued.
	subMsg struct {
		id      string
		gen     int
		envs    []event.Envelope
		dropped uint64
		closed  bool
		err     error
	}
	// recoveredMsg: a lost subscription replaced and the gap replayed.
	recoveredMsg struct {
		id   string
		gen  int
		sub  *hub.Subscription
		envs []event.Envelope
		err  error
	}

	// endedMsg: a hosted session's Done closed.
	endedMsg struct {
		id       string
		sess     *rig.Session
		fault    error
		oldEpoch uint64
		newEpoch uint64
		holder   string
	}

	// opMsg: a submit, an interrupt or a gate response ended.
	opMsg struct {
		id   string
		op   opKind
		err  error
		note string
	}
	shutdownMsg struct {
		id   string
		sess *rig.Session
		err  error
	}
	quitMsg       struct{ err error }
	settleMsg     struct{ gen int }
	flashOffMsg   struct{ gen int }
	spinMsg       struct{ gen int }
	themeSavedMsg struct{ err error }
)

func (m *model) listCmd() tea.Cmd {
	h := m.h
	if h.store == nil {
		return nil
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(h.ctx, listTimeout)
		defer cancel()
		start := time.Now()
		infos, err := rig.ListSessions(ctx, h.store)
		return listMsg{infos: infos, err: err, took: time.Since(start)}
	}
}

func listTick(after time.Duration) tea.Cmd {
	return tea.Tick(after, func(time.Time) tea.Msg { return listTickMsg{} })
}

func (m *model) createCmd(profile, title, seed string) tea.Cmd {
	h := m.h
	return func() tea.Msg {
		p, key := h.profileNamed(profile)
		r, err := h.rigFor(p, key, false)
		if err != nil {
			return failedMsg{op: opCreate, err: err}
		}
		ctx, cancel := context.WithTimeout(h.ctx, createTimeout)
		defer cancel()
		opts := []rig.SessionOption{rig.WithTitle(title)}
		if seed != "" {
			opts = append(opts, rig.WithSeedSnapshot(seed))
		}
		s, err := r.NewSession(ctx, opts...)
		if err != nil {
			return failedMsg{op: opCreate, err: err}
		}
		id := s.SessionID().String()
		h.hold(id, s)
		sub := s.Subscribe(hub.Filter{AllLoops: true})
		return hostedMsg{id: id, sess: s, sub: sub, status: s.Status()}
	}
}

// restoreCmd restores session id here under the profile it recorded;
// accept accepts any configuration drift (the drift dialog's confirm).
func (m *model) restoreCmd(id string, accept bool) tea.Cmd {
	h := m.h
	return func() tea.Msg {
		msg, err := h.restore(id, accept)
		if err != nil {
			return failedMsg{id: id, op: opRestore, err: err}
		}
		return msg
	}
}

// breakCmd takes session id's lease by force and restores the session
// here. rig.BreakLease breaks the way every presenter does: it takes the
// lease, fences the journal at the new epoch (the old holder's next append
// conflicts at once, before its watchdog notices the loss) and releases
// it, in that order. Then the session is restored as r restores it
// (host.restore), which takes the lease again and fences once more:
// rig.RestoreSession takes the lease itself, there is no way to hand it
// one. The profile is resolved before anything is broken: a session that
// cannot be restored here (its profile is gone) is not taken from its
// holder.
func (m *model) breakCmd(id string) tea.Cmd {
	h := m.h
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(h.ctx, opTimeout)
		defer cancel()
		uid, err := rig.FindSession(ctx, h.store, id)
		if err != nil {
			return failedMsg{id: id, op: opBreak, err: err}
		}
		if _, _, err := h.profileFor(ctx, uid); err != nil {
			return failedMsg{id: id, op: opBreak, err: err}
		}
		res, err := rig.BreakLease(ctx, h.store, uid)
		if res.Held && res.Epoch > 0 {
			h.log.Info("lease broken", "session", id, "epoch", res.Epoch, "previous_epoch", res.PreviousEpoch,
				"previous_holder", holderText(res.PreviousHolder), "fenced", res.Fenced)
		}
		if res.FenceErr != nil {
			h.log.Warn("lease broken, journal not fenced", "session", id, "epoch", res.Epoch, "err", res.FenceErr)
		}
		if err != nil {
			// Nothing was broken (Epoch 0), or the release after the break
			// failed.
			return failedMsg{id: id, op: opBreak, err: err}
		}
		msg, err := h.restore(id, false)
		if err != nil {
			return failedMsg{id: id, op: opRestore, err: err, broke: &res}
		}
		msg.broke = &res
		return msg
	}
}

// deleteCmd deletes session id (rig.DeleteSession: under its lease; the
// journal, the catalog entry and its own workspace).
func (m *model) deleteCmd(id string) tea.Cmd {
	h := m.h
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(h.ctx, opTimeout)
		defer cancel()
		uid, err := uuid.Parse(id)
		if err != nil {
			return failedMsg{id: id, op: opDelete, err: err}
		}
		d, err := rig.DeleteSession(ctx, h.store, h.opts.Workspaces, uid)
		if err != nil {
			return failedMsg{id: id, op: opDelete, err: err}
		}
		h.log.Info("session deleted", "session", id, "epoch", d.Epoch, "workspace", d.Workspace)
		return deletedMsg{id: id}
	}
}

// replay is a journal read that goes on from chunk to chunk
// (historyCmd): its reader and the context it reads under, a child of the
// host's. Every chunk's reads are bounded by the host's readTimeout (arm):
// the time between chunks, while Update folds one, is not counted.
type replay struct {
	rp     *journal.EventReplayer
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func newReplay(parent context.Context) *replay {
	ctx, cancel := context.WithCancelCause(parent)
	return &replay{ctx: ctx, cancel: cancel}
}

// arm bounds the reads that follow by d: when they take longer, the
// context ends and the reader stops. The returned function disarms it.
func (r *replay) arm(d time.Duration) (disarm func()) {
	t := time.AfterFunc(d, func() {
		r.cancel(fmt.Errorf("reading the journal took longer than %s: %w", d, context.DeadlineExceeded))
	})
	return func() { t.Stop() }
}

// err is what stopped the read: err itself, or why the context ended
// (the timeout, quitting) when it did.
func (r *replay) err(err error) error {
	if err != nil && r.ctx.Err() != nil {
		return context.Cause(r.ctx)
	}
	return err
}

// close ends the read: the reader and its context.
func (r *replay) close() {
	if r.rp != nil {
		r.rp.Close()
	}
	r.cancel(context.Canceled)
}

// historyCmd reads up to historyChunk events of a journal after "after",
// continuing rd when it is given (rig.ReadEvents; its tip, rig.JournalTip).
func (m *model) historyCmd(id string, gen int, rd *replay, after uint64) tea.Cmd {
	h := m.h
	return func() tea.Msg {
		if rd == nil {
			rd = newReplay(h.ctx)
		}
		disarm := rd.arm(h.readTimeout)
		defer disarm()
		uid, err := uuid.Parse(id)
		if err != nil {
			rd.close()
			return historyMsg{id: id, gen: gen, lastSeq: after, err: err}
		}
		tip, terr := rig.JournalTip(rd.ctx, h.store, uid)
		if rd.rp == nil {
			rp, err := rig.ReadEvents(rd.ctx, h.store, uid, after)
			if err != nil {
				err = rd.err(err)
				rd.close()
				return historyMsg{id: id, gen: gen, lastSeq: after, err: err}
			}
			rd.rp = rp
		}
		msg := historyMsg{id: id, gen: gen, rd: rd, tip: tip}
		if terr != nil {
			msg.tip = 0
		}
		rp := rd.rp
		deadline := time.Now().Add(30 * time.Millisecond)
		exhausted := false
		for len(msg.envs) < historyChunk {
			if !rp.Next() {
				exhausted = true
				break
			}
			msg.envs = append(msg.envs, rp.Envelope())
			if len(msg.envs)%256 == 0 && time.Now().After(deadline) {
				break
			}
		}
		msg.lastSeq = rp.LastSeq()
		msg.err = rd.err(rp.Err())
		if msg.err == nil && !exhausted {
			msg.more = true
			return msg
		}
		rd.close()
		msg.rd = nil
		return msg
	}
}

func closeCmd(rd *replay) tea.Cmd {
	if rd == nil {
		return nil
	}
	return func() tea.Msg { rd.close(); return nil }
}

func tailTick(id string, gen int) tea.Cmd {
	return tea.Tick(tailEvery, func(time.Time) tea.Msg { return tailTickMsg{id: id, gen: gen} })
}

// subCmd waits for the subscription's next batch: everything queued, in
// one message.
func (m *model) subCmd(id string, gen int, sub *hub.Subscription) tea.Cmd {
	ctx := m.h.ctx
	return func() tea.Msg {
		envs, ok, err := sub.Next(ctx, 0)
		if err != nil && ctx.Err() != nil {
			return nil // quitting
		}
		msg := subMsg{id: id, gen: gen, envs: envs, dropped: sub.Dropped()}
		if !ok {
			msg.closed = true
			msg.err = sub.Err()
		}
		return msg
	}
}

// recoverCmd replaces a lost subscription: it subscribes again first, then
// replays the journal after the last sequence seen, so nothing falls in
// between (duplicates are dropped by sequence when folded).
func (m *model) recoverCmd(id string, gen int, s *rig.Session, after uint64) tea.Cmd {
	h := m.h
	return func() tea.Msg {
		sub := s.Subscribe(hub.Filter{AllLoops: true})
		ctx, cancel := context.WithTimeout(h.ctx, h.readTimeout)
		defer cancel()
		rp, err := rig.ReadEvents(ctx, h.store, s.SessionID(), after)
		if err != nil {
			return recoveredMsg{id: id, gen: gen, sub: sub, err: err}
		}
		defer rp.Close()
		var envs []event.Envelope
		for rp.Next() {
			envs = append(envs, rp.Envelope())
		}
		return recoveredMsg{id: id, gen: gen, sub: sub, envs: envs, err: rp.Err()}
	}
}

// watchCmd waits for a hosted session to stop accepting work, and when it
// is a fault, finds out who holds the lease now.
func (m *model) watchCmd(id string, s *rig.Session) tea.Cmd {
	h := m.h
	return func() tea.Msg {
		select {
		case <-s.Done():
		case <-h.ctx.Done():
			return nil
		}
		msg := endedMsg{id: id, sess: s, fault: s.Err(), oldEpoch: s.Epoch()}
		if msg.fault == nil {
			return msg
		}
		var lost *storage.LeaseLostError
		if errors.As(msg.fault, &lost) {
			msg.newEpoch = lost.NewEpoch
		}
		ctx, cancel := context.WithTimeout(h.ctx, time.Second)
		st, err := rig.ProbeSession(ctx, h.store, s.SessionID())
		cancel()
		if err == nil && st.Epoch > s.Epoch() {
			msg.newEpoch = max(msg.newEpoch, st.Epoch)
			if st.Held {
				msg.holder = holderText(st.Holder)
			}
		}
		return msg
	}
}

func (m *model) submitCmd(id string, s *rig.Session, input string) tea.Cmd {
	h := m.h
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(h.ctx, opTimeout)
		defer cancel()
		ti, err := s.Submit(ctx, input)
		return opMsg{id: id, op: opSubmit, err: err, note: "turn " + strconv.Itoa(ti.Index) + " started"}
	}
}

func (m *model) interruptCmd(id string, s *rig.Session) tea.Cmd {
	h := m.h
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(h.ctx, interruptTimeout)
		defer cancel()
		return opMsg{id: id, op: opInterrupt, err: s.Interrupt(ctx), note: "turn interrupted"}
	}
}

func (m *model) gateCmd(id string, s *rig.Session, gateID string, approve bool) tea.Cmd {
	h := m.h
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(h.ctx, opTimeout)
		defer cancel()
		note := "gate denied"
		if approve {
			note = "gate approved"
		}
		return opMsg{id: id, op: opGate, err: s.RespondGate(ctx, gateID, approve), note: note}
	}
}

func (m *model) shutdownCmd(id string, s *rig.Session) tea.Cmd {
	h := m.h
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		err := s.Shutdown(ctx)
		h.drop(id, s)
		return shutdownMsg{id: id, sess: s, err: err}
	}
}

func (m *model) quitCmd(bound time.Duration) tea.Cmd {
	h := m.h
	return func() tea.Msg { return quitMsg{err: h.shutdownAll(bound)} }
}

func (m *model) saveThemeCmd(name string) tea.Cmd {
	dir := m.h.opts.ConfigDir
	if dir == "" {
		return nil
	}
	return func() tea.Msg { return themeSavedMsg{err: themes.SaveChoice(dir, name)} }
}

func settle(gen int) tea.Cmd {
	return tea.Tick(120*time.Millisecond, func(time.Time) tea.Msg { return settleMsg{gen: gen} })
}

func flashOff(gen int) tea.Cmd {
	return tea.Tick(5*time.Second, func(time.Time) tea.Msg { return flashOffMsg{gen: gen} })
}

func spin(gen int) tea.Cmd {
	return tea.Tick(120*time.Millisecond, func(time.Time) tea.Msg { return spinMsg{gen: gen} })
}
