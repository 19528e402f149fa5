package tui

import (
	"errors"
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

	info     rig.SessionInfo // latest listing row
	listed   bool
	rawTitle string
	title    string // sanitized
	holder   string // sanitized "pid N@host"

	// hosted here
	live    *rig.Session
	sub     *hub.Subscription
	subGen  int
	dropped uint64 // ephemeral events the hub dropped for our subscription
	status  rig.Status
	outcome *rig.RestoreInfo

	// busy is an operation in flight ("restoring", "creating", …); busySince
	// drives the spinner's elapsed time.
	busy      string
	busySince time.Time

	// the journal view
	f         fold
	ring      *ring
	pend      string
	pendCls   uint8
	lastSeq   uint64
	outLines  uint64
	added     int // lines added since the last frame (keeps a scrolled view still)
	loaded    bool
	loading   bool
	histGen   int
	histTip   uint64 // tip the running replay is heading for (progress)
	histFrom  uint64
	replaying bool // a restore's history replay is running; the live stream waits
	follow    bool
	scroll    int // lines above the bottom, when not following
	used      int // LRU clock of the last time it was shown

	// errors and banners
	restoreErr error
	failedOp   string // what restoreErr failed: "restore", "break", "delete"
	lost       *leaseLost
	lostSeen   bool // banner dismissed
	readOnly   string
}

type leaseLost struct {
	oldEpoch, newEpoch uint64
	holder             string // sanitized
	cause              string // sanitized
	fault              bool   // a persistence fault rather than a lost lease
}

func newSessView(id string) *sessView {
	return &sessView{id: id, short: rig.ShortID(id), ring: newRing(ringCapacity), follow: true}
}

// state is the state shown for the session: live while this TUI hosts it,
// held once its lease was lost, else what the listing says ("live" there
// means held by this process).
func (v *sessView) state() rig.SessionState {
	switch {
	case v.lost != nil:
		return rig.StateHeld
	case v.live != nil:
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
	return "pid " + itoa(h.PID) + "@" + h.Host
}

// epoch is the latest lease epoch known.
func (v *sessView) epoch() uint64 {
	e := v.info.Epoch
	if v.live != nil {
		e = max(e, v.status.Epoch)
	}
	if v.lost != nil {
		e = max(e, v.lost.newEpoch)
	}
	return e
}

// resetJournal forgets the folded journal, so it can be replayed afresh.
func (v *sessView) resetJournal() {
	v.f = fold{}
	v.ring.reset()
	v.pend = ""
	v.lastSeq = 0
	v.outLines = 0
	v.loaded = false
	v.loading = false
	v.histGen++
	v.scroll = 0
	v.follow = true
}

// mutable says why the session cannot take commands, "" when it can.
func (v *sessView) notMutable() string {
	switch {
	case v.lost != nil && v.lost.fault:
		return "read-only: the session faulted (" + v.lost.cause + ")"
	case v.lost != nil:
		return "read-only: lease lost to epoch " + u64(v.lost.newEpoch) + " (" + v.lost.holder + ")"
	case v.busy != "":
		return "busy: " + v.busy
	case v.live == nil:
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
	case v.replaying:
		return "busy: replaying the journal"
	}
	return ""
}

// restoreRejected returns the drift rejection of the last restore.
func (v *sessView) restoreRejected() *rig.RestoreRejectedError {
	var rj *rig.RestoreRejectedError
	if errors.As(v.restoreErr, &rj) {
		return rj
	}
	return nil
}
