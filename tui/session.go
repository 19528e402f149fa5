package tui

import (
	"strconv"
	"time"

	"looprig/host"
	"looprig/internal/termrender"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/explain"
	"looprig/rig/storage"
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

	// what the announcements last saw of it (notify.go)
	heard heard

	// errors and banners
	failed *opFailure // the last restore, break, delete or attach of it that failed
	lost   *leaseLost // its host lost its lease while attached, or faulted
}

// listing is what the catalog and the host probes say of a session: its
// latest row, its title and holder as drawn, and whether a host on this
// machine serves it.
type listing struct {
	info     rig.SessionInfo // latest listing row
	listed   bool            // info came from a listing (not made up at hosting)
	rawTitle string
	title    string // sanitized
	holder   string // sanitized "pid N@host"

	probe hostProbe // whether a host on this machine serves it
}

// transcript is a session's events as this TUI folded them (fold.go):
// the session's state and its turns' output, the events pane's lines with
// the output still being rendered (output.go), the full-screen program's
// screen (screen.go), and how far the events pane is scrolled back.
type transcript struct {
	fold rig.State
	tr   rig.Transcript
	ring *ring
	// the output of the turn being shown (output.go): its renderer, the
	// turn and stream it renders, and its pending lines (drawn last)
	out       *termrender.Renderer
	outTurn   string
	outCls    lineClass
	prof      termrender.Profile
	pend      []string // cache of out.Pending(), valid unless pendDirty
	pendDirty bool
	pendSeen  int // pending lines at the last settleScroll
	// screen: the turn's full-screen program, while it has the alternate
	// screen (screen.go); screenSize: the size it is made with, the turn
	// terminal's (model.turnSize).
	screen     *turnScreen
	screenSize [2]int
	lastSeq    uint64
	outLines   uint64
	added      int // lines added since the last frame (keeps a scrolled view still)

	// the events pane's scroll
	follow bool
	scroll int // lines above the bottom, when not following
}

// hostProbe is what host.Probe said of the session while a process on
// this machine holds its lease. key names that holding (sessView.holding):
// a host that answered is not probed again for it; when none answered, it
// is probed again after reprobeEvery (a host restoring the session holds
// its lease before it serves).
type hostProbe struct {
	key string    // the holding probed (or being probed); "" when not held here
	pid int       // the host's pid; 0 when no host answered (yet)
	at  time.Time // when it was probed
	// asking: a probe is in flight; the journal is not read meanwhile (an
	// answer attaches, and an attach replays the journal itself).
	asking bool
	// noAttach is the holding an attach failed for (or whose host ended
	// while attached): opening the session does not attach to it again,
	// r does.
	noAttach string
}

// holding names who holds the session as last listed: its epoch and the
// holder's pid; "" when nobody does.
func (v *sessView) holding() string {
	if v.listing.info.Holder == nil {
		return ""
	}
	return strconv.FormatUint(v.listing.info.Epoch, 10) + "/" + strconv.Itoa(v.listing.info.Holder.PID)
}

// forgetHost forgets what the probes said (the next listing probes again)
// and keeps opening the session from attaching to its holding as listed.
func (v *sessView) forgetHost() {
	v.listing.probe = hostProbe{noAttach: v.holding()}
}

// reprobeEvery is how often a holding no host answered for is probed
// again.
const reprobeEvery = 3 * time.Second

// attachment is a session this TUI is attached to: the client of its host,
// the stream its events arrive by, and what starting the host said.
type attachment struct {
	c *host.Client // nil when not attached (any more)
	// follower follows the session through its host (rig.Follow); nil
	// until it is open, and once it ended
	follower *rig.Follower
	pid      int         // the host's
	gen      int         // bumped to drop what a replaced or ended reader still sends
	stopping bool        // X asked the host to shut the session down
	status   host.Status // when attached
	// outcome is the restore that started the host (nil for a new session
	// or an attach); kept after the detach.
	outcome *rig.RestoreInfo
	broke   *rig.BreakResult // the lease break (B) before that restore, nil for none

	// input to the running turn (turninput.go): a send in flight, and the
	// sends waiting for it
	sending bool
	queue   []turnSend
	// the turn's terminal size (turninput.go): a Resize in flight, the
	// size it sent and the size wanted now
	resizing           bool
	sentSize, wantSize [2]int
	redraw             bool // a redraw (screenfocus.go) waits for the resize in flight
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

// journalState is where the reading of a session's events stands. A
// session not attached is read when it is shown: its history, then what
// follows while it stays selected. An attached session replays its
// history through its host, then goes on live.
type journalState int

const (
	journalUnread    journalState = iota // nothing read, or forgotten
	journalReading                       // the history is being read
	journalReplaying                     // attached: the host replays the history
	journalRead                          // read up to lastSeq; nothing in flight
	journalFollowing                     // read, and what follows is being read
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
	tip   uint64 // the sequence the running read heads for (the replay's progress)
	// tail follows the journal once read, while the session is shown (a
	// tailMsg's command has it meanwhile); nil when it is not followed
	tail *rig.Follower
	used int // LRU clock of the last time it was shown (model.evict)
}

func newSessView(id string) *sessView {
	return &sessView{id: id, short: rig.ShortID(id), transcript: transcript{ring: newRing(ringCapacity), follow: true}}
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

func (v *sessView) setInfo(info rig.SessionInfo) {
	v.listing.info = info
	v.listing.listed = true
	if info.Title != v.listing.rawTitle || v.listing.title == "" {
		v.listing.rawTitle = info.Title
		v.listing.title = clean(info.Title)
	}
	v.listing.holder = ""
	if h := info.Holder; h != nil {
		v.listing.holder = clean(holderText(*h))
	}
}

func holderText(h storage.Holder) string {
	return "pid " + strconv.Itoa(h.PID) + "@" + h.Host
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

// resetJournal forgets the folded journal, so it can be replayed afresh.
func (v *sessView) resetJournal() {
	v.transcript.fold, v.transcript.tr = rig.State{}, rig.Transcript{}
	v.transcript.ring.reset()
	v.transcript.out, v.transcript.outTurn, v.transcript.pend, v.transcript.pendDirty, v.transcript.pendSeen = nil, "", nil, false, 0
	v.transcript.lastSeq = 0
	v.transcript.outLines = 0
	v.journal.state, v.journal.tail = journalUnread, nil
	v.journal.gen++
	v.transcript.scroll = 0
	v.transcript.follow = true
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

// driftRejected returns the changes of the last restore when the host
// rejected it for configuration drift (explain.Explain: the host's
// classification, carried by its *host.RemoteError), else ok false.
func (v *sessView) driftRejected() (changes []event.Change, ok bool) {
	if v.failed == nil || v.failed.op != opRestore {
		return nil, false
	}
	x := explain.Explain(v.failed.err)
	if x.Type != explain.TypeRestoreRejectedError {
		return nil, false
	}
	f, _ := x.Field("changes")
	changes, _ = f.([]event.Change)
	return changes, true
}
