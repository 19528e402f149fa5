package tui

import (
	"errors"
	"strconv"
	"time"

	"looprig/rig"
	"looprig/rig/hub"
	"looprig/rig/storage"
)

// sessView is everything the TUI knows about one session: its listing row,
// the live session when this TUI hosts it, its folded events and lines, and
// the errors shown for it.
type sessView struct {
	id    string
	short string

	// the listing
	info     rig.SessionInfo // latest listing row
	listed   bool            // info came from a listing (not made up at hosting)
	rawTitle string
	title    string // sanitized
	holder   string // sanitized "pid N@host"

	live hosting // the session as this TUI hosts it (sess nil when it does not)

	// busy is the operation in flight; busySince drives the elapsed time
	// shown next to it.
	busy      busyOp
	busySince time.Time

	// the folded events (fold.go) and the events pane's lines
	f        fold
	ring     *ring
	pend     string // the unterminated output line, shown last
	pendCls  lineClass
	lastSeq  uint64
	outLines uint64
	added    int // lines added since the last frame (keeps a scrolled view still)

	journal journalReader
	used    int // LRU clock of the last time it was shown

	// the events pane's scroll
	follow bool
	scroll int // lines above the bottom, when not following

	// errors and banners
	failed *opFailure // the last restore, break or delete of it that failed
	lost   *leaseLost // it was hosted here and lost its lease, or faulted
}

// hosting is a session this TUI hosts: the session, the hub subscription
// its events arrive by, and what hosting it said.
type hosting struct {
	sess    *rig.Session      // nil when not hosted here (any more)
	sub     *hub.Subscription // nil while the history replay runs, and once the stream ended
	subGen  int               // bumped to drop what a replaced or ended reader still sends
	dropped uint64            // ephemeral events the hub dropped for the subscription
	status  rig.Status        // when it was hosted
	outcome *rig.RestoreInfo  // the restore that hosted it (nil for a new session); kept after shutdown
	broke   *rig.BreakResult  // the lease break (B) before that restore, nil for none
}

// leaseLost is a hosted session that stopped accepting work on its own: its
// lease was taken by another holder, or it could no longer persist.
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
	busyInterrupting
	busyShuttingDown
	busyReleasing // shutting down what is left after a lease loss or a fault
)

func (b busyOp) String() string {
	switch b {
	case busyRestoring:
		return "restoring"
	case busyBreaking:
		return "breaking the lease"
	case busyDeleting:
		return "deleting"
	case busyInterrupting:
		return "interrupting"
	case busyShuttingDown:
		return "shutting down"
	case busyReleasing:
		return "releasing"
	}
	return ""
}

// takesLease says whether the operation is a restore taking the lease
// (the events pane shows its progress).
func (b busyOp) takesLease() bool { return b == busyRestoring || b == busyBreaking }

// journalState is where the reading of a session's journal stands. A
// session held elsewhere is read when it is shown: its history, then its
// tail on a timer while it stays selected. A session hosted here replays
// its history once; then its live stream takes over.
type journalState int

const (
	journalUnread    journalState = iota // nothing read, or forgotten
	journalReading                       // the history is being read
	journalReplaying                     // hosted here: the history replay runs, the live stream waits for it
	journalRead                          // read up to lastSeq; nothing in flight
	journalFollowing                     // read, and what follows is being read (or is armed on the tail timer)
)

func (s journalState) String() string {
	switch s {
	case journalUnread:
		return "unread"
	case journalReading:
		return "reading"
	case journalReplaying:
		return "replaying"
	case journalRead:
		return "read"
	case journalFollowing:
		return "following"
	}
	return "journalState(" + strconv.Itoa(int(s)) + ")"
}

// loaded says whether the journal was read to its end at least once.
func (s journalState) loaded() bool { return s == journalRead || s == journalFollowing }

// inFlight says whether a read is in flight or armed: no other may start.
func (s journalState) inFlight() bool {
	return s == journalReading || s == journalReplaying || s == journalFollowing
}

// journalReader is the reading of a session's journal.
type journalReader struct {
	state journalState
	gen   int    // bumped when the journal is forgotten: reads in flight for it are dropped
	tip   uint64 // the tip the running read heads for (the replay's progress)
}

func newSessView(id string) *sessView {
	return &sessView{id: id, short: rig.ShortID(id), ring: newRing(ringCapacity), follow: true}
}

// hosted says whether this TUI hosts the session.
func (v *sessView) hosted() bool { return v.live.sess != nil }

// liveHere says whether this TUI hosts the session and still holds its
// lease: the session takes commands from here.
func (v *sessView) liveHere() bool { return v.live.sess != nil && v.lost == nil }

// replaying says whether the session, hosted here, is replaying its history.
func (v *sessView) replaying() bool { return v.journal.state == journalReplaying }

// lostBanner says whether the lease-lost banner is shown (until dismissed).
func (v *sessView) lostBanner() bool { return v.lost != nil && !v.lost.seen }

// state is the state shown for the session: live while this TUI hosts it,
// held once its lease was lost, else what the listing says ("live" there
// means held by this process).
func (v *sessView) state() rig.SessionState {
	switch {
	case v.lost != nil:
		return rig.StateHeld
	case v.hosted():
		return rig.StateLive
	}
	return v.info.State
}

func (v *sessView) setInfo(info rig.SessionInfo) {
	v.info = info
	v.listed = true
	if info.Title != v.rawTitle || v.title == "" {
		v.rawTitle = info.Title
		v.title = clean(info.Title)
	}
	v.holder = ""
	if h := info.Holder; h != nil {
		v.holder = clean(holderText(*h))
	}
}

func holderText(h storage.Holder) string {
	return "pid " + strconv.Itoa(h.PID) + "@" + h.Host
}

// epoch is the latest lease epoch known.
func (v *sessView) epoch() uint64 {
	e := v.info.Epoch
	if v.hosted() {
		e = max(e, v.live.status.Epoch)
	}
	if v.lost != nil {
		e = max(e, v.lost.newEpoch)
	}
	return e
}

// openTurnIndex is the index of the running turn, -1 for none: per the
// folded journal once it is read, else per the catalog.
func (v *sessView) openTurnIndex() int {
	if v.hosted() || v.journal.state.loaded() {
		if v.f.openTurn != nil {
			return v.f.openTurn.index
		}
		return -1
	}
	if v.info.OpenTurn != "" {
		return v.info.Turn
	}
	return -1
}

// hasGate says whether a gate is open, as openTurnIndex reads it.
func (v *sessView) hasGate() bool {
	if v.hosted() || v.journal.state.loaded() {
		return v.f.openGate != nil
	}
	return v.info.OpenGate != ""
}

func (v *sessView) lastActivity() time.Time {
	t := v.info.Updated
	if v.f.lastAt.After(t) {
		t = v.f.lastAt
	}
	return t
}

// resetJournal forgets the folded journal, so it can be replayed afresh.
func (v *sessView) resetJournal() {
	v.f = fold{}
	v.ring.reset()
	v.pend = ""
	v.lastSeq = 0
	v.outLines = 0
	v.journal.state = journalUnread
	v.journal.gen++
	v.scroll = 0
	v.follow = true
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
	case !v.hosted():
		switch v.state() {
		case rig.StateHeld:
			h := v.holder
			if h == "" {
				h = "another process"
			}
			return "held by " + h + " — B takes it over"
		case rig.StateLive:
			return "live in this process, but not hosted by this TUI"
		case rig.StateBroken:
			return "broken — its records cannot be trusted"
		}
		return "not live — r restores it"
	case v.replaying():
		return "busy: replaying the journal"
	}
	return ""
}

// restoreRejected returns the drift rejection of the last restore.
func (v *sessView) restoreRejected() *rig.RestoreRejectedError {
	var rj *rig.RestoreRejectedError
	if v.failed != nil && errors.As(v.failed.err, &rj) {
		return rj
	}
	return nil
}
