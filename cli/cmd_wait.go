package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"looprig/host"
	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/explain"
	"looprig/rig/journal"
)

// wait: block until a session reaches a state (a turn's end, idle, a
// gate), from its host's events when it is live here, else from its
// journal. Exit codes beyond 0, 1 and 2 are WaitError's.

const (
	exitWaitLeaseLost = exitLease // another process took the session's lease
	exitWaitCrashed   = 5         // the session's holder died
	exitWaitStopped   = 6         // the session is not running, so the state cannot come
	exitWaitTimeout   = 124       // --timeout passed (as timeout(1))
)

// waitFor names the states wait waits for.
const (
	waitTurnEnd = "turn-end"
	waitIdle    = "idle"
	waitGate    = "gate"
)

// waitPoll is how often a journal is looked at when its session is held
// by a process that is not a host here.
const waitPoll = 250 * time.Millisecond

var cmdWait = &command{
	name: "wait", brief: "wait until a session's turn ends, it is idle, or it opens a gate", help: helpWait,
	json: true, args: oneID, needs: needsStore,
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.waitFor, "for", waitTurnEnd, "turn-end | idle | gate")
		fs.StringVar(&o.waitTurn, "turn", "", "with --for turn-end: this turn (an id or its prefix) instead of the running or last one")
		fs.DurationVar(&o.waitTimeout, "timeout", 0, "give up after this long (exit 124); 0: wait for ever")
	},
	run: runWait,
}

// WaitError: wait ended without reaching the state. Code is the exit code.
type WaitError struct {
	Session string
	For     string
	Outcome string // "timeout", "crashed", "lease_lost", "stopped"
	Reason  string
	Code    int
}

func (e *WaitError) Error() string {
	return fmt.Sprintf("session %s: gave up waiting for %s: %s", rig.ShortID(e.Session), e.For, e.Reason)
}

// waitState is what the journal says of a session, folded.
type waitState struct {
	turn    string // the running turn's id
	gate    *event.GateOpened
	ends    map[string]event.Event // turn id → its end
	lastEnd string                 // the last turn that ended
	stopped bool                   // SessionStopped is the last word
	lastSeq uint64
}

func (w *waitState) apply(seq uint64, ev event.Event) {
	w.lastSeq = max(w.lastSeq, seq)
	switch e := ev.(type) {
	case event.TurnStarted:
		w.turn = e.TurnID
	case event.TurnDone:
		w.end(e.TurnID, e)
	case event.TurnFailed:
		w.end(e.TurnID, e)
	case event.TurnInterrupted:
		w.end(e.TurnID, e)
	case event.GateOpened:
		g := e
		w.gate = &g
	case event.GateResolved:
		w.gate = nil
	case event.SessionStopped:
		w.stopped, w.turn, w.gate = true, "", nil
	case event.RestoreStarted, event.SessionStarted:
		w.stopped = false
	}
}

func (w *waitState) end(turn string, ev event.Event) {
	if w.ends == nil {
		w.ends = map[string]event.Event{}
	}
	w.ends[turn], w.lastEnd = ev, turn
	if w.turn == turn {
		w.turn, w.gate = "", nil
	}
}

// waiter checks the state after every event.
type waiter struct {
	c      *call
	id     uuid.UUID
	what   string
	target string // turn-end: the turn waited for ("": the next to start)
	st     waitState
}

// reached reports whether the state is reached and what to print then.
func (w *waiter) reached() (bool, waitJSON) {
	out := waitJSON{ID: w.id.String(), ShortID: rig.ShortID(w.id.String()), For: w.what}
	switch w.what {
	case waitIdle:
		return w.st.turn == "", out
	case waitGate:
		if g := w.st.gate; g != nil {
			out.GateID, out.Prompt, out.TurnID = g.GateID, g.Prompt, g.TurnID
			return true, out
		}
		return false, out
	}
	if w.target == "" {
		return false, out
	}
	end, ok := w.st.ends[w.target]
	if !ok {
		return false, out
	}
	out.TurnID = w.target
	switch e := end.(type) {
	case event.TurnDone:
		code := e.ExitCode
		out.End, out.ExitCode = "done", &code
	case event.TurnFailed:
		out.End, out.Error = "failed", e.Err
	case event.TurnInterrupted:
		out.End, out.Reason = "interrupted", e.Reason
	}
	return true, out
}

func runWait(c *call) int {
	switch c.waitFor {
	case waitTurnEnd, waitIdle, waitGate:
	default:
		return c.fail(usageErr(c.cmd, fmt.Sprintf("--for %q: want turn-end, idle or gate", c.waitFor)))
	}
	if c.waitTurn != "" && c.waitFor != waitTurnEnd {
		return c.fail(usageErr(c.cmd, "--turn goes with --for turn-end"))
	}
	ctx := c.ctx
	if c.waitTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.waitTimeout)
		defer cancel()
	}
	id, err := rig.FindSession(ctx, c.st, c.args[0])
	if err != nil {
		return c.fail(err)
	}
	w := &waiter{c: c, id: id, what: c.waitFor}
	tip, err := w.readJournal(ctx)
	if err != nil {
		return c.fail(w.ended(ctx, err))
	}
	if w.st.turn != "" || w.st.gate != nil {
		// The journal says a turn runs: only if someone holds the session.
		// Otherwise its holder died with it (a restore closes it).
		if ls, err := rig.ProbeSession(ctx, c.st, id); err == nil && !ls.Held {
			return c.fail(w.ended(ctx, errNotRunning))
		}
	}
	if w.what == waitTurnEnd {
		if err := w.pickTurn(); err != nil {
			return c.fail(err)
		}
	}
	if ok, out := w.reached(); ok {
		return w.print(out)
	}
	cl, err := c.connect(ctx, id.String())
	var notHosted *NotHostedError
	switch {
	case errors.As(err, &notHosted):
		err = w.followJournal(ctx)
	case err != nil:
		return c.fail(w.ended(ctx, err))
	default:
		defer cl.Close()
		err = w.followHost(ctx, cl, tip)
	}
	if err != nil {
		return c.fail(w.ended(ctx, err))
	}
	_, out := w.reached()
	return w.print(out)
}

// readJournal folds the whole journal; it returns its last sequence.
func (w *waiter) readJournal(ctx context.Context) (uint64, error) {
	rp, err := rig.ReadEvents(ctx, w.c.st, w.id, 0)
	if err != nil {
		return 0, err
	}
	defer rp.Close()
	for rp.Next() {
		env := rp.Envelope()
		w.st.apply(env.Seq, env.Event)
	}
	return max(w.st.lastSeq, rp.LastSeq()), rp.Err()
}

// pickTurn chooses the turn --for turn-end waits for: --turn, else the
// running one, else the last one that ended (reached at once), else the
// next one to start.
func (w *waiter) pickTurn() error {
	switch {
	case w.c.waitTurn != "":
		w.target = w.findTurn(w.c.waitTurn)
		if w.target == "" {
			return &UsageError{Cmd: "wait", Msg: fmt.Sprintf("session %s has no turn %q", rig.ShortID(w.id.String()), w.c.waitTurn),
				Hint: "turn ids are in 'looprig log " + rig.ShortID(w.id.String()) + "'"}
		}
	case w.st.turn != "":
		w.target = w.st.turn
	default:
		w.target = w.st.lastEnd
	}
	return nil
}

// findTurn resolves a turn id or a prefix of one among the turns seen.
func (w *waiter) findTurn(p string) string {
	if p == w.st.turn || len(p) >= 4 && len(w.st.turn) > len(p) && w.st.turn[:len(p)] == p {
		return w.st.turn
	}
	for t := range w.st.ends {
		if t == p || len(p) >= 4 && len(t) > len(p) && t[:len(p)] == p {
			return t
		}
	}
	return ""
}

// see folds one event; a turn-end wait for "the next turn" takes the first
// turn that starts.
func (w *waiter) see(seq uint64, ev event.Event) {
	w.st.apply(seq, ev)
	if ts, ok := ev.(event.TurnStarted); ok && w.what == waitTurnEnd && w.target == "" {
		w.target = ts.TurnID
	}
}

// followHost reads the host's events after the journal's tip.
func (w *waiter) followHost(ctx context.Context, cl *host.Client, tip uint64) error {
	for {
		st, err := cl.Subscribe(ctx, tip)
		if err != nil {
			return err
		}
		for {
			env, err := st.Next(ctx)
			if err != nil {
				st.Close()
				var lost *host.StreamLostError
				switch {
				case errors.As(err, &lost): // it fell behind: on from the last sequence seen
					tip = max(tip, w.st.lastSeq, lost.LastSeq)
				case errors.Is(err, host.ErrSessionEnded):
					return errStopped
				default:
					return err
				}
				break
			}
			if env.Seq == 0 {
				continue // live deltas and ephemera: the journal's events decide
			}
			w.see(env.Seq, env.Event)
			if ok, _ := w.reached(); ok {
				st.Close()
				return nil
			}
			if w.st.stopped {
				st.Close()
				return errStopped
			}
		}
	}
}

// errStopped: the session stopped before the state came.
var errStopped = errors.New("the session stopped")

// followJournal follows the journal of a session no host here serves:
// held by another process (another machine), it may go on; not held, it
// cannot.
func (w *waiter) followJournal(ctx context.Context) error {
	ls, err := rig.ProbeSession(ctx, w.c.st, w.id)
	if err != nil {
		return err
	}
	if !ls.Held {
		return errNotRunning
	}
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() { // the holder may die: look every second
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-fctx.Done():
				return
			case <-t.C:
			}
			if ls, err := rig.ProbeSession(fctx, w.c.st, w.id); err == nil && !ls.Held {
				cancel(errNotRunning)
				return
			}
		}
	}()
	err = rig.FollowRecords(fctx, w.c.st, w.id, w.st.lastSeq, waitPoll, func(r journal.Record) error {
		if r.Event != nil {
			w.see(r.Seq, r.Event)
		}
		if ok, _ := w.reached(); ok {
			return errReached
		}
		return nil
	})
	switch {
	case errors.Is(err, errReached):
		return nil
	case err != nil:
		return err
	case context.Cause(fctx) != nil && ctx.Err() == nil:
		return context.Cause(fctx)
	}
	return ctx.Err()
}

var (
	errReached    = errors.New("reached")
	errNotRunning = errors.New("no process holds the session")
)

// ended turns why following stopped into a WaitError (or err itself when
// it is none of wait's outcomes).
func (w *waiter) ended(ctx context.Context, err error) error {
	we := &WaitError{Session: w.id.String(), For: w.what}
	switch {
	case ctx.Err() != nil && w.c.waitTimeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded):
		we.Outcome, we.Code, we.Reason = "timeout", exitWaitTimeout, "--timeout "+w.c.waitTimeout.String()+" passed"
		return we
	case errors.Is(err, errStopped):
		we.Outcome, we.Code, we.Reason = "stopped", exitWaitStopped, "it was shut down"
		return we
	case isLeaseLost(err):
		we.Outcome, we.Code, we.Reason = "lease_lost", exitWaitLeaseLost, "another process took its lease"
		return we
	}
	// Whatever else ended the wait, the session's lease says whether it
	// still runs. Held: the error is wait's own. Free: its holder is gone,
	// and the journal tells a clean stop from a crash.
	bg := context.WithoutCancel(ctx)
	if !errors.Is(err, errNotRunning) && !w.released(bg) {
		return err
	}
	w.st = waitState{}
	if _, rerr := w.readJournal(bg); rerr != nil {
		return err
	}
	if w.st.stopped {
		we.Outcome, we.Code, we.Reason = "stopped", exitWaitStopped, "it is not running (restore it to go on)"
		return we
	}
	we.Outcome, we.Code, we.Reason = "crashed", exitWaitCrashed, "its holder died: it crashed (restore it with 'looprig restore "+rig.ShortID(w.id.String())+"')"
	return we
}

// released reports whether nobody holds the session, looking for up to a
// second: a killed host's lease is freed when its last thread has exited.
func (w *waiter) released(ctx context.Context) bool {
	for range 20 {
		if ls, err := rig.ProbeSession(ctx, w.c.st, w.id); err == nil && !ls.Held {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// isLeaseLost reports whether the host said its session lost its lease.
func isLeaseLost(err error) bool { return explain.Explain(err).Kind == explain.KindLeaseLost }

func (w *waiter) print(out waitJSON) int {
	if w.c.json {
		w.c.writeJSON(out)
		return exitOK
	}
	e := w.c
	switch {
	case out.For == waitGate:
		fmt.Fprintf(e.stdout, "session %s is at a gate: %s\n", out.ShortID, textsafe.Line(out.Prompt))
	case out.For == waitIdle:
		fmt.Fprintf(e.stdout, "session %s is idle\n", out.ShortID)
	case out.End == "done":
		fmt.Fprintf(e.stdout, "turn %s exited %s\n", rig.ShortID(out.TurnID), strconv.Itoa(*out.ExitCode))
	case out.End == "failed":
		fmt.Fprintf(e.stdout, "turn %s failed: %s\n", rig.ShortID(out.TurnID), textsafe.Line(out.Error))
	default:
		fmt.Fprintf(e.stdout, "turn %s was interrupted (%s)\n", rig.ShortID(out.TurnID), textsafe.Line(out.Reason))
	}
	return exitOK
}

// waitJSON is what wait prints when the state is reached.
type waitJSON struct {
	ID       string `json:"id"`
	ShortID  string `json:"short_id"`
	For      string `json:"for"`
	TurnID   string `json:"turn_id,omitempty"`
	End      string `json:"end,omitempty"` // done | failed | interrupted
	ExitCode *int   `json:"exit_code,omitempty"`
	Error    string `json:"error,omitempty"`
	Reason   string `json:"reason,omitempty"`
	GateID   string `json:"gate_id,omitempty"`
	Prompt   string `json:"prompt,omitempty"`
}
