package tui

import (
	"looprig/internal/termrender"
	"looprig/rig"
	"looprig/rig/event"
)

// transcript is a session's events as this TUI folded them (fold.go):
// the session's state and its turns' output, the events pane's lines with
// the output still being rendered (output.go), the full-screen program's
// screen (screen.go), and how far the events pane is scrolled back.
type transcript struct {
	fold rig.State      // the session's state, as every presenter folds it
	tr   rig.Transcript // its turns' output, each byte once
	ring *ring          // the events pane's lines
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
	// hit is the line a search hit opened, highlighted: its number among
	// the lines ever pushed into the ring, plus one (0: none; search_nav.go)
	hit int
}

func newTranscript() transcript {
	return transcript{ring: newRing(ringCapacity), follow: true}
}

// reset forgets what was folded, so the journal can be replayed afresh;
// the screen, the output profile and size stay.
func (t *transcript) reset() {
	t.fold, t.tr = rig.State{}, rig.Transcript{}
	t.ring.reset()
	t.out, t.outTurn, t.pend, t.pendDirty, t.pendSeen = nil, "", nil, false, 0
	t.lastSeq = 0
	t.outLines = 0
	t.scroll = 0
	t.follow = true
	t.hit = 0
}

// applyAll folds a batch of envelopes (a journal chunk, a follower's
// reading): each in turn (apply), then the screen is fed once and a
// scrolled-back view kept still.
func (t *transcript) applyAll(envs []event.Envelope) {
	for _, env := range envs {
		t.apply(env)
	}
	t.flushScreen()
	t.settleScroll()
}

// settleScroll keeps a scrolled-back events view still while lines arrive.
// The lines shown are the ring's and the pending output lines (output.go):
// lines pushed into the ring are counted as they come, the pending ones by
// how many more (or fewer) there are than at the last settling.
func (t *transcript) settleScroll() {
	n := len(t.pending())
	t.added += n - t.pendSeen
	t.pendSeen = n
	if !t.follow {
		t.scroll += t.added
	}
	t.added = 0
}
