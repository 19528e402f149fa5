package cli

import (
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
