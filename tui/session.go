package tui

import (
	"strconv"
	"time"

	"looprig/host"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/explain"
	"looprig/rig/fault"
)

// sessView is everything the TUI knows about one session, in parts by
// concern: its listing (the catalog's row and what the probes said), the
// attachment to its host when this TUI is attached, the reading of its
// journal, and the transcript folded from its events; and, of the session
// as a whole, the operation in flight on it, what the announcements last
// saw of it and the errors shown for it.
type sessView struct {
	id    string
	short string

	listing    listing       // its catalog row and host probe
	live       attachment    // the client attached to its host (c nil when not attached)
	journal    journalReader // the reading of its journal (journal.go)
	transcript transcript    // its events folded: its state, lines and output

	// busy is the operation in flight; busySince drives the elapsed time
	// shown next to it.
	busy      busyOp
	busySince time.Time
	// restoring is how far the restore in flight is in bringing the
	// workspace back from its checkpoint, as its host reports it; nil
	// before it says.
	restoring *host.MaterializeProgress

	// what the announcements last saw of it (notify.go)
	heard heard

	// pendingInput is a line typed with i while the session was not live
	// (inputBar.restoreFirst): it runs once r made it live here
	// (shared.runPending), and is dropped, saying so, if that fails.
	pendingInput string

	// errors and banners
	failed *opFailure // the last restore, break, delete or attach of it that failed
	lost   *leaseLost // its host lost its lease while attached, or faulted
}

// leaseLost is an attached session that stopped accepting work on its own:
// its lease was taken by another holder, or it could no longer persist.
type leaseLost struct {
	oldEpoch, newEpoch uint64
	holder             string // sanitized
	cause              string // sanitized
	fault              bool   // a persistence fault rather than a lost lease
	seen               bool   // its banner was dismissed
}

// busyOp is the operation in flight on a session; while one runs, the
// session takes no other.
type busyOp int

const (
	notBusy busyOp = iota
	busyRestoring
	busyBreaking // breaking the lease, then restoring
	busyDeleting
	busyAttaching
	busyInterrupting
	busyShuttingDown
)

func (b busyOp) String() string {
	switch b {
	case busyRestoring:
		return "restoring"
	case busyBreaking:
		return "breaking the lease"
	case busyDeleting:
		return "deleting"
	case busyAttaching:
		return "attaching"
	case busyInterrupting:
		return "interrupting"
	case busyShuttingDown:
		return "shutting down"
	}
	return ""
}

// takesLease says whether the operation is a restore taking the lease
// (the events pane shows its progress).
func (b busyOp) takesLease() bool { return b == busyRestoring || b == busyBreaking }

func newSessView(id string) *sessView {
	return &sessView{id: id, short: rig.ShortID(id), transcript: newTranscript()}
}

// resetJournal forgets the folded journal, so it can be replayed afresh:
// the transcript folded from it, and the reading of it (reads in flight
// are dropped).
func (v *sessView) resetJournal() {
	v.transcript.reset()
	v.journal.forget()
}

// earlierTurnRuns says whether its last restore was refused because a
// turn of an earlier holder still runs on this machine (B stops it).
func (v *sessView) earlierTurnRuns() bool {
	return v.failed != nil && explain.Explain(v.failed.err).Kind == fault.KindTurnRunning
}

// attached says whether this TUI is attached to the session's host.
func (v *sessView) attached() bool { return v.live.c != nil }

// takesCommands says whether this TUI is attached to the session's host
// and the host still holds the lease: the session takes commands from
// here.
func (v *sessView) takesCommands() bool { return v.live.c != nil && v.lost == nil }

// hostPID is the pid of the host serving the session on this machine, as
// the client attached to it or a probe says; 0 for none.
func (v *sessView) hostPID() int {
	if v.attached() {
		return v.live.pid
	}
	return v.listing.probe.pid
}

// replaying says whether the session, attached, is replaying its history.
func (v *sessView) replaying() bool { return v.journal.state == journalReplaying }

// lostBanner says whether the lease-lost banner is shown (until dismissed).
func (v *sessView) lostBanner() bool { return v.lost != nil && !v.lost.seen }

// state is the state shown for the session: held once the lease was lost
// while attached (until a host serves it again); live while a host serves
// it (attached, or a probe answered); held while anything else holds it,
// this process included (a listing's "live"); else what the listing says.
func (v *sessView) state() rig.SessionState {
	switch {
	case v.lost != nil && v.listing.probe.pid == 0:
		return rig.StateHeld
	case v.attached() && v.lost == nil:
		return rig.StateLive
	case v.listing.info.State == rig.StateLive || v.listing.info.State == rig.StateHeld:
		if v.listing.probe.pid > 0 {
			return rig.StateLive
		}
		return rig.StateHeld
	}
	return v.listing.info.State
}

// epoch is the latest lease epoch known.
func (v *sessView) epoch() uint64 {
	e := v.listing.info.Epoch
	if v.attached() {
		e = max(e, v.live.status.Epoch)
	}
	if v.lost != nil {
		e = max(e, v.lost.newEpoch)
	}
	return e
}

func (v *sessView) lastActivity() time.Time {
	t := v.listing.info.Updated
	if v.transcript.fold.LastAt.After(t) {
		t = v.transcript.fold.LastAt
	}
	return t
}

// notMutable says why the session cannot take commands, "" when it can.
func (v *sessView) notMutable() string {
	switch {
	case v.lost != nil && v.lost.fault:
		return "read-only: the session faulted (" + v.lost.cause + ")"
	case v.lost != nil:
		return "read-only: lease lost to epoch " + strconv.FormatUint(v.lost.newEpoch, 10) + " (" + v.lost.holder + ")"
	case v.busy != notBusy:
		return "busy: " + v.busy.String()
	case !v.attached():
		switch v.state() {
		case rig.StateLive:
			return "live in host pid " + strconv.Itoa(v.hostPID()) + ", not attached — r attaches"
		case rig.StateHeld:
			h := v.listing.holder
			if h == "" {
				h = "another process"
			}
			return "held by " + h + " — B takes it over"
		case rig.StateBroken:
			return "broken — its records cannot be trusted"
		}
		return "not live — r restores it"
	case v.replaying():
		return "busy: replaying the journal"
	}
	return ""
}

// restorable says whether r makes v live here: it is idle or crashed (a
// restore), or live in a host this TUI is not attached to (an attach), and
// nothing is in flight on it.
func (v *sessView) restorable() bool {
	if v.busy != notBusy || v.attached() || v.lost != nil {
		return false
	}
	switch v.state() {
	case rig.StateIdle, rig.StateCrashed:
		return true
	case rig.StateLive:
		return v.hostPID() > 0
	}
	return false
}

// driftRejected returns the changes of the last restore when the host
// rejected it for configuration drift (explain.Explain: the host's
// classification, carried by its *host.RemoteError), else ok false.
// workspaceDiverged returns the classification of v's last restore when it
// failed because the workspace directory diverged from the session's
// checkpoints.
func (v *sessView) workspaceDiverged() (fault.Explanation, bool) {
	if v.failed == nil || v.failed.op != opRestore {
		return fault.Explanation{}, false
	}
	x := explain.Explain(v.failed.err)
	return x, x.Kind == fault.KindWorkspaceDiverged
}

func (v *sessView) driftRejected() (changes []event.Change, ok bool) {
	if v.failed == nil || v.failed.op != opRestore {
		return nil, false
	}
	x := explain.Explain(v.failed.err)
	if x.Type != fault.TypeRestoreRejectedError {
		return nil, false
	}
	return explain.FactsOf(x).Changes, true
}

// turnsKnown is how many turns v has started, as far as this TUI knows:
// from its fold or its listing, whichever says more.
func (v *sessView) turnsKnown() int {
	return max(v.transcript.fold.Turns, v.listing.info.Turns)
}
