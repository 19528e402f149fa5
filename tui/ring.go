package tui

import "time"

// evLine is one line of the events pane: plain, sanitized text, or a line
// of turn output rendered by termrender (output.go), whose only escape
// sequences are its own SGR.
type evLine struct {
	at   time.Time // zero for output lines (no time column)
	cls  lineClass
	text string
}

// ring is a bounded buffer of event lines: the oldest are dropped first.
// It grows on demand up to its capacity, so the thousands of sessions
// whose events are never shown cost nothing.
type ring struct {
	buf  []evLine
	cap  int
	head int // index of the oldest line, once full
	// total counts the lines ever pushed (since reset): line i is the
	// (total-len+i)-th.
	total int
}

func newRing(capacity int) *ring { return &ring{cap: capacity} }

func (r *ring) push(l evLine) {
	r.total++
	if len(r.buf) < r.cap {
		r.buf = append(r.buf, l)
		return
	}
	r.buf[r.head] = l
	r.head = (r.head + 1) % r.cap
}

// at returns the i-th line, oldest first.
func (r *ring) at(i int) evLine {
	if len(r.buf) < r.cap {
		return r.buf[i]
	}
	return r.buf[(r.head+i)%r.cap]
}

func (r *ring) len() int { return len(r.buf) }

func (r *ring) reset() {
	r.buf = nil
	r.head, r.total = 0, 0
}
