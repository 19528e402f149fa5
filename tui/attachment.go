package tui

import (
	"looprig/host"
	"looprig/rig"
)

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
	// the turn's terminal size (turnsize.go): a Resize in flight, the
	// size it sent and the size wanted now
	resizing           bool
	sentSize, wantSize [2]int
	redraw             bool // a redraw (screenfocus.go) waits for the resize in flight
	// attnSent is the sequence of the last call for the user this TUI
	// told the host it saw (attention.go: seeAttention).
	attnSent uint64
}

// end forgets the host: the client, its follower and the sends and
// resizes in flight (a detach); the generation moves on, so what the
// readers of this attachment still send is dropped. What starting the
// host said stays.
func (a *attachment) end() {
	a.c, a.follower, a.stopping = nil, nil, false
	a.sending, a.queue, a.resizing, a.redraw = false, nil, false, false
	a.attnSent = 0
	a.gen++
}

// enqueue queues s after the send in flight, if any; it reports whether s
// is to be sent now (nothing was in flight: s is in flight now). Keys
// typed for a full-screen program while a send is in flight go together
// in one send.
func (a *attachment) enqueue(s turnSend) (now bool) {
	if !a.sending {
		a.sending = true
		return true
	}
	if n := len(a.queue); n > 0 && s.quiet {
		if last := &a.queue[n-1]; last.quiet && last.turnID == s.turnID && !last.eof {
			last.text += s.text
			return false
		}
	}
	a.queue = append(a.queue, s)
	return false
}

// next takes the next queued send for turn running (the id of the turn
// running, "" for none), which is in flight from now on; sends for a turn
// that ended are dropped, never sent to the next one.
func (a *attachment) next(running string) (turnSend, bool) {
	for len(a.queue) > 0 {
		s := a.queue[0]
		a.queue = a.queue[1:]
		if running == "" || s.turnID != running {
			continue
		}
		a.sending = true
		return s, true
	}
	return turnSend{}, false
}

// dropQueue drops the sends queued (a send failed) and says how many.
func (a *attachment) dropQueue() int {
	n := len(a.queue)
	a.queue = nil
	return n
}

// resizeTo asks for the turn's terminal to be size; it reports whether a
// Resize of it is to be sent now: none is in flight (the one in flight
// sends the latest size when it returns) and the size changed.
func (a *attachment) resizeTo(size [2]int) bool {
	a.wantSize = size
	if a.resizing || a.sentSize == a.wantSize {
		return false
	}
	a.resizing, a.sentSize = true, a.wantSize
	return true
}

// redrawTo asks for a redraw of the full-screen program at size
// (model.redraw); it reports whether it is to be sent now, else it
// follows the Resize in flight.
func (a *attachment) redrawTo(size [2]int) bool {
	if a.resizing {
		a.redraw = true
		return false
	}
	a.redraw = false
	a.resizing = true
	a.wantSize = size
	a.sentSize = size
	return true
}
