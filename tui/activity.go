package tui

import (
	"time"

	"looprig/rig"
)

// What a session is doing, as this TUI shows it everywhere (its row's
// TURN column, the counts, w and needs:me, the announcements, the detail
// pane): its running turn, its open gate, its turn's call for the user,
// its last turn end and the checkpoint its holder takes. This file is the
// one place that decides it.
//
// A session has two sources here, both a rig.State: its listing row
// (rig.SessionInfo, from the catalog entry its holder rewrites after each
// change, wherever that holder runs) and the journal this TUI folded
// itself (transcript.fold: the records it read, or the stream of the
// host it is attached to). Whichever has seen the later record of the
// journal is the session's state, whole: the fold when it has folded as
// far as the listing's last record or further (the listing lags the
// journal), else the listing. So a session read while idle and made live
// by another terminal shows its turn and gate as `looprig ls` does at the
// next listing, though this TUI does not follow its journal; and a
// session followed or attached shows what it folded, without waiting for
// the catalog (attached to its holder, the fold always: foldIsNewest). A
// journal is one sequence across its holders (a restore
// appends after the last record), so the later record is the later state,
// whoever wrote it.

// activity is what a session is doing, from the newest of its two
// sources (sessView.activity).
type activity struct {
	state rig.SessionState // the session's (sessView.state)
	// fromFold: the journal this TUI folded is the newest source, not
	// the listing row.
	fromFold bool
	// turn is the turn open in the newest source; its id is "" when none
	// is. It runs only while somebody holds the session (running).
	turn turnNow
	// gate is the gate open in it, and waits only while somebody holds
	// the session; its id is "" when none is or nobody holds it.
	gate gateNow
	// attention is what the running turn asked of the user since anyone
	// last looked; nil when nothing is pending or nobody holds it.
	attention *rig.Attention
	// lastEnd is how its last turn ended; nil before any did.
	lastEnd *rig.TurnEnd
	// checkpointing: its holder is checkpointing the workspace, as far
	// as progress says (nil before its catalog entry says).
	checkpointing bool
	progress      *rig.CheckpointProgress
}

// turnNow is a session's open turn.
type turnNow struct {
	id    string
	index int
	since time.Time // zero when its source does not say
	input string    // "" when only the listing knows the turn
}

// gateNow is a session's open gate.
type gateNow struct {
	id     string
	prompt string // the listing's is cut (rig.MaxCatalogPrompt)
	since  time.Time
}

// running says whether a turn runs: one is open and somebody holds the
// session (a crashed session's open turn does not run).
func (a activity) running() bool { return a.turn.id != "" && a.active() }

// active says whether somebody holds the session.
func (a activity) active() bool { return a.state == rig.StateLive || a.state == rig.StateHeld }

// activity is what v is doing now: see the top of this file. It reads
// what v holds and allocates nothing (View calls it for every row).
func (v *sessView) activity() activity {
	a := activity{state: v.state(), fromFold: v.foldIsNewest()}
	f, l := &v.transcript.fold, &v.listing.info
	if a.fromFold {
		if t := f.Turn(); t != nil {
			a.turn = turnNow{id: t.ID, index: t.Index, since: t.Started, input: t.Input}
		}
		if g := f.Gate(); g != nil {
			a.gate = gateNow{id: g.ID, prompt: g.Prompt, since: g.Opened}
		}
		a.attention, a.lastEnd = f.Attention, orEnd(f.LastEnd, l.LastEnd)
		if f.Finishing() {
			a.checkpointing, a.progress = true, l.Checkpointing
			if p := l.Checkpointing; p != nil && p.TurnID != "" && (f.LastEnd == nil || p.TurnID != f.LastEnd.TurnID) {
				a.progress = nil // an earlier turn's, not updated yet
			}
		}
	} else {
		if l.OpenTurn != "" {
			a.turn = turnNow{id: l.OpenTurn, index: l.Turn, since: l.TurnSince}
			if t := f.Turn(); t != nil && t.ID == l.OpenTurn {
				a.turn.input = t.Input // the same turn, folded up to its start
			}
		}
		if l.OpenGate != "" {
			a.gate = gateNow{id: l.OpenGate, prompt: l.GatePrompt, since: l.GateSince}
			if g := f.Gate(); g != nil && g.ID == l.OpenGate {
				a.gate.prompt = g.Prompt // all of it
			}
		}
		a.attention, a.lastEnd = l.Attention, orEnd(l.LastEnd, f.LastEnd)
		a.checkpointing, a.progress = l.Checkpointing != nil, l.Checkpointing
	}
	if !a.active() {
		// Nobody holds it: its gate waits for nobody, its turn's call asks
		// nobody, and a holder that died checkpointing left its entry
		// behind.
		a.gate, a.attention, a.checkpointing, a.progress = gateNow{}, nil, false, nil
	}
	return a
}

// foldIsNewest says whether the journal this TUI folded for v is its
// state rather than its listing row. Attached to the host that holds the
// lease at the epoch listed (or a later one), its replay done, the fold is
// that holder's own stream, and the holder writes its catalog entry after
// the events it streams: the fold. Else, whichever has seen the later
// record: the fold when it has folded the listing's last record or a later
// one. A listing without a last record (0: made up at an attach) never
// wins over what was folded.
func (v *sessView) foldIsNewest() bool {
	if v.takesCommands() && !v.replaying() && v.live.status.Epoch >= v.listing.info.Epoch {
		return true
	}
	f := v.transcript.fold.LastSeq
	if f == 0 && !v.attached() {
		return false // nothing folded
	}
	return f >= v.listing.info.LastSeq
}

// orEnd is e, or else when e is nil: the newest source's last end, or the
// other's when it knows none (a fold that began after it, rig.ReplayStart).
func orEnd(e, orElse *rig.TurnEnd) *rig.TurnEnd {
	if e != nil {
		return e
	}
	return orElse
}
