package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/explain"
	"looprig/rig/fault"
)

// wait: block until a session reaches a state (a turn's end, idle, a
// gate, a call for the user), from its host's events when it is live here, else from its
// journal. A turn's end exits as run does (turnExitCode); other exit codes
// beyond 0, 1 and 2 are WaitError's.

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
	waitAttn    = "attention"
)

// waitPoll is how often a journal is looked at when its session is held
// by a process that is not a host here.
const waitPoll = 250 * time.Millisecond

var cmdWait = &command{
	name: "wait", brief: "wait until a session's turn ends, it is idle, opens a gate or asks for you", help: helpWait,
	json: true, args: oneID, needs: needsStore,
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.waitFor, "for", waitTurnEnd, "turn-end | idle | gate | attention")
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

// waiter checks the state after every event: the session's rig.State,
// which keeps the end of every turn it saw end (--turn names any of them;
// newWaitState).
type waiter struct {
	c      *call
	id     uuid.UUID
	what   string
	target string // turn-end: the turn waited for ("": the next to start)
	st     rig.State
}

// newWaitState is the fold a wait starts from: nothing known yet, and
// every turn's end kept.
func newWaitState() rig.State { return rig.State{KeepEnds: true} }

// reached reports whether the state is reached and what to print then.
func (w *waiter) reached() (bool, waitJSON) {
	out := waitJSON{ID: w.id.String(), ShortID: rig.ShortID(w.id.String()), For: w.what}
	switch w.what {
	case waitIdle:
		// Not before the checkpoint that follows a turn's end is over:
		// until then the next turn waits too (SessionIdle comes after it).
		return w.st.Idle(), out
	case waitGate:
		if g := w.st.Gate(); g != nil {
			out.GateID, out.Prompt, out.TurnID = g.ID, g.Prompt, g.TurnID
			return true, out
		}
		return false, out
	case waitAttn:
		if a := w.st.Attention; a != nil {
			out.TurnID, out.Reason, out.Text, out.Agent = a.TurnID, a.Reason, a.Text, a.Agent
			return true, out
		}
		return false, out
	}
	if w.target == "" {
		return false, out
	}
	end := w.st.End(w.target)
	if end == nil {
		return false, out
	}
	out.TurnID = w.target
	out.End = string(end.Outcome)
	out.code = turnExitCode(end)
	switch end.Outcome {
	case rig.TurnOutcomeDone:
		code := end.ExitCode
		out.ExitCode = &code
	case rig.TurnOutcomeFailed:
		out.Error = end.Reason
	case rig.TurnOutcomeInterrupted:
		out.Reason = end.Reason
	}
	return true, out
}

func runWait(c *call) int {
	switch c.waitFor {
	case waitTurnEnd, waitIdle, waitGate, waitAttn:
	default:
		return c.fail(usageErr(c.cmd, fmt.Sprintf("--for %q: want turn-end, idle, gate or attention", c.waitFor)))
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
	w := &waiter{c: c, id: id, what: c.waitFor, st: newWaitState()}
	f, err := w.readJournal(ctx)
	if err != nil {
		return c.fail(w.ended(ctx, err))
	}
	defer f.Close()
	if w.st.Turn() != nil || w.st.Gate() != nil || w.st.Active {
		// The journal says a turn runs, or its checkpoint: only if someone
		// holds the session. Otherwise its holder died with it (a restore
		// closes it); one that died checkpointing after the turn's end
		// left the session as idle as it will be.
		if ls, err := rig.ProbeSession(ctx, c.st, id); err == nil && !ls.Held {
			if w.st.Turn() != nil || w.st.Gate() != nil {
				return c.fail(w.ended(ctx, errNotRunning))
			}
			w.st.Active = false
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
		err = w.followJournal(ctx, f)
	case err != nil:
		return c.fail(w.ended(ctx, err))
	default:
		defer cl.Close()
		err = w.followHost(ctx, cl, f.LastSeq())
	}
	if err != nil {
		return c.fail(w.ended(ctx, err))
	}
	_, out := w.reached()
	return w.print(out)
}

// readJournal folds the journal up to its tip through a Follower of it
// (rig.JournalFeed), and returns that Follower, to follow the journal on
// from there.
func (w *waiter) readJournal(ctx context.Context) (*rig.Follower, error) {
	f, err := rig.Follow(ctx, rig.JournalFeed(w.c.st, w.id, waitPoll), 0)
	if err != nil {
		return nil, err
	}
	for {
		batch, tip, err := f.NextOrTip(ctx)
		for _, env := range batch {
			w.see(env)
		}
		switch {
		case err != nil:
			f.Close()
			return nil, err
		case tip:
			return f, nil
		}
	}
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
	case w.st.Turn() != nil:
		w.target = w.st.Turn().ID
	case w.st.LastEnd != nil:
		w.target = w.st.LastEnd.TurnID
	}
	return nil
}

// findTurn resolves a turn id or a prefix of one among the turns seen.
func (w *waiter) findTurn(p string) string {
	if t := w.st.Turn(); t != nil && (p == t.ID || len(p) >= 4 && len(t.ID) > len(p) && t.ID[:len(p)] == p) {
		return t.ID
	}
	for e := w.st.Ends; e != nil; e = e.Prev {
		if t := e.TurnID; t == p || len(p) >= 4 && len(t) > len(p) && t[:len(p)] == p {
			return t
		}
	}
	return ""
}

// see folds one event; a turn-end wait for "the next turn" takes the first
// turn that starts.
func (w *waiter) see(env event.Envelope) {
	w.st.Apply(env)
	if ts, ok := env.Event.(event.TurnStarted); ok && w.what == waitTurnEnd && w.target == "" {
		w.target = ts.TurnID
	}
}

// followHost follows the session's events after sequence after through
// its host (c).
func (w *waiter) followHost(ctx context.Context, c rig.Feed, after uint64) error {
	f, err := rig.Follow(ctx, c, after)
	if err != nil {
		return err
	}
	defer f.Close()
	return w.follow(ctx, f)
}

// follow folds what f reads until the state is reached (nil) or the
// session stops (errStopped).
func (w *waiter) follow(ctx context.Context, f *rig.Follower) error {
	for {
		batch, err := f.Next(ctx)
		for _, env := range batch {
			w.see(env)
			if ok, _ := w.reached(); ok {
				return nil
			}
			if w.st.Stopped {
				return errStopped
			}
		}
		switch {
		case errors.Is(err, rig.ErrFollowEnded):
			return errStopped
		case err != nil:
			return err
		}
	}
}

// errStopped: the session stopped before the state came.
var errStopped = errors.New("the session stopped")

// followJournal follows the journal of a session no host here serves:
// held by another process (another machine), it may go on; not held, it
// cannot. f read it up to its tip (readJournal) and follows it on.
func (w *waiter) followJournal(ctx context.Context, f *rig.Follower) error {
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
	err = w.follow(fctx, f)
	if err != nil && fctx.Err() != nil && ctx.Err() == nil {
		return context.Cause(fctx)
	}
	return err
}

var errNotRunning = errors.New("no process holds the session")

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
	w.st = newWaitState()
	f, rerr := w.readJournal(bg)
	if rerr != nil {
		return err
	}
	f.Close()
	if w.st.Stopped {
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
func isLeaseLost(err error) bool { return explain.Explain(err).Kind == fault.KindLeaseLost }

// print prints the state reached and returns wait's exit code: 0, or for
// a turn's end the turn's outcome as run exits with it (turnExitCode).
func (w *waiter) print(out waitJSON) int {
	if w.c.json {
		w.c.writeJSON(out)
		return out.code
	}
	e := w.c
	switch {
	case out.For == waitGate:
		fmt.Fprintf(e.stdout, "session %s is at a gate: %s\n", out.ShortID, textsafe.Line(out.Prompt))
	case out.For == waitIdle:
		fmt.Fprintf(e.stdout, "session %s is idle\n", out.ShortID)
	case out.For == waitAttn && out.Reason == event.AttentionAgent:
		fmt.Fprintf(e.stdout, "session %s asks for you: %s\n", out.ShortID, agentWords(out.Agent, out.Text, event.MaxAttentionText))
	case out.For == waitAttn && out.Text != "":
		fmt.Fprintf(e.stdout, "session %s asks for you (%s): %s\n", out.ShortID, textsafe.Line(out.Reason), textsafe.Line(out.Text))
	case out.For == waitAttn:
		fmt.Fprintf(e.stdout, "session %s asks for you (%s)\n", out.ShortID, textsafe.Line(out.Reason))
	case out.End == "done":
		fmt.Fprintf(e.stdout, "turn %s exited %s\n", rig.ShortID(out.TurnID), strconv.Itoa(*out.ExitCode))
	case out.End == "failed":
		fmt.Fprintf(e.stdout, "turn %s failed: %s\n", rig.ShortID(out.TurnID), textsafe.Line(out.Error))
	default:
		fmt.Fprintf(e.stdout, "turn %s was interrupted (%s)\n", rig.ShortID(out.TurnID), textsafe.Line(out.Reason))
	}
	return out.code
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
	Text     string `json:"text,omitempty"`  // attention: the notification's
	Agent    string `json:"agent,omitempty"` // attention of reason agent: the agent whose words Text is

	code int // wait's exit code: 0, or a turn's end's (turnExitCode)
}
