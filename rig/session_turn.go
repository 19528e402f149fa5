// Turn running: the running turn's record (turnRun), Submit, runTurn
// and Interrupt.

package rig

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"looprig/rig/engine"
	"looprig/rig/event"
	"looprig/rig/journal"
)

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
	// ends, it ended because it was interrupted, for this cause (the user,
	// a hand-over).
	interrupted atomic.Pointer[interruptCause]

	// endMu orders the turn's records against its end (see record and
	// claimEnd in shutdown.go): once Shutdown abandoned the turn, nothing
	// more of it is journaled.
	endMu sync.Mutex
	end   turnEnd       // guarded by endMu
	gone  chan struct{} // closed when Shutdown abandons the turn

	recorded bool // guarded by the session's procMu: the process record names the turn
	// pgid is the turn's process group once it exists (engine.Turn.Started),
	// 0 before: a client in it speaks from inside the turn (fromTurn).
	pgid atomic.Int64
	// refused: what the turn journaled as refused (journalRefused).
	refused refusals

	// tail is the last bytes of the turn's output (outputTail), for
	// SendInput to tell a password prompt.
	tailMu sync.Mutex
	tail   []byte
}

// maxOutputTail bounds the output a turn keeps for SendInput to read.
const maxOutputTail = 512

// keepTail appends text to the turn's output tail.
func (t *turnRun) keepTail(text string) {
	t.tailMu.Lock()
	defer t.tailMu.Unlock()
	if len(text) >= maxOutputTail {
		t.tail = append(t.tail[:0], text[len(text)-maxOutputTail:]...)
		return
	}
	if over := len(t.tail) + len(text) - maxOutputTail; over > 0 {
		t.tail = append(t.tail[:0], t.tail[over:]...)
	}
	t.tail = append(t.tail, text...)
}

// outputTail returns a copy of the last bytes of the turn's output.
func (t *turnRun) outputTail() []byte {
	t.tailMu.Lock()
	defer t.tailMu.Unlock()
	return append([]byte(nil), t.tail...)
}

// TurnInfo identifies a submitted turn.
type TurnInfo struct {
	ID    string
	Index int
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
	if to := s.handingOff; to != "" { // the running turn still takes input, interrupts, answers
		s.mu.Unlock()
		return TurnInfo{}, &HandingOffError{To: to}
	}
	for s.turn != nil {
		t := s.turn
		s.mu.Unlock()
		select {
		case <-t.ending:
		default:
			return TurnInfo{}, &BusyError{TurnID: t.id, Index: t.index}
		}
		// Its end is being recorded, or its workspace checkpointed (a
		// client that saw it may submit the next turn at once): wait for
		// the turn to be over. WaitCheckpoint waits longer, and says how
		// far the checkpoint is.
		select {
		case <-t.done:
		case <-ctx.Done():
			return TurnInfo{}, &BusyError{TurnID: t.id, Index: t.index, Checkpointing: true}
		}
		s.mu.Lock()
		if err := s.admitLocked(); err != nil {
			s.mu.Unlock()
			return TurnInfo{}, err
		}
		if to := s.handingOff; to != "" {
			s.mu.Unlock()
			return TurnInfo{}, &HandingOffError{To: to}
		}
	}
	if s.reverting {
		s.mu.Unlock()
		return TurnInfo{}, &BusyError{Index: -1, Reverting: true}
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
	s.checkpointBeforeTurn(pctx)
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
	case t.interrupted.Load() != nil:
		end = event.TurnInterrupted{TurnID: t.id, Index: t.index, Reason: t.interrupted.Load().reason}
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
	return s.interrupt(ctx, causeUser)
}

// interrupt is Interrupt, the turn's end recorded with cause's reason.
func (s *Session) interrupt(ctx context.Context, cause *interruptCause) error {
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
		t.interrupted.Store(cause)
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
	t.cancel(cause)
	select {
	case <-t.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
