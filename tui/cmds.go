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
		broke   uint64           // epoch taken by a lease break before the restore
	}
	// failedMsg: a create, restore, break or delete failed.
	failedMsg struct {
		id  string // "" for a create
		op  opKind
		err error
	}

	// deletedMsg: a session was deleted.
	deletedMsg struct{ id string }

	// historyMsg: a chunk of a journal replay.
	historyMsg struct {
		id      string
		gen     int
		rp      *journal.EventReplayer
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
		r, err := h.rigFor(profile, false)
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

func (m *model) restoreCmd(id, profile string, accept bool) tea.Cmd {
	h := m.h
	return func() tea.Msg {
		msg, err := h.restore(id, profile, accept)
		if err != nil {
			return failedMsg{id: id, op: opRestore, err: err}
		}
		return msg
	}
}

// breakCmd takes the lease by force (storage.Breaker), releases the
// broken grant at once and restores the session here. rig.RestoreSession
// takes the lease itself (there is no way to hand it one), and the restore
// must follow at once anyway: its fence is what makes the stale holder's
// next append conflict, while the break alone only makes its watchdog
// notice.
func (m *model) breakCmd(id, profile string) tea.Cmd {
	h := m.h
	return func() tea.Msg {
		b, ok := h.store.(storage.Breaker)
		if !ok {
			return failedMsg{id: id, op: opBreak, err: errors.New("this store cannot break leases")}
		}
		ctx, cancel := context.WithTimeout(h.ctx, opTimeout)
		defer cancel()
		name := storage.SessionName(id)
		l, err := b.Break(ctx, name)
		if err != nil {
			return failedMsg{id: id, op: opBreak, err: err}
		}
		epoch := l.Epoch()
		if err := l.Release(ctx); err != nil {
			return failedMsg{id: id, op: opBreak, err: fmt.Errorf("release the broken lease (epoch %d): %w", epoch, err)}
		}
		h.log.Info("lease broken", "session", id, "epoch", epoch)
		msg, err := h.restore(id, profile, false)
		if err != nil {
			return failedMsg{id: id, op: opRestore, err: err}
		}
		msg.broke = epoch
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

// historyCmd reads up to historyChunk events of a journal after "after",
// continuing rp when it is given.
func (m *model) historyCmd(id string, gen int, rp *journal.EventReplayer, after uint64) tea.Cmd {
	h := m.h
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(h.ctx, historyTimeout)
		defer cancel()
		name := storage.SessionName(id)
		tip, terr := h.store.Tip(ctx, name)
		if rp == nil {
			var err error
			rp, err = journal.NewEventReplayer(h.ctx, h.store, name, after)
			if err != nil {
				return historyMsg{id: id, gen: gen, lastSeq: after, err: err}
			}
		}
		msg := historyMsg{id: id, gen: gen, rp: rp, tip: tip}
		if terr != nil {
			msg.tip = 0
		}
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
		msg.err = rp.Err()
		if msg.err == nil && !exhausted {
			msg.more = true
			return msg
		}
		rp.Close()
		msg.rp = nil
		return msg
	}
}

func closeCmd(rp *journal.EventReplayer) tea.Cmd {
	if rp == nil {
		return nil
	}
	return func() tea.Msg { rp.Close(); return nil }
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
		ctx, cancel := context.WithTimeout(h.ctx, historyTimeout)
		defer cancel()
		rp, err := journal.NewEventReplayer(ctx, h.store, storage.SessionName(id), after)
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
		if p, ok := h.store.(storage.LeaseProber); ok {
			ctx, cancel := context.WithTimeout(h.ctx, time.Second)
			st, err := p.Probe(ctx, storage.SessionName(id))
			cancel()
			if err == nil && st.Epoch > s.Epoch() {
				msg.newEpoch = max(msg.newEpoch, st.Epoch)
				if st.Held {
					msg.holder = holderText(st.Holder)
				}
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
