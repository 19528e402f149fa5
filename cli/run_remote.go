package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"looprig/host"
	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/explain"
	"looprig/rig/fault"
)

// run through a host: `run` submits the turn to the session's host and
// follows it there, as turnRunner does a turn of this process. When no
// host serves the session on this machine, run starts one for it first
// (restoring the session, as `restore --detach` does), so that run is
// only a client: a hangup or a kill of run leaves the turn running and
// the session live in its host, which stays live afterwards. run
// --detach submits the turn and returns at once.

// byeWait bounds the wait for a host's goodbye once the stream of a
// session that stopped ended: the goodbye says whether it faulted (the
// host sends it within its drain timeout).
const byeWait = 5 * time.Second

// runHosted runs the turn in the session's host, the one that serves it
// on this machine or one started for it (liveHost), and follows it there.
// hosted is false when no host can serve the session here (*NoHostError):
// run then says so on stderr, and the caller runs the turn in this
// process. A restore the started host refused (a held lease, drift, …) is
// run's failure.
func runHosted(c *call) (code int, hosted bool) {
	sid, err := c.findRunSession()
	if err != nil {
		return c.failRun(err), true
	}
	cl, rd, err := c.liveHost(sid)
	var noHost *NoHostError
	switch {
	case errors.As(err, &noHost):
		fmt.Fprintf(c.stderr, "looprig: %s; running the turn in this process instead: a hangup or a kill of this process leaves the session crashed\n",
			textsafe.Line(noHost.Error()))
		return 0, false
	case err != nil:
		return c.failRun(err), true
	}
	defer cl.Close()
	if rd != nil && !c.json {
		short := rig.ShortID(sid)
		fmt.Fprintf(c.stderr, "looprig: session %s is live in host pid %d, started for this run: it stays live after the turn (shut it down: looprig %sstop %s)\n",
			short, rd.PID, c.globalArgs(), short)
	}
	tr := &turnRunner{c: c, s: &hostTurn{c: c, cl: cl, id: sid}}
	return tr.run(strings.Join(c.input, " ")), true
}

// findRunSession resolves run's ID. An unknown one is a restore that
// found nothing to restore, as the restore itself would say.
func (c *call) findRunSession() (string, error) {
	id, err := rig.FindSession(c.ctx, c.st, c.args[0])
	if err != nil {
		var unknown *rig.UnknownSessionError
		if errors.As(err, &unknown) {
			err = &rig.RestoreError{Kind: rig.RestoreDiscoveryFailed, Cause: err}
		}
		return "", err
	}
	return id.String(), nil
}

// refuseLive refuses run --in-process on a session live in a host on this
// machine: the host holds it, and runs its turns.
func (c *call) refuseLive() error {
	sid, err := c.findRunSession()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.ctx, connectTimeout)
	cl, err := c.connect(ctx, sid)
	cancel()
	if err != nil {
		return nil // not live here; the restore says what else may hold it
	}
	defer cl.Close()
	short := rig.ShortID(sid)
	return &UsageError{Cmd: c.cmd,
		Msg:  fmt.Sprintf("session %s is live in host pid %d: --in-process runs a session that no host serves", short, cl.Hello().PID),
		Hint: fmt.Sprintf("run the turn in its host (without --in-process), or shut the host down first: looprig %sstop %s", c.globalArgs(), short)}
}

// runDetached makes sure the session is live in a host (restoring it in a
// new one when none serves it), submits the turn to it and returns
// without waiting for the turn: it prints the turn's id on stdout (with
// --json, runDetachedJSON), and a sentence saying how to follow it on
// stderr.
func runDetached(c *call) int {
	sid, err := c.findRunSession()
	if err != nil {
		return c.failRun(err)
	}
	cl, _, err := c.liveHost(sid)
	if err != nil {
		return c.failRun(err)
	}
	defer cl.Close()
	pid := cl.Hello().PID
	h := &hostTurn{c: c, cl: cl, id: sid}
	ti, err := h.Submit(c.ctx, strings.Join(c.input, " "))
	if err != nil {
		if f := h.fault(); f != nil {
			err = f
		}
		return c.failRun(err)
	}
	short := rig.ShortID(sid)
	if c.json {
		c.writeJSON(runDetachedJSON{ID: sid, ShortID: short, TurnID: ti.ID, Index: ti.Index, PID: pid})
		return exitOK
	}
	// stdout holds the turn's id alone, for t=$(looprig run ID --detach --
	// ...); looprig wait ID --turn "$t". The sentence is for people.
	if _, err := fmt.Fprintln(c.stdout, ti.ID); err != nil {
		return c.failRun(fmt.Errorf("print the turn's id: %w", err))
	}
	fmt.Fprintf(c.stderr, "looprig: started turn %d (%s) in session %s; follow it: looprig %sattach %s; wait for its end: looprig %swait %s --turn %s\n",
		ti.Index, ti.ID, short, c.globalArgs(), short, c.globalArgs(), short, rig.ShortID(ti.ID))
	return exitOK
}

// runDetachedJSON is what run --detach --json prints.
type runDetachedJSON struct {
	ID      string `json:"id"`
	ShortID string `json:"short_id"`
	TurnID  string `json:"turn_id"`
	Index   int    `json:"index"`
	PID     int    `json:"pid"` // the host's
}

// liveHost connects to the host of session id, starting one (which
// restores the session with the restore flags given) when none answers
// here; rd is the report of the host it started, nil when a host served
// the session already. A host that answers but refuses us (another
// protocol, another uid) is an error. *NoHostError: no host can serve the
// session on this machine.
func (c *call) liveHost(id string) (cl *host.Client, rd *host.Ready, err error) {
	if err := checkSocketDir(c.st); err != nil {
		return nil, nil, &NoHostError{Session: id, Err: err}
	}
	ctx, cancel := context.WithTimeout(c.ctx, connectTimeout)
	cl, err = c.connect(ctx, id)
	cancel()
	var mismatch *host.ProtocolMismatchError
	var refused *host.RemoteError
	switch {
	case err == nil:
		c.noteHostedFlags(id, cl.Hello().PID)
		return cl, nil, nil
	case errors.As(err, &mismatch), errors.As(err, &refused), c.ctx.Err() != nil:
		return nil, nil, err
	}
	// No host answered: there is no socket, or its host is dead or does
	// not answer. A host that holds the session but does not answer makes
	// the restore of the one started here fail for its lease, which names
	// it.
	ready, err := c.startHost(c.ctx, c.st, append(c.restoreFlagArgs(), id)...)
	if err != nil {
		var exited *host.HostExitedError
		if errors.As(err, &exited) {
			return nil, nil, &NoHostError{Session: id, Err: err}
		}
		// Another client may have started a host meanwhile: its restore
		// won the lease, and ours was refused for it.
		if explain.Explain(err).Remedy == fault.RemedyWaitOrBreakLease {
			ctx, cancel := context.WithTimeout(c.ctx, connectTimeout)
			cl, cerr := c.connect(ctx, id)
			cancel()
			if cerr == nil {
				return cl, nil, nil
			}
		}
		return nil, nil, err
	}
	if info := ready.Restored; info != nil && len(info.Interrupted) > 0 && !c.json {
		fmt.Fprintf(c.stderr, "looprig: restored session %s at epoch %d in host pid %d; closed %s left open by a crash\n",
			rig.ShortID(id), info.Epoch, ready.PID, plural(len(info.Interrupted), "interrupted turn"))
	}
	if info := ready.Restored; info != nil && !c.json {
		if r := workspaceReport(info.Workspace); r != "" {
			fmt.Fprintf(c.stderr, "looprig: %s\n", r)
		}
	}
	ctx, cancel = context.WithTimeout(c.ctx, connectTimeout)
	defer cancel()
	if cl, err = c.connect(ctx, id); err != nil {
		return nil, nil, err
	}
	return cl, &ready, nil
}

// NoHostError: no host can serve the session on this machine: the
// store's socket directory or the session's socket path is unusable, or
// the host started for it ended before it reported
// (*host.HostExitedError). run then runs the turn in this process.
type NoHostError struct {
	Session string
	Err     error
}

func (e *NoHostError) Error() string {
	return fmt.Sprintf("no host can serve session %s on this machine: %v", rig.ShortID(e.Session), e.Err)
}

func (e *NoHostError) Unwrap() error { return e.Err }

// noteHostedFlags says, for people, that the restore flags given do not
// apply to a session that is live already.
func (c *call) noteHostedFlags(id string, pid int) {
	if c.json || (c.profile == profileFlags{} && !c.acceptDrift) {
		return
	}
	fmt.Fprintf(c.stderr, "looprig: session %s is live in host pid %d: --rig, --placement, --root and --accept-drift apply to a restore and were ignored\n",
		rig.ShortID(id), pid)
}

// hostTurn is a session live in a host, as a turnRunner drives it,
// through the host's Client; its events come from the host's stream.
type hostTurn struct {
	c  *call
	cl *host.Client
	id string

	mu    sync.Mutex
	ended error // what ended the stream, when the host said
}

// follow follows the host's stream from the journal's tip.
func (h *hostTurn) follow(ctx context.Context) (*rig.Follower, error) {
	status, err := h.cl.Status(ctx)
	if err != nil {
		return nil, err
	}
	return rig.Follow(ctx, endsNoted{h}, status.Tip)
}

// endsNoted is the host's feed; an end the host explains (an error, its
// goodbye) is noted for fault.
type endsNoted struct{ h *hostTurn }

func (f endsNoted) OpenFeed(ctx context.Context, after uint64) (rig.FeedReader, error) {
	r, err := f.h.cl.OpenFeed(ctx, after)
	if err != nil {
		return nil, err
	}
	return endNoter{r, f.h}, nil
}

type endNoter struct {
	rig.FeedReader
	h *hostTurn
}

func (r endNoter) Next(ctx context.Context) ([]event.Envelope, error) {
	batch, err := r.FeedReader.Next(ctx)
	var closed *host.HostClosedError
	var re *host.RemoteError
	if errors.As(err, &closed) || errors.As(err, &re) {
		r.h.mu.Lock()
		r.h.ended = err
		r.h.mu.Unlock()
	}
	return batch, err
}

func (h *hostTurn) tty(ctx context.Context) (bool, error) {
	st, err := h.cl.Status(ctx)
	return st.TTY, err
}

// settle waits for the host's goodbye, which follows the end of the
// stream of a session that stopped and says whether it faulted (the host
// sends it within its drain timeout).
func (h *hostTurn) settle(ctx context.Context) {
	t := time.NewTimer(byeWait)
	defer t.Stop()
	select {
	case <-h.cl.Done():
	case <-ctx.Done():
	case <-t.C:
	}
}

// submitSilence bounds how long a submit waits for its host to answer or
// say how far the checkpoint it waits for is: past the host's own bound
// of a request (30 s), which it reports on.
const submitSilence = 45 * time.Second

// Submit submits the turn. It is not given up on a first Ctrl-C: the
// host may have started the turn already, and the runner interrupts it
// once it has its id. A turn submitted while the host checkpoints the
// workspace after the last turn waits for the checkpoint, saying so on
// stderr with how far it is; it is given up on only when the host says
// nothing for submitSilence.
func (h *hostTurn) Submit(ctx context.Context, input string) (rig.TurnInfo, error) {
	var line *waitLine
	if !h.c.json {
		line = newWaitLine(h.c.stderr)
	}
	ti, err := h.cl.Submit(context.WithoutCancel(ctx), input, host.WithSilence(submitSilence), host.WithProgress(line.update))
	line.finish()
	if err == nil {
		return ti, nil
	}
	var busy *rig.BusyError
	if errors.As(err, &busy) {
		return ti, &SessionBusyError{Session: h.id, TurnID: busy.TurnID, Index: busy.Index, Checkpointing: busy.Checkpointing,
			Follow: h.c.globalArgs(), Err: err}
	}
	return ti, remoteFault(h.id, err)
}

func (h *hostTurn) Interrupt(ctx context.Context) error { return h.cl.Interrupt(ctx) }

func (h *hostTurn) RespondGate(ctx context.Context, gateID string, approve bool) error {
	return h.cl.RespondGate(ctx, gateID, approve, "cli")
}

func (h *hostTurn) Done() <-chan struct{} { return h.cl.Done() }

func (h *hostTurn) SendInput(ctx context.Context, text string) (bool, error) {
	return h.cl.SendInput(ctx, text, "cli")
}

func (h *hostTurn) SendEOF(ctx context.Context) error { return h.cl.SendEOF(ctx, "cli") }

func (h *hostTurn) TerminalState(ctx context.Context) (bool, bool, error) {
	st, err := h.cl.Status(ctx)
	return st.Terminal, st.EchoOff, err
}

func (h *hostTurn) Resize(ctx context.Context, cols, rows int) error {
	return h.cl.Resize(ctx, cols, rows)
}

// fault is why the session stopped under the turn: its host said it
// faulted (its lease lost: *LeaseLostError), or the host is gone
// (*HostLostError). A host that stopped serving it without a fault, or a
// stream that ended for a reason of its own, is no fault.
func (h *hostTurn) fault() error {
	err := h.cl.Err()
	if err == nil || errors.Is(err, host.ErrClientClosed) {
		h.mu.Lock()
		err = h.ended
		h.mu.Unlock()
	}
	if err == nil {
		return nil
	}
	var closed *host.HostClosedError
	var re *host.RemoteError
	switch {
	case errors.As(err, &closed):
		if closed.Err == nil {
			return nil
		}
		return remoteFault(h.id, closed)
	case errors.As(err, &re):
		switch re.Kind {
		case fault.KindLeaseLost, fault.KindPersistenceFault:
			return remoteFault(h.id, re)
		}
		if h.cl.Err() == nil {
			return nil // the stream's own end: the client goes on
		}
		return err // the host refused the connection
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return nil // we cut a request short
	}
	return &HostLostError{Session: h.id, PID: h.cl.Hello().PID, Restore: h.c.globalArgs(), Err: err}
}

// HostLostError: the host of a session ended (or its connection broke)
// while run followed a turn in it. A host that ends without shutting its
// session down leaves it crashed: restore it.
type HostLostError struct {
	Session string
	PID     int
	Restore string // the global flags of the restore command suggested
	Err     error
}

func (e *HostLostError) Error() string {
	short := rig.ShortID(e.Session)
	return fmt.Sprintf("lost the host of session %s (pid %d): %v; the session is now crashed: restore it with 'looprig %srestore %s'",
		short, e.PID, e.Err, e.Restore, short)
}

func (e *HostLostError) Unwrap() error { return e.Err }

// Explanation classifies it for describe (fault.Explainer).
func (e *HostLostError) Explanation() fault.Explanation {
	return fault.Of(fault.KindHostLost, fault.Field{Name: "session", Value: e.Session}, fault.Field{Name: "pid", Value: e.PID})
}

// SessionBusyError: run submitted to a host whose session runs another
// turn. errors.As also finds the *rig.BusyError it stands for.
type SessionBusyError struct {
	Session string
	TurnID  string
	Index   int
	// Checkpointing: the turn has ended, and the host still checkpoints
	// the workspace after it (past the checkpoint's own bound).
	Checkpointing bool
	Follow        string // the global flags of the attach command suggested
	Err           error
}

func (e *SessionBusyError) Error() string {
	short := rig.ShortID(e.Session)
	if e.Checkpointing {
		return fmt.Sprintf("session %s is busy: its host is still checkpointing the workspace after turn %d (%s), past the checkpoint's bound; see its log, or wait with 'looprig %swait %s --for idle'",
			short, e.Index, e.TurnID, e.Follow, short)
	}
	return fmt.Sprintf("session %s is busy: turn %d (%s) is still running in its host; wait for it, or follow it with 'looprig %sattach %s'",
		short, e.Index, e.TurnID, e.Follow, short)
}

func (e *SessionBusyError) Unwrap() error { return e.Err }

// Explanation classifies it for describe (fault.Explainer).
func (e *SessionBusyError) Explanation() fault.Explanation {
	x := fault.Of(fault.KindBusy, fault.Field{Name: "session", Value: e.Session}, fault.Field{Name: "turn_id", Value: e.TurnID},
		fault.Field{Name: "index", Value: e.Index})
	if e.Checkpointing {
		x.Fields = append(x.Fields, fault.Field{Name: "checkpointing", Value: true})
	}
	return x
}
