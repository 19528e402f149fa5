package tui

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/google/uuid"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/fault"
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
		// same: nothing changed since the last listing (infos is it
		// again, see rig.Lister).
		same bool
	}

	// probedMsg: whether a host on this machine serves a session held
	// here (host.HolderLiveness; host.Probe for this process's own);
	// key is the holding the probe was for.
	probedMsg struct {
		id      string
		key     string
		pid     int  // the host's; 0 when no host answered
		stopped bool // the holder is stopped: not answering
		err     error
	}

	// attachedMsg: this TUI is attached to the host of a session, after
	// starting it (n, r, B) or to one that was running.
	attachedMsg struct {
		id      string
		c       *host.Client
		pid     int         // the host's
		status  host.Status // when attached
		created bool        // the host created the session (n)
		outcome *rig.RestoreInfo
		broke   *rig.BreakResult // the lease break before the restore (B), nil for none
	}
	// failedMsg: a create, restore, break, delete or attach failed.
	failedMsg struct {
		id      string // "" for a create
		op      opKind
		err     error
		broke   *rig.BreakResult // a restore after a lease break (B) failed: what the break did
		created bool             // an attach after a create failed
	}

	// deletedMsg: a session was deleted.
	deletedMsg struct{ id string }

	// journalMsg: what the follower f of a journal read (journalCmd);
	// atTip: nothing more was journaled (the history was read).
	journalMsg struct {
		id      string
		gen     int
		f       *rig.Follower
		envs    []event.Envelope
		atTip   bool
		history bool // read before the tip was first reached
		err     error
	}

	// subscribedMsg: an attached session is followed through its host.
	subscribedMsg struct {
		id       string
		gen      int
		c        *host.Client
		follower *rig.Follower
		err      error
	}
	// streamMsg: what an attached session's follower read, and how it
	// ended if it did.
	streamMsg struct {
		id        string
		gen       int
		envs      []event.Envelope
		recovered int        // readings that fell behind and were read again from the journal
		end       *streamEnd // nil while the events go on
	}

	// opMsg: a submit, an interrupt or a gate response ended.
	opMsg struct {
		id   string
		op   opKind
		err  error
		note string
	}
	// shutdownMsg: a shutdown (X) was answered.
	shutdownMsg struct {
		id  string
		c   *host.Client
		err error
	}
	settleMsg     struct{ gen int }
	flashOffMsg   struct{ gen int }
	spinMsg       struct{ gen int }
	themeSavedMsg struct{ err error }
)

// endKind is how a stream ended.
type endKind int

const (
	endStopped  endKind = iota // the session stopped (SessionStopped was delivered)
	endFault                   // the session lost its lease or could not persist
	endHostGone                // the host went away or refused to go on
)

// streamEnd is how an attached session's stream ended. For a fault, the
// epochs and the new holder (probed from the store) are filled in.
type streamEnd struct {
	kind     endKind
	err      error
	oldEpoch uint64
	newEpoch uint64
	holder   string
}

func (h *shared) listCmd() tea.Cmd {
	if h.store == nil {
		return nil
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(h.ctx, listTimeout)
		defer cancel()
		start := time.Now()
		infos, fresh, err := h.lister.List(ctx)
		return listMsg{infos: infos, err: err, took: time.Since(start), same: !fresh}
	}
}

func listTick(after time.Duration) tea.Cmd {
	return tea.Tick(after, func(time.Time) tea.Msg { return listTickMsg{} })
}

// createCmd starts a host that creates a session (n) and attaches to it.
func (h *shared) createCmd(req HostRequest) tea.Cmd {
	return func() tea.Msg {
		msg, fail := h.startAndAttach(req, createTimeout)
		if fail != nil {
			return *fail
		}
		if msg.c == nil {
			return nil // quitting
		}
		return msg
	}
}

// restoreCmd starts a host that restores session id under the profile it
// recorded, and attaches to it; accept accepts any configuration drift
// (the drift dialog's confirm).
func (h *shared) restoreCmd(id string, accept bool, ws rig.WorkspaceChoice) tea.Cmd {
	feed := newRestoreFeed()
	start := func() tea.Msg {
		defer feed.close()
		msg, fail := h.startAndAttach(HostRequest{Session: id, AcceptDrift: accept, Workspace: ws, Progress: feed.put}, restoreTimeout)
		if fail != nil {
			return *fail
		}
		if msg.c == nil {
			return nil
		}
		return msg
	}
	return tea.Batch(start, h.restoreProgressCmd(id, feed))
}

// attachCmd attaches to the host serving session id (a live session
// opened, or r on one).
func (h *shared) attachCmd(id string) tea.Cmd {
	return func() tea.Msg {
		msg, err := h.attach(id)
		if err != nil {
			if h.ctx.Err() != nil {
				return nil
			}
			return failedMsg{id: id, op: opAttach, err: err}
		}
		return msg
	}
}

// probeCmd asks whether a host on this machine serves session id, held
// by holder: host.HolderLiveness, which connects to no host where the
// process table can be read. A holder that is this process (a host in
// the TUI's own process: tests) is asked by connecting (host.Probe), as
// the process table cannot tell whether it serves. Both are bounded by
// probeTimeout.
func (h *shared) probeCmd(id, key string, holder storage.Holder) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(h.ctx, probeTimeout)
		defer cancel()
		if holder.PID != h.pid {
			dir, err := host.SocketDir(h.opts.StoreKey)
			if err != nil {
				return probedMsg{id: id, key: key, err: err}
			}
			switch host.HolderLiveness(ctx, dir, id, holder, h.dialOptions()...) {
			case rig.LivenessServing:
				return probedMsg{id: id, key: key, pid: holder.PID}
			case rig.LivenessStopped:
				return probedMsg{id: id, key: key, stopped: true, err: host.ErrNotHosted}
			}
			return probedMsg{id: id, key: key, err: host.ErrNotHosted}
		}
		hello, err := host.Probe(ctx, h.opts.StoreKey, id, h.dialOptions()...)
		if err != nil && h.ctx.Err() != nil {
			return nil
		}
		return probedMsg{id: id, key: key, pid: hello.PID, err: err}
	}
}

// breakCmd takes session id's lease by force and restores the session in
// a new host. rig.BreakLease breaks the way every presenter does: it takes
// the lease, fences the journal at the new epoch (the old holder's next
// append conflicts at once, before its watchdog notices the loss), stops
// the old holder's turn on this machine, journals it as interrupted and
// releases the lease, in that order. Then a host restores the session as r does,
// taking the lease again and fencing once more: rig.RestoreSession takes
// the lease itself, there is no way to hand it one. The profile is checked
// before anything is broken: a session that cannot be restored (its
// profile is gone) is not taken from its holder.
func (h *shared) breakCmd(id string) tea.Cmd {
	feed := newRestoreFeed()
	return tea.Batch(h.restoreProgressCmd(id, feed), func() tea.Msg {
		defer feed.close()
		ctx, cancel := context.WithTimeout(h.ctx, opTimeout)
		defer cancel()
		uid, err := rig.FindSession(ctx, h.store, id)
		if err != nil {
			return failedMsg{id: id, op: opBreak, err: err}
		}
		if err := h.profileFor(ctx, uid); err != nil {
			return failedMsg{id: id, op: opBreak, err: err}
		}
		if h.opts.StartHost == nil {
			return failedMsg{id: id, op: opBreak, err: errNoStartHost}
		}
		// Nothing is broken that no host here could then serve.
		if _, err := host.CheckSocketDir(h.opts.StoreKey); err != nil {
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
		msg, fail := h.startAndAttach(HostRequest{Session: id, Progress: feed.put}, restoreTimeout)
		if fail != nil {
			fail.broke = &res
			return *fail
		}
		if msg.c == nil {
			return nil
		}
		msg.broke = &res
		return msg
	})
}

// deleteCmd deletes session id (rig.DeleteSession: under its lease; the
// journal, the catalog entry and its own workspace).
func (h *shared) deleteCmd(id string) tea.Cmd {
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
		// Its checkpoints' blobs go at once, but those another session
		// references or may be about to (looprig gc deletes those later).
		if freed, err := rig.FreeSessionBlobs(ctx, h.store, []rig.DeletedSession{d}); err != nil {
			h.log.Warn("the deleted session's blobs were not all freed", "session", id, "err", err)
		} else {
			h.log.Info("blobs freed", "session", id, "deleted", freed[0].Deleted, "bytes", freed[0].DeletedBytes,
				"shared", freed[0].Shared, "renewed", freed[0].Renewed)
		}
		return deletedMsg{id: id}
	}
}

// tailWait bounds one wait of a journal's follower for what is appended:
// a session no longer shown stops being followed within it.
const tailWait = time.Second

// journalCmd reads what follower f of a journal yields next. Before the
// journal was read to its tip once (follow false): its next events, or
// that it reached the tip, the read bounded by the read timeout. Then
// (follow): what is appended next, nothing when nothing came within
// tailWait.
func (h *shared) journalCmd(id string, gen int, f *rig.Follower, follow bool) tea.Cmd {
	return func() tea.Msg {
		msg := journalMsg{id: id, gen: gen, f: f, history: !follow}
		if follow {
			ctx, cancel := context.WithTimeout(h.ctx, tailWait)
			defer cancel()
			msg.envs, msg.err = f.Next(ctx)
			switch {
			case h.ctx.Err() != nil:
				return nil // quitting
			case ctx.Err() != nil:
				msg.err = nil // nothing came
			}
			return msg
		}
		ctx, cancel := context.WithTimeoutCause(h.ctx, h.readTimeout,
			fmt.Errorf("reading the journal took longer than %s: %w", h.readTimeout, context.DeadlineExceeded))
		defer cancel()
		msg.envs, msg.atTip, msg.err = f.NextOrTip(ctx)
		if msg.err != nil && ctx.Err() != nil {
			if h.ctx.Err() != nil {
				return nil // quitting
			}
			msg.err = context.Cause(ctx)
		}
		return msg
	}
}

// followHostCmd starts following an attached session through its host,
// after sequence after: the host replays every durable event after it
// once, in order, then sends live ones (rig.Follow).
func (h *shared) followHostCmd(id string, gen int, c *host.Client, after uint64) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(h.ctx, opTimeout)
		defer cancel()
		f, err := rig.Follow(ctx, c, after)
		if err != nil && h.ctx.Err() != nil {
			return nil // quitting
		}
		return subscribedMsg{id: id, gen: gen, c: c, follower: f, err: err}
	}
}

// streamBatch bounds the events one streamMsg carries once a session is
// live: one Update folds them all, so a batch must leave room for the keys
// between batches. With a `seq 2000000` turn, 64 keeps key→frame p99 near
// 35 ms; a whole stream buffer (4096) made it 110 ms
// (BenchmarkEventPath2M). replayBatch bounds them while an attach replays
// the history: every Update is followed by a View, so the replay of 10,000
// records in batches of 64 drew 156 frames nobody saw.
const (
	streamBatch = 64
	replayBatch = 1024
)

// streamCmd waits for the follower's next events (at most limit) and
// returns them; at the end, how it ended. epoch is the one the session was
// attached at (a fault reports the epoch it lost).
func (h *shared) streamCmd(id string, gen int, c *host.Client, f *rig.Follower, epoch uint64, limit int) tea.Cmd {
	return func() tea.Msg {
		f.Limit(limit)
		before := f.Recoveries()
		envs, err := f.Next(h.ctx)
		msg := streamMsg{id: id, gen: gen, envs: envs, recovered: f.Recoveries() - before}
		if err == nil {
			return msg
		}
		if h.ctx.Err() != nil {
			return nil // quitting
		}
		msg.end = h.streamEnded(id, c, err, epoch)
		return msg
	}
}

// streamEnded says how c's stream ended; for a fault, it asks the store
// who holds the lease now.
func (h *shared) streamEnded(id string, c *host.Client, err error, epoch uint64) *streamEnd {
	end := &streamEnd{kind: endHostGone, err: err, oldEpoch: epoch}
	var (
		closed *host.HostClosedError
		remote *host.RemoteError
	)
	switch {
	case errors.Is(err, rig.ErrFollowEnded):
		end.kind = endStopped
		return end
	case errors.As(err, &closed):
		if closed.Reason != host.ReasonSessionFaulted {
			return end
		}
	case errors.As(err, &remote):
		if remote.Kind != fault.KindLeaseLost && remote.Kind != fault.KindPersistenceFault {
			// A fault of another kind ends the stream with the fault, then
			// the host says bye with the reason: wait for it briefly.
			select {
			case <-c.Done():
			case <-time.After(time.Second):
			case <-h.ctx.Done():
			}
			if !errors.As(c.Err(), &closed) || closed.Reason != host.ReasonSessionFaulted {
				return end
			}
		}
	default:
		return end
	}
	end.kind = endFault
	if errors.As(err, &remote) {
		end.err = remote
		if e, ok := fieldUint(remote, "epoch"); ok && e > 0 {
			end.oldEpoch = e
		}
		end.newEpoch, _ = fieldUint(remote, "new_epoch")
	}
	uid, perr := uuid.Parse(id)
	if perr != nil {
		return end
	}
	ctx, cancel := context.WithTimeout(h.ctx, time.Second)
	st, perr := rig.ProbeSession(ctx, h.store, uid)
	cancel()
	if perr == nil && st.Epoch > end.oldEpoch {
		end.newEpoch = max(end.newEpoch, st.Epoch)
		if st.Held {
			end.holder = holderText(st.Holder)
		}
	}
	return end
}

// fieldUint reads a number of a host's error.
func fieldUint(e *host.RemoteError, name string) (uint64, bool) {
	n, ok := e.Number(name)
	return uint64(n), ok && n >= 0
}

// closeClientCmd closes a client (a detach: its host goes on).
func (h *shared) closeClientCmd(c *host.Client) tea.Cmd {
	if c == nil {
		return nil
	}
	return func() tea.Msg { h.release(c); return nil }
}

func closeFollowerCmd(f *rig.Follower) tea.Cmd {
	if f == nil {
		return nil
	}
	return func() tea.Msg { f.Close(); return nil }
}

// submitCmd submits input to the host of session id. A turn submitted
// while the workspace is checkpointed after the last one waits in the host
// for the checkpoint (the session shows as checkpointing meanwhile): the
// submit is bounded by the host's silence, not by the checkpoint's length.
func (h *shared) submitCmd(id string, c *host.Client, input string) tea.Cmd {
	return func() tea.Msg {
		ti, err := c.Submit(h.ctx, input, host.WithSilence(hostSilence))
		return opMsg{id: id, op: opSubmit, err: err, note: "turn " + strconv.Itoa(ti.Index) + " started"}
	}
}

func (h *shared) interruptCmd(id string, c *host.Client) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(h.ctx, interruptTimeout)
		defer cancel()
		return opMsg{id: id, op: opInterrupt, err: c.Interrupt(ctx), note: "turn interrupted"}
	}
}

// revertCmd asks the host of session id to put the workspace back as it
// was before turn index (rig.Session.Revert).
func (h *shared) revertCmd(id string, c *host.Client, index int) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(h.ctx, restoreTimeout) // a large workspace takes a while to write
		defer cancel()
		r, err := c.Revert(ctx, index)
		note := ""
		if err == nil {
			note = clean(rig.Reverted{TurnIndex: r.TurnIndex, Undo: r.Undo, Changed: r.Changed, Removed: r.Removed, Agent: r.Agent}.Summary())
		}
		return opMsg{id: id, op: opRevert, err: err, note: note}
	}
}

func (h *shared) gateCmd(id string, c *host.Client, gateID string, approve bool) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(h.ctx, opTimeout)
		defer cancel()
		note := "gate denied"
		if approve {
			note = "gate approved"
		}
		return opMsg{id: id, op: opGate, err: c.RespondGate(ctx, gateID, approve, "tui"), note: note}
	}
}

// seeAttentionCmd tells the host of session id that the user looked at its
// turn's call for them, recorded at sequence through.
func (h *shared) seeAttentionCmd(id string, c *host.Client, through uint64) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(h.ctx, opTimeout)
		defer cancel()
		err := c.SeeAttention(ctx, through, "tui")
		if err != nil && h.ctx.Err() != nil {
			return nil
		}
		return attentionSeenMsg{id: id, err: err}
	}
}

// shutdownCmd asks the host to shut the session down (X): it journals
// SessionStopped, releases the lease and exits.
func (h *shared) shutdownCmd(id string, c *host.Client) tea.Cmd {
	return func() tea.Msg {
		// A checkpoint the shutdown waits for (the last turn's, its own)
		// takes as long as it takes; the host says how far it is.
		err := c.Shutdown(h.ctx, host.WithSilence(shutdownTimeout))
		if err != nil && h.ctx.Err() != nil {
			return nil
		}
		return shutdownMsg{id: id, c: c, err: err}
	}
}

func (h *shared) saveThemeCmd(name string) tea.Cmd {
	dir := h.opts.ConfigDir
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
