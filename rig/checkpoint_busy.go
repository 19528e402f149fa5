package rig

import (
	"context"
	"strconv"
	"time"

	"looprig/rig/checkpoint"
	"looprig/rig/event"
)

// A checkpoint of a big workspace takes seconds to minutes, and the one
// that follows a turn's end runs before the next turn can start. While it
// runs the session says so — its Status, its catalog entry (ls, the TUI,
// a taker on another machine) — and how far it is, and a turn submitted
// meanwhile waits for it (WaitCheckpoint) rather than failing.

// CheckpointProgress is how far the checkpoint a session is taking is.
type CheckpointProgress struct {
	// Trigger is why it is taken (event.TriggerTurn, TriggerStop,
	// TriggerHandoff); TurnID the turn whose end it follows ("" for
	// none).
	Trigger string `json:"trigger"`
	TurnID  string `json:"turn_id,omitempty"`
	// Since is when it began.
	Since time.Time `json:"since"`
	// Files and Bytes are the regular files of the workspace and their
	// bytes, once the workspace has been walked (0 before); FilesDone
	// and BytesDone what is read and stored of them, or known unchanged.
	Files     int   `json:"files"`
	FilesDone int   `json:"files_done"`
	Bytes     int64 `json:"bytes"`
	BytesDone int64 `json:"bytes_done"`
}

// Done says how far the checkpoint is, as every presenter words it:
// "7,421 of 10,000 files"; "" before it says (the first report comes once
// the workspace is walked, with the files the index vouches for counted
// done).
func (p CheckpointProgress) Done() string {
	if p.Files == 0 && p.FilesDone == 0 {
		return ""
	}
	return thousands(p.FilesDone) + " of " + thousands(p.Files) + " files"
}

// For says what the checkpoint is of, as every presenter words it: "the
// last turn" (the workspace after its end), "the shutdown", "the
// handover", "the workspace kept" (a restore that adopted a directory).
func (p CheckpointProgress) For() string {
	switch p.Trigger {
	case event.TriggerStop:
		return "the shutdown"
	case event.TriggerHandoff:
		return "the handover"
	case event.TriggerRestore:
		return "the workspace kept"
	case event.TriggerRevert:
		return "the workspace before a revert"
	case event.TriggerTurnStart:
		return "the workspace before the turn"
	}
	return "the last turn"
}

// thousands is n with a comma between each group of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := ""
	if n < 0 {
		neg, s = "-", s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return neg + s
}

// checkpointRun is the checkpoint a session is taking (Session.ckptRun,
// guarded by the session's mu).
type checkpointRun struct {
	s        *Session
	progress CheckpointProgress // guarded by s.mu
	done     chan struct{}      // closed when it is over
	stop     chan struct{}      // ends listing
	listed   chan struct{}      // closed when listing has returned
}

// Listing a checkpoint in progress: the catalog entry is written once it
// has run for checkpointListAfter, then every checkpointListEvery while
// it goes on, so that ls and the TUI say "checkpointing" (and how far)
// rather than show the finished turn as running. A checkpoint shorter
// than that costs no catalog write.
const (
	checkpointListAfter = 500 * time.Millisecond
	checkpointListEvery = time.Second
)

// beginCheckpoint records that the session takes a checkpoint for
// trigger after turn turnID, until endCheckpoint.
func (s *Session) beginCheckpoint(trigger, turnID string) *checkpointRun {
	run := &checkpointRun{s: s, done: make(chan struct{}), stop: make(chan struct{}), listed: make(chan struct{}),
		progress: CheckpointProgress{Trigger: trigger, TurnID: turnID, Since: s.rig.now()}}
	s.mu.Lock()
	s.ckptRun = run
	s.mu.Unlock()
	go run.list()
	return run
}

// WithCheckpointProgress has progress told how far each checkpoint a
// session takes is, whenever the checkpoint says (now and then while it
// reads and stores files, and once when it has stored them all), on the
// goroutine taking it, once the session has noted it (Status says the
// same). It must not block, but to hold the checkpoint there on purpose:
// tests make a checkpoint as long as they need with it.
func WithCheckpointProgress(progress func(id string, p CheckpointProgress)) Option {
	return func(r *Rig) { r.checkpointProgress = progress }
}

// report is the checkpoint.Options.Progress of the run: it keeps how far
// the checkpoint is (Take calls it from one goroutine at a time).
func (run *checkpointRun) report(p checkpoint.Progress) {
	run.s.mu.Lock()
	run.progress.Files, run.progress.FilesDone = p.Files, p.FilesDone
	run.progress.Bytes, run.progress.BytesDone = p.Bytes, p.BytesDone
	now := run.progress
	run.s.mu.Unlock()
	if f := run.s.rig.checkpointProgress; f != nil {
		f(run.s.id.String(), now)
	}
}

// list writes the catalog entry while the run goes on (see
// checkpointListAfter); it returns when the run ends.
func (run *checkpointRun) list() {
	defer close(run.listed)
	t := time.NewTimer(checkpointListAfter)
	defer t.Stop()
	var last CheckpointProgress
	for {
		select {
		case <-run.stop:
			return
		case <-t.C:
		}
		run.s.mu.Lock()
		p := run.progress
		run.s.mu.Unlock()
		if p != last {
			run.s.updateCatalog()
			last = p
		}
		t.Reset(checkpointListEvery)
	}
}

// endCheckpoint records that run is over: the session no longer says it
// is checkpointing, and whoever waits for it goes on.
func (s *Session) endCheckpoint(run *checkpointRun) {
	close(run.stop)
	<-run.listed
	s.mu.Lock()
	if s.ckptRun == run {
		s.ckptRun = nil
	}
	s.mu.Unlock()
	close(run.done)
}

// checkpointingLocked is how far the checkpoint the session takes is,
// nil when it takes none. s.mu is held.
func (s *Session) checkpointingLocked() *CheckpointProgress {
	if s.ckptRun == nil {
		return nil
	}
	p := s.ckptRun.progress
	return &p
}

// Checkpointing returns how far the checkpoint the session is taking is,
// nil when it takes none (Status.Checkpointing, without the rest).
func (s *Session) Checkpointing() *CheckpointProgress {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checkpointingLocked()
}

// checkpointWaitBound bounds WaitCheckpoint: the checkpoint's own timeout,
// and the journal appends and the index file that follow it.
func (s *Session) checkpointWaitBound() time.Duration {
	return checkpointTimeout + 2*s.rig.releaseTimeout + 5*time.Second
}

// checkpointReportEvery is how often WaitCheckpoint tells its caller how
// far the checkpoint is (also when it has not moved: the caller knows
// the session is alive).
const checkpointReportEvery = 250 * time.Millisecond

// WaitCheckpoint waits until the checkpoint that follows the last turn's
// end, if one is being taken, is over (then Submit starts the next turn
// at once), calling progress, when not nil, every quarter of a second
// meanwhile with how far it is. It returns at once when no turn has ended
// without its checkpoint being over (a turn that runs is Submit's to
// refuse). The wait is bounded by the checkpoint's own timeout, whatever
// ctx's deadline: it returns ctx's error when ctx ends first, and
// *BusyError{Checkpointing} when the bound passes.
func (s *Session) WaitCheckpoint(ctx context.Context, progress func(CheckpointProgress)) error {
	bound := time.NewTimer(s.checkpointWaitBound())
	defer bound.Stop()
	var tick *time.Ticker
	for {
		s.mu.Lock()
		t := s.turn
		p := s.checkpointingLocked()
		s.mu.Unlock()
		if t == nil {
			return nil
		}
		select {
		case <-t.ending:
		default:
			return nil // running: not over, but not a checkpoint either
		}
		if progress != nil && p != nil {
			progress(*p)
			if tick == nil {
				tick = time.NewTicker(checkpointReportEvery)
				defer tick.Stop()
			}
		}
		var ticked <-chan time.Time
		if tick != nil {
			ticked = tick.C
		} else if progress != nil {
			// The end is journaled, the checkpoint not begun yet: look
			// again soon.
			ticked = time.After(10 * time.Millisecond)
		}
		select {
		case <-t.done:
		case <-ticked:
		case <-bound.C:
			return &BusyError{TurnID: t.id, Index: t.index, Checkpointing: true}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
