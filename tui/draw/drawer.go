package draw

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// stopWait bounds how long Close waits for a write to the terminal that
// does not return (output stopped with ^S, a stalled connection).
const stopWait = time.Second

// ErrClosed is returned by Write once the Drawer is closed.
var ErrClosed = errors.New("draw: closed")

// Drawer writes frames to a terminal on the alternate screen. Submit and
// Write hand it work and never block on the terminal; its goroutine
// (started by Start, stopped by Close) does the writing.
type Drawer struct {
	out      io.Writer
	interval time.Duration // 1/fps: how long a frame of the bucket takes to come back

	mu      sync.Mutex
	next    string // the latest frame submitted
	dirty   bool   // next is not drawn yet
	extra   []byte // out-of-band bytes to write before the next frame
	width   int    // 0: not known, lines are not truncated
	height  int    // 0: not known, every line is kept
	repaint bool   // the screen's content is not known: draw every line
	closed  bool

	wake chan struct{} // cap 1: work is pending
	stop chan struct{}
	done chan struct{}

	// shown is the frame on the screen, one entry per row as submitted
	// (before rows are cut to the width); touched by the drawing
	// goroutine only.
	shown []string
}

// NewDrawer returns a Drawer writing to out at most fps frames a second
// over time (fps below 1 counts as 1). Start starts it.
func NewDrawer(out io.Writer, fps int) *Drawer {
	fps = max(fps, 1)
	return &Drawer{
		out:      out,
		interval: time.Second / time.Duration(fps),
		repaint:  true,
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
}

// Start starts the drawing goroutine; Close stops it.
func (d *Drawer) Start() { go d.loop() }

// Submit makes view the frame to draw: at once unless the frames drawn
// lately used up the rate (see loop), else as soon as they allow. A view
// equal to the one on the screen writes nothing.
func (d *Drawer) Submit(view string) {
	d.mu.Lock()
	if d.closed || (!d.dirty && view == d.next && !d.repaint) {
		d.mu.Unlock()
		return
	}
	d.next, d.dirty = view, true
	d.mu.Unlock()
	d.poke()
}

// Resize tells the Drawer the terminal is now width×height: the next frame
// submitted is drawn in full.
func (d *Drawer) Resize(width, height int) {
	d.mu.Lock()
	d.width, d.height, d.repaint = width, height, true
	d.mu.Unlock()
}

// Write queues p to be written whole before the next frame. It returns
// ErrClosed once the Drawer is closed.
func (d *Drawer) Write(p []byte) (int, error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return 0, ErrClosed
	}
	d.extra = append(d.extra, p...)
	d.mu.Unlock()
	d.poke()
	return len(p), nil
}

// Close stops the drawing goroutine, waiting at most stopWait for a write
// in progress. Frames and bytes not written yet are dropped.
func (d *Drawer) Close() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	d.mu.Unlock()
	close(d.stop)
	t := time.NewTimer(stopWait)
	defer t.Stop()
	select {
	case <-d.done:
	case <-t.C:
	}
}

func (d *Drawer) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// burst is how many frames may be drawn back to back after a quiet
// spell. A keystroke can make several frames within milliseconds (its
// echo, "searching…", the first results, the rest), and it may come right
// after a frame of the program's own (a clock, a line of output): none of
// them is held for the interval. Sustained, the rate is still FPS.
const burst = 8

// loop draws what is pending each time it is woken, at most FPS frames a
// second over time and burst at once: a token bucket of burst frames,
// refilled at FPS a second.
func (d *Drawer) loop() {
	defer close(d.done)
	tokens, filled := float64(burst), time.Now()
	refill := func() {
		now := time.Now()
		tokens = min(burst, tokens+float64(now.Sub(filled))/float64(d.interval))
		filled = now
	}
	for {
		select {
		case <-d.stop:
			return
		case <-d.wake:
		}
		if refill(); tokens < 1 {
			t := time.NewTimer(time.Duration((1 - tokens) * float64(d.interval)))
			select {
			case <-d.stop:
				t.Stop()
				return
			case <-t.C:
			}
			refill()
		}
		if d.flush() {
			tokens--
		}
	}
}

// flush writes the pending bytes and frame; it reports whether a frame was
// drawn.
func (d *Drawer) flush() bool {
	d.mu.Lock()
	extra, view, drawFrame := d.extra, d.next, d.dirty
	width, height, repaint := d.width, d.height, d.repaint
	d.extra, d.dirty, d.repaint = nil, false, false
	d.mu.Unlock()

	var buf bytes.Buffer
	buf.Write(extra)
	if drawFrame {
		if repaint {
			d.shown = nil
		}
		d.shown = appendFrame(&buf, d.shown, view, width, height)
	}
	if buf.Len() > 0 {
		_, _ = d.out.Write(buf.Bytes()) // a terminal gone is the input's to report
	}
	return drawFrame
}

// appendFrame appends to buf what turns the screen showing shown (the
// rows of the view drawn last, as submitted; nil: not known) into view,
// and returns view's rows. Each row that changed is addressed and
// rewritten, cut to width, its rest erased; the rows below view's last
// are erased if anything was shown there or nothing is known. A view
// taller than height keeps its last height lines. A new width always
// comes with a repaint (Resize), so a row equal to the one shown was cut
// the same: only the changed rows are cut.
func appendFrame(buf *bytes.Buffer, shown []string, view string, width, height int) []string {
	rows := strings.Split(view, "\n")
	if height > 0 && len(rows) > height {
		rows = rows[len(rows)-height:]
	}
	for i, row := range rows {
		if shown != nil && i < len(shown) && shown[i] == row {
			continue
		}
		if width > 0 {
			row = ansi.Truncate(row, width, "")
		}
		moveTo(buf, i)
		buf.WriteString(row)
		if width <= 0 || ansi.StringWidth(row) < width {
			buf.WriteString(ansi.EraseLineRight)
		}
	}
	if (shown == nil || len(shown) > len(rows)) && (height <= 0 || len(rows) < height) {
		moveTo(buf, len(rows))
		buf.WriteString(ansi.EraseScreenBelow)
	}
	return rows
}

// moveTo appends the sequence that puts the cursor at the start of row
// (0-based).
func moveTo(buf *bytes.Buffer, row int) {
	buf.WriteString("\x1b[")
	buf.WriteString(strconv.Itoa(row + 1))
	buf.WriteString(";1H")
}
