package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/event"
)

var cmdRun = &command{
	name: "run", brief: "run one turn in a session's host (started if need be), stream it", help: helpRun,
	json: true, args: runArgs, needs: needsStore, interrupts: true, exitRunFailed: true,
	flags: func(fs *flag.FlagSet, o *opts) {
		restoreFlags(fs, o)
		fs.BoolVar(&o.detach, "detach", false, "submit the turn to the session's host (started if need be) and exit without waiting")
		fs.BoolVar(&o.inProcess, "in-process", false, "run the turn in this process: restore, run, shut down (no host)")
	},
	run: runRun,
}

// runArgs checks run's arguments, ID -- INPUT..., and opens the
// LOOPRIG_ACK_FD channel, whose mistakes are usage errors too.
func runArgs(c *call) error {
	switch {
	case len(c.args) == 0:
		return usageErr(c.cmd, "missing session id: looprig run ID -- INPUT...")
	case len(c.args) > 1 && !c.dash:
		return usageErr(c.cmd, fmt.Sprintf("put the input after \"--\": looprig run %s -- %s", c.args[0], strings.Join(c.args[1:], " ")))
	case len(c.args) > 1:
		return usageErr(c.cmd, fmt.Sprintf("unexpected argument %q before \"--\"", c.args[1]))
	case c.detach && c.inProcess:
		return usageErr(c.cmd, "--detach and --in-process exclude each other: a detached turn runs in a host")
	}
	var err error
	c.ack, err = openAckFD() // LOOPRIG_ACK_FD: see ackfd.go
	return err
}

// runRun runs the turn in the session's host (run_remote.go): the one
// that serves it on this machine, or one started for it, which keeps the
// session live afterwards. With --in-process, or when no host can serve
// the session here, it runs the turn in this process instead.
func runRun(c *call) int {
	if noInput(c) {
		if err := checkNoInput(c); err != nil {
			return c.failRun(err)
		}
	}
	switch {
	case c.detach:
		return runDetached(c)
	case c.inProcess:
		if err := c.refuseLive(); err != nil {
			return c.failRun(err)
		}
		return runInProcess(c)
	}
	if code, hosted := runHosted(c); hosted {
		return code
	}
	return runInProcess(c)
}

// noInput reports whether run was given no input (no "--", or nothing
// but blanks after it).
func noInput(c *call) bool { return strings.TrimSpace(strings.Join(c.input, " ")) == "" }

// checkNoInput allows a turn with no input only in a session whose
// profile runs an agent's own interface (agent_interactive): it opens
// with an empty prompt box, as the TUI's input line sent empty does. Any
// other turn needs its input: a missing one is a usage error, told once
// the session's profile is known (--rig, else the one it recorded).
func checkNoInput(c *call) error {
	missing := usageErr(c.cmd, "missing input: looprig run ID -- INPUT... (for example: looprig run "+c.args[0]+" -- echo hello)")
	id, err := rig.FindSession(c.ctx, c.st, c.args[0])
	if err != nil {
		return missing // the id is looked at again, and its error told, with an input
	}
	var p rig.Profile
	if c.profile.rig != "" {
		p, err = c.cfg.Profile(c.profile.rig)
	} else {
		p, err = c.recordedProfile(id)
	}
	if err != nil || !p.AgentInteractive {
		return missing
	}
	return nil
}

// runInProcess runs the turn in this process: restore the session, run
// the turn, shut the session down. The session lives as long as this
// process: killed (a hangup ends it too), it leaves the session crashed.
func runInProcess(c *call) int {
	s, err := c.restoreSession(c.args[0])
	if err != nil {
		return c.failRun(err)
	}
	if info := s.Restored(); info != nil && len(info.Interrupted) > 0 && !c.json {
		fmt.Fprintf(c.stderr, "looprig: restored session %s at epoch %d; closed %s left open by a crash\n",
			rig.ShortID(s.SessionID().String()), info.Epoch, plural(len(info.Interrupted), "interrupted turn"))
	}
	if info := s.Restored(); info != nil && !c.json {
		if r := workspaceReport(info.Workspace); r != "" {
			fmt.Fprintf(c.stderr, "looprig: %s\n", r)
		}
	}
	tr := &turnRunner{c: c, s: localTurn{s}}
	code := tr.run(strings.Join(c.input, " "))
	if err := shutdown(s, c.sig); err != nil {
		if errors.Is(err, errForced) {
			fmt.Fprintln(c.stderr, "looprig: second interrupt: exiting without waiting for the shutdown")
			if code == exitOK {
				code = exitInterrupted
			}
			return code
		}
		if f := s.Err(); f == nil {
			fmt.Fprintf(c.stderr, "looprig: warning: session %s did not shut down cleanly: %s\n",
				rig.ShortID(s.SessionID().String()), textsafe.Sanitize(err.Error()))
		}
	}
	return code
}

var errForced = errors.New("forced exit")

// shutdown shuts s down, giving up (errForced) on a second interrupt.
func shutdown(s *rig.Session, sig *interrupts) error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		done <- s.Shutdown(ctx)
	}()
	select {
	case err := <-done:
		return err
	case <-sig.force:
		return errForced
	}
}

// turnSession is the session a turnRunner drives: one of this process
// (localTurn) or one live in a host (hostTurn, run_remote.go).
type turnSession interface {
	// follow starts following the session's events from its journal's
	// tip (before the submit: the turn's events are all after it).
	follow(ctx context.Context) (*rig.Follower, error)
	Submit(ctx context.Context, input string) (rig.TurnInfo, error)
	Interrupt(ctx context.Context) error
	RespondGate(ctx context.Context, gateID string, approve bool) error
	// Done is closed when the session stops taking work from us: it
	// stopped or faulted, or the connection to its host ended.
	Done() <-chan struct{}
	// settle waits, after the session's events ended, until whether it
	// faulted is known (a host says so in its goodbye).
	settle(ctx context.Context)
	// tty says whether the session runs its turns on a terminal.
	tty(ctx context.Context) (bool, error)
	// fault is why the session stopped under the turn, as run reports it
	// (its lease lost, its host gone); nil when it did not fault.
	fault() error
	// The turn's terminal (run_input.go).
	SendInput(ctx context.Context, text string) (hidden bool, err error)
	SendEOF(ctx context.Context) error
	TerminalState(ctx context.Context) (terminal, echoOff bool, err error)
	Resize(ctx context.Context, cols, rows int) error
}

// localTurn is a session of this process.
type localTurn struct{ *rig.Session }

func (s localTurn) follow(ctx context.Context) (*rig.Follower, error) {
	return rig.Follow(ctx, s.Session, s.Status().Tip)
}

func (s localTurn) settle(context.Context) {}

func (s localTurn) tty(context.Context) (bool, error) { return s.Status().TTY, nil }

// client is this process, which answers the session's gates and types
// into its turns as "cli".
func (s localTurn) client() rig.Client { return rig.ThisProcess("cli") }

func (s localTurn) RespondGate(ctx context.Context, gateID string, approve bool) error {
	return s.Session.RespondGate(ctx, gateID, approve, s.client())
}

func (s localTurn) SendInput(ctx context.Context, text string) (bool, error) {
	return s.Session.SendInput(ctx, rig.Input{Text: text, From: s.client()})
}

func (s localTurn) SendEOF(ctx context.Context) error {
	_, err := s.Session.SendInput(ctx, rig.Input{EOF: true, From: s.client()})
	return err
}

func (s localTurn) TerminalState(context.Context) (bool, bool, error) {
	terminal, echoOff := s.Session.TerminalState()
	return terminal, echoOff, nil
}

func (s localTurn) Resize(_ context.Context, cols, rows int) error {
	return s.Session.Resize(cols, rows)
}

func (s localTurn) fault() error {
	if f := s.Err(); f != nil {
		return leaseLost(s.SessionID().String(), f)
	}
	return nil
}

// turnRunner submits one turn and follows it to its end: what the
// session says (its rig.State: the turn's gates, its end) and the turn's
// output, as its rig.Transcript passes it on.
type turnRunner struct {
	c *call // its interrupts (sig) and LOOPRIG_ACK_FD channel (ack)
	s turnSession

	turnID  string
	index   int
	started time.Time
	end     *rig.TurnEnd
	state   rig.State
	tr      rig.Transcript
	asked   string // the last gate asked about
	// The output is rendered for people (render.go): the turn's stdout on
	// ours, its stderr (a turn without a terminal) on ours; made on first
	// use, flushed at the end. On a terminal, the line our stdout's output
	// is on is drawn before it is complete (liveline.go), and looprig's
	// messages go beside it (stderr()); nil otherwise.
	outP, errP *outputPrinter
	live       *liveLine

	follower   *rig.Follower // the session's events
	outputGone bool
	exact      bool // the turn is on pipes: its output is printed as it is where no terminal shows it
	stopTurn   context.CancelFunc
	input      *termInput // stdin forwarded to the turn, nil when not a terminal
	// submitted is closed once Submit returned: what is typed before
	// (while the submit waits for the checkpoint of the last turn) waits
	// for the turn, rather than going to none.
	submitted chan struct{}

	gateWG sync.WaitGroup
	// lastOutput is when the turn last printed (unix nanoseconds; the
	// run's start before it printed): forwardPipe reads it.
	lastOutput atomic.Int64
}

func (t *turnRunner) run(input string) int {
	e, s := t.c, t.s
	if f, ok := e.stdout.(*os.File); ok && !e.json && isTerminal(f) {
		t.live = newLiveLine(f)
		t.live.scr = newScreenTerm(f, outputProfile(f), true)
		defer t.live.scr.close() // whatever way run ends, our terminal leaves a program's screen
	}
	f, err := t.follow()
	if err != nil {
		return e.failRun(err)
	}
	defer f.Close()
	t.follower = f
	gctx, gcancel := context.WithCancel(context.Background()) // ends the gate prompts
	defer func() {
		gcancel()
		t.gateWG.Wait()
	}()

	t.submitted = make(chan struct{})
	t.lastOutput.Store(time.Now().UnixNano())
	stopInput := t.startInput(gctx)
	defer stopInput()
	stopPipe := t.startPipe(gctx)
	defer stopPipe()
	t.started = time.Now()
	ti, err := s.Submit(e.sig.ctx, input)
	if err == nil {
		t.turnID, t.index = ti.ID, ti.Index
	}
	close(t.submitted)
	if err != nil {
		if f := s.fault(); f != nil {
			err = f
		}
		return e.failRun(err)
	}

	// stopCtx ends on the first interrupt, or when our stdout is gone (a
	// reader like "| head" exited): both interrupt the turn.
	stopCtx, stopTurn := context.WithCancel(e.sig.ctx)
	defer stopTurn()
	t.stopTurn = stopTurn
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE) // a write to a closed pipe fails with EPIPE instead of killing us
	defer signal.Stop(pipe)
	// next bounds each wait for events: it ends with stopCtx and when the
	// session stops accepting work (lease lost, host gone).
	next, cancelNext := context.WithCancel(stopCtx)
	defer cancelNext()
	stopWatch := make(chan struct{})
	defer close(stopWatch)
	go func() {
		select {
		case <-s.Done():
			cancelNext()
		case <-stopWatch:
		}
	}()

	// fail ends the output before the error.
	fail := func(err error) int {
		t.flush()
		return e.failRun(err)
	}
	interrupting := false
	for t.end == nil {
		batch, err := f.Next(next)
		for _, env := range batch {
			t.handle(gctx, env)
			if t.end != nil {
				break // the turn's end is run's last event, whatever came with it
			}
		}
		if t.end != nil || err == nil {
			continue
		}
		if errors.Is(err, rig.ErrFollowEnded) { // the session stopped
			s.settle(next)
			if f := s.fault(); f != nil {
				return fail(f)
			}
			return fail(fmt.Errorf("the session stopped before turn %d ended", t.index))
		}
		if f := s.fault(); f != nil { // the session stopped: lease lost, host gone
			return fail(f)
		}
		if next.Err() == nil { // reading the events failed
			return fail(fmt.Errorf("follow turn %d: %w", t.index, err))
		}
		select {
		case <-e.sig.force:
			t.flush()
			return exitInterrupted
		default:
		}
		if interrupting || stopCtx.Err() == nil {
			return fail(fmt.Errorf("the session stopped before turn %d ended", t.index))
		}
		interrupting = true
		next, cancelNext = t.interrupt(stopWatch)
		defer cancelNext()
	}
	return t.finish()
}

// follow follows the session's events, and learns whether the turn runs
// on pipes (exact). A failure is the session's fault when it has one.
func (t *turnRunner) follow() (*rig.Follower, error) {
	e, s := t.c, t.s
	fctx, cancel := context.WithTimeout(e.sig.ctx, connectTimeout)
	f, err := s.follow(fctx)
	if tty, terr := s.tty(fctx); err == nil && terr == nil {
		t.exact = !tty
	}
	cancel()
	if err != nil {
		if ff := s.fault(); ff != nil {
			err = ff
		}
		return nil, err
	}
	return f, nil
}

// interrupt interrupts the turn on the first interrupt (its end arrives
// as TurnInterrupted) and returns what bounds each wait for events from
// then on: it ends with a second interrupt or the session stopping (or
// once stopWatch closes).
func (t *turnRunner) interrupt(stopWatch <-chan struct{}) (context.Context, context.CancelFunc) {
	e, s := t.c, t.s
	if !e.json && !t.outputGone {
		fmt.Fprintln(t.stderr(), "looprig: interrupting the turn (press Ctrl-C again to exit at once)")
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s.Interrupt(ctx) // the turn's end arrives as TurnInterrupted
	}()
	// From here on, wait for the turn's end, a second interrupt,
	// or the session stopping.
	next, cancelNext := context.WithCancel(context.Background())
	go func(cancel context.CancelFunc) {
		select {
		case <-e.sig.force:
		case <-s.Done():
		case <-stopWatch:
			return
		}
		cancel()
	}(cancelNext)
	return next, cancelNext
}

// turnOf returns the turn an event is about, "" for none.
func turnOf(ev event.Event) string {
	switch v := ev.(type) {
	case event.TurnStarted:
		return v.TurnID
	case event.TurnOutput:
		return v.TurnID
	case event.OutputDelta:
		return v.TurnID
	case event.TurnDone:
		return v.TurnID
	case event.TurnFailed:
		return v.TurnID
	case event.TurnInterrupted:
		return v.TurnID
	case event.GateOpened:
		return v.TurnID
	}
	return ""
}

// handle takes one event of the session: the ack channel and --json get
// the durable ones; the fold says when the turn opens a gate and when it
// ends; the transcript gives its output.
func (t *turnRunner) handle(gctx context.Context, env event.Envelope) {
	e := t.c
	if env.Seq > 0 {
		e.ack.record(env)
	}
	if e.json && !t.outputGone {
		if o, err := envelopeJSON(env); err == nil {
			if e.writeJSON(o) != nil {
				t.outputGone = true // nobody reads us any more: stop the turn
				t.stopTurn()
			}
		}
	}
	if c, ok := t.tr.Apply(env.Event); ok && c.TurnID == t.turnID && !e.json {
		t.write(c.Stream == event.StreamStderr, c.Text)
	}
	t.state.Apply(env)
	mine := turnOf(env.Event) == t.turnID
	switch ev := env.Event.(type) {
	case event.TurnOutput:
		if mine && ev.Elided > 0 && !e.json {
			fmt.Fprintf(t.stderr(), "looprig: %d bytes of output were not kept (the per-turn journal limit was reached)\n", ev.Elided)
		}
	case event.GateResolved:
		if t.live != nil && ev.GateID == t.asked { // answered here or elsewhere: its question is done
			t.live.resume(false)
		}
		if !e.json && ev.Action == event.ActionClose {
			fmt.Fprintf(t.stderr(), "looprig: gate closed (%s)\n", textsafe.Line(ev.Reason))
		}
	case event.SessionFaulted:
		if !e.json {
			fmt.Fprintf(t.stderr(), "looprig: session fault: %s\n", textsafe.Line(ev.Cause))
		}
	}
	if g := t.state.Gate(); g != nil && g.TurnID == t.turnID && g.ID != t.asked {
		t.asked = g.ID
		t.gate(gctx, *g)
	}
	if end := t.state.LastEnd; end != nil && end.TurnID == t.turnID {
		t.end = end
	}
}

// gate answers a gate the turn opened: on a terminal it asks y/N on stdin;
// otherwise it denies, saying so.
func (t *turnRunner) gate(gctx context.Context, g rig.OpenGate) {
	e, s := t.c, t.s
	f, ok := e.stdin.(*os.File)
	if !ok || !isTerminal(f) {
		if !e.json {
			fmt.Fprintf(t.stderr(), "looprig: gate: %s\nlooprig: denied: stdin is not a terminal, so nobody can approve it\n", textsafe.Line(g.Prompt))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.RespondGate(ctx, g.ID, false); err != nil {
			fmt.Fprintf(t.stderr(), "looprig: deny gate: %s\n", textsafe.Sanitize(err.Error()))
		}
		return
	}
	if t.input != nil { // stdin is read by the input forwarder: the next line answers
		t.input.answerGate(g)
		fmt.Fprintf(t.stderr(), "looprig: gate: %s\napprove? [y/N] ", textsafe.Line(g.Prompt))
		return
	}
	fmt.Fprintf(t.stderr(), "looprig: gate: %s\napprove? [y/N] ", textsafe.Line(g.Prompt))
	t.gateWG.Add(1)
	go func() {
		defer t.gateWG.Done()
		line, err := readLine(gctx, f)
		if gctx.Err() != nil {
			return
		}
		t.answered()
		answer := strings.ToLower(strings.TrimSpace(line))
		t.respond(g, err == nil && (answer == "y" || answer == "yes"))
	}()
}

// respond answers gate g.
func (t *turnRunner) respond(g rig.OpenGate, approve bool) { respondGate(t.s, t.stderr(), g, approve) }

// write prints turn output for people: through the turn's renderer for
// our stdout, or stderr for the turn's stderr, each line once it is final
// (render.go), and on a terminal our stdout's line so far too (the live
// line). Lines still open wait for more output or for flush; looprig's
// own messages on stderr go beside the live line (stderr()), so they
// never land in the middle of an output line.
func (t *turnRunner) write(stderr bool, text string) {
	if text == "" || t.outputGone {
		return
	}
	t.lastOutput.Store(time.Now().UnixNano())
	p, w, to := &t.outP, t.c.stdout, t.c.stdout
	if stderr {
		p, w, to = &t.errP, t.c.stderr, t.stderr()
	}
	if *p == nil {
		if f, ok := w.(*os.File); t.exact && (!ok || !isTerminal(f)) {
			*p = newExactPrinter(to)
		} else {
			*p = newOutputPrinter(to, outputProfile(w))
			(*p).leaveOpen = true
			if !stderr && t.live != nil {
				(*p).live = t.live
				t.live.scr.fit((*p).r)
			}
		}
	}
	if err := (*p).write(text); err != nil {
		t.gone()
	}
}

// stderr is where looprig's messages go during the turn: our stderr,
// beside the live line (which is erased before them and drawn again after
// them) when there is one.
func (t *turnRunner) stderr() io.Writer { return asideWriter{t.live, t.c.stderr} }

// answered: a question of looprig's (a gate's) was answered on our
// terminal, which went to the next line; the live line is drawn again.
func (t *turnRunner) answered() {
	if t.live != nil {
		t.live.resume(true)
	}
}

// gone handles a write that failed: nobody reads our output any more
// (EPIPE). Stop the turn, as a shell pipeline would, and shut down
// cleanly.
func (t *turnRunner) gone() {
	t.outputGone = true
	t.stopTurn()
}

// flush prints the output lines still open, before looprig's closing
// line or error. A last line the turn did not end is printed as it is,
// and ended on our stderr, so that stdout holds the turn's output only.
func (t *turnRunner) flush() {
	for _, p := range []*outputPrinter{t.outP, t.errP} {
		if p == nil || t.outputGone {
			continue
		}
		if err := p.flush(); err != nil {
			t.gone()
			continue
		}
		if p.open {
			p.open = false
			fmt.Fprintln(t.c.stderr)
		}
	}
}

// finish prints the closing line and returns the turn's exit code.
func (t *turnRunner) finish() int {
	e := t.c
	elapsed := time.Since(t.started)
	var line string
	code := turnExitCode(t.end)
	switch end := t.end; end.Outcome {
	case rig.TurnOutcomeDone:
		line = fmt.Sprintf("turn %d exited %d in %s", t.index, end.ExitCode, roundDuration(end.Duration()))
	case rig.TurnOutcomeFailed:
		line = fmt.Sprintf("turn %d failed after %s: %s", t.index, roundDuration(elapsed), textsafe.Line(end.Reason))
	case rig.TurnOutcomeInterrupted:
		line = fmt.Sprintf("turn %d interrupted (%s) after %s", t.index, textsafe.Line(end.Reason), roundDuration(elapsed))
	}
	t.flush()
	if !e.json {
		fmt.Fprintf(e.stderr, "looprig: %s\n", line)
	}
	return code
}

// turnExitCode is the exit code of run (and of wait for a turn's end)
// for how a turn ended, as 'docker run' does: a done turn's own code
// (128+N for a command killed by signal N, clamped to 0..255), 130 for an
// interrupted turn, 1 for a failed one (or one denied at a gate).
func turnExitCode(end *rig.TurnEnd) int {
	switch end.Outcome {
	case rig.TurnOutcomeDone:
		switch code := end.ExitCode; {
		case code < 0:
			return exitError
		case code > 255:
			return 255
		default:
			return code
		}
	case rig.TurnOutcomeInterrupted:
		return exitInterrupted
	}
	return exitError
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(time.Millisecond)
	}
	return d
}
