package cli

import (
	"looprig/host"

	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// progressAfter is how long an operation runs before its progress is
// drawn, and progressEvery how often it is redrawn at most.
const (
	progressAfter = time.Second
	progressEvery = 100 * time.Millisecond
)

// progressBar draws "WHAT: 42% (12.3 MiB of 29.0 MiB)" on one line of a
// terminal, once the operation has run for progressAfter; finish clears
// the line. It is safe for use from the operation's goroutine.
type progressBar struct {
	w     io.Writer
	what  string
	start time.Time

	mu    sync.Mutex
	last  time.Time
	drawn bool
}

// newProgressBar returns a bar on w when w is a terminal, else nil (whose
// update and finish do nothing).
func newProgressBar(w io.Writer, what string) *progressBar {
	f, ok := w.(*os.File)
	if !ok || !isTerminal(f) {
		return nil
	}
	return &progressBar{w: w, what: what, start: time.Now()}
}

// update draws done of total bytes.
func (p *progressBar) update(done, total int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if now.Sub(p.start) < progressAfter || now.Sub(p.last) < progressEvery {
		return
	}
	p.last, p.drawn = now, true
	pct := int64(100)
	if total > 0 {
		pct = done * 100 / total
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s: %d%% (%s of %s)", p.what, pct, byteSize(done), byteSize(total))
}

// finish clears the bar's line, if it drew one.
func (p *progressBar) finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
}

// materializeWhat is what the bar of a workspace brought back from its
// checkpoint says, in this process's restore and in a host's alike.
const materializeWhat = "bringing the workspace back from its checkpoint"

// progressSink is told how far an operation is, and when it is over.
type progressSink interface {
	update(done, total int64)
	finish()
}

// materializeProgress is where a restore in this process tells how far it
// is in bringing the workspace back: a host started by a client reports
// it on its ready descriptor (the client draws it), a command draws the
// bar on its terminal.
func (c *call) materializeProgress() progressSink {
	if c.rep != nil {
		return reportedProgress{c.rep}
	}
	return newProgressBar(c.stderr, materializeWhat) // nil on a pipe: draws nothing
}

// reportedProgress reports a host's restore to its client.
type reportedProgress struct{ rep *host.Reporter }

func (r reportedProgress) update(done, total int64) { r.rep.Materializing(done, total) }
func (reportedProgress) finish()                    {}

// hostProgress is the host.StartSpec.Progress of a host started for a
// command: what it reports of its restore, drawn on the command's
// terminal as this process's restore draws it (bar, which may be nil).
func hostProgress(bar *progressBar) func(host.Progress) {
	return func(p host.Progress) {
		if m := p.Materialize; m != nil {
			bar.update(m.Done, m.Total)
		}
	}
}

// waitLine says, on stderr, that a command waits for a checkpoint of the
// session's workspace and how far it is ("looprig: waiting for the
// checkpoint of the last turn: 7,421 of 10,000 files…"): on a terminal one
// line redrawn in place (at most every progressEvery) and cleared when
// the wait is over; elsewhere once, when the wait begins.
type waitLine struct {
	w   io.Writer
	tty bool

	mu    sync.Mutex
	last  time.Time
	text  string // the line drawn
	drawn bool   // a line is on the terminal, or was printed once
}

func newWaitLine(w io.Writer) *waitLine {
	f, ok := w.(*os.File)
	return &waitLine{w: w, tty: ok && isTerminal(f)}
}

// update says how far the checkpoint is (a report of the host).
func (l *waitLine) update(p host.Progress) {
	cp := p.Checkpoint
	if l == nil || cp == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drawn && !l.tty {
		return
	}
	now := time.Now()
	text := "looprig: waiting for the checkpoint of " + cp.For()
	if d := cp.Done(); d != "" {
		text += ": " + d
	}
	text += "…"
	if l.drawn && (text == l.text || now.Sub(l.last) < progressEvery) {
		return
	}
	l.last, l.text = now, text
	if l.tty {
		fmt.Fprint(l.w, "\r\x1b[K"+text)
	} else {
		fmt.Fprintln(l.w, text)
	}
	l.drawn = true
}

// finish clears the line on a terminal.
func (l *waitLine) finish() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drawn && l.tty {
		fmt.Fprint(l.w, "\r\x1b[K")
	}
	l.drawn, l.text = false, ""
}
