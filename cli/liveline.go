package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/sys/unix"

	"looprig/internal/termrender"
)

// The live line: run on a terminal shows the line the turn's output is on
// before the line is complete, so that a prompt without a newline
// ("name? ") is on screen while the turn waits for its answer. The line is
// drawn under the cursor as the renderer has it so far (rendered: only
// looprig's SGR), and redrawn in place as it changes: carriage return,
// erase, the line again (or only what was added, when the line grew).
// When it becomes final it is completed the same way and ended by "\n",
// so every line is on the screen once.
//
// Three things share the cursor's line with it:
//
//   - looprig's own lines (notes, a gate's question) on stderr: the live
//     line is erased before them and drawn again after them (aside); a
//     question waiting on its line (no "\n") holds it until answered
//     (resume);
//   - what the user types: our terminal echoes it after the live line and
//     moves to the next line on Enter, and the turn's terminal echoes it
//     back into the output, completing a line that is on the screen
//     already. A line typed is remembered (typedLine) with what was shown
//     before it; the output line that completes it the same way is not
//     drawn again, nor the line before it completes, as long as it is on
//     its way there;
//   - the end of the turn (end): the live line is completed, and left
//     open when the output did not end it.
//
// Output that is not on a terminal is printed line by line as before
// (outputPrinter): no live line.

// maxTyped bounds the lines typed whose echo is awaited.
const maxTyped = 32

// liveLine is the cursor's line of a turn's output on a terminal. Its
// methods may be called from several goroutines (the event loop, the
// input forwarder, a gate's prompt).
type liveLine struct {
	mu   sync.Mutex
	w    io.Writer  // the terminal the output is on
	cols func() int // its width in cells, 0 when not known

	pending string   // the line the output is on, rendered; "" for none
	shown   string   // what is drawn of it under the cursor
	held    bool     // a question of looprig's has the cursor's line
	typed   []string // lines typed, as our terminal shows them, whose echo is awaited
	buf     []byte
	// scr shows a full-screen program's screen on the same terminal
	// (screen_term.go); nil: none.
	scr *screenTerm
}

// newLiveLine returns the live line of output printed on the terminal f.
func newLiveLine(f *os.File) *liveLine {
	return &liveLine{w: f, cols: func() int {
		ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
		if err != nil {
			return 0
		}
		return int(ws.Col)
	}}
}

// update takes what the renderer made of the output: the lines that
// became final, and the line it is on (pending, "" when empty).
func (l *liveLine) update(finals []string, pending string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = l.buf[:0]
	for _, f := range finals {
		l.final(f)
	}
	l.pending = pending
	l.draw()
	return l.flush()
}

// end ends the turn's output with its last lines (the renderer's Flush);
// when open, the last one was not ended by the output. It reports whether
// that line was left open on the screen (run ends it on stderr). The live
// line is empty afterwards.
func (l *liveLine) end(lines []string, open bool) (leftOpen bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = l.buf[:0]
	last := ""
	if open && len(lines) > 0 {
		last, lines = lines[len(lines)-1], lines[:len(lines)-1]
	}
	for _, f := range lines {
		l.final(f)
	}
	switch {
	case !open:
	case len(l.typed) > 0 && ansi.Strip(last) == l.typed[0]:
		// On the screen already, and our terminal went to the next line.
	default:
		l.put(last)
		leftOpen = true
	}
	l.pending, l.shown, l.typed = "", "", nil
	return leftOpen, l.flush()
}

// typedLine notes a line typed and sent to the turn while our terminal
// echoed it: the screen shows it after what the live line showed, and
// the cursor is on the next line.
func (l *liveLine) typedLine(text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.typed) == maxTyped {
		l.typed = nil // too many to follow: the output is drawn as it comes
	}
	l.typed = append(l.typed, typedAs(ansi.Strip(l.shown), text))
	l.shown = ""
}

// typedPartial notes text typed and sent without Enter (^D after it): the
// screen shows it after what the live line showed, on the same line.
func (l *liveLine) typedPartial(text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.typed) == 0 {
		l.shown = typedAs(l.shown, text)
	}
}

// forgetTyped: what was typed did not reach the turn, which will not echo
// it.
func (l *liveLine) forgetTyped() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.typed = nil
}

// typedAs is text typed after shown as a terminal shows it, in the plain
// form the renderer gives the line the turn's echo makes of it.
func typedAs(shown, text string) string {
	return strings.TrimSuffix(termrender.String(shown+text, termrender.NoColor), "\n")
}

// aside writes p, a message of looprig's, on w: the live line is erased
// first and drawn again below it; a message that does not end its line (a
// question) holds the line until resume.
func (l *liveLine) aside(w io.Writer, p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	question := len(p) > 0 && p[len(p)-1] != '\n'
	return l.scr.aside(question, func() (int, error) { return l.asideLocked(w, p, question) })
}

// asideLocked is aside, l.mu held (and the main screen ours).
func (l *liveLine) asideLocked(w io.Writer, p []byte, question bool) (int, error) {
	l.buf = l.buf[:0]
	if l.shown != "" {
		l.erase()
		if err := l.flush(); err != nil {
			return 0, err
		}
	}
	n, err := w.Write(p)
	if question {
		l.held = true
		return n, err
	}
	l.buf = l.buf[:0]
	l.draw()
	if ferr := l.flush(); err == nil {
		err = ferr
	}
	return n, err
}

// resume draws the live line again after a question (a gate's) was
// answered. typed: the answer was typed here, and our terminal went to
// the next line; otherwise the question's line is ended first.
func (l *liveLine) resume(typed bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held {
		return nil
	}
	l.held = false
	l.buf = l.buf[:0]
	if !typed {
		l.buf = append(l.buf, '\n')
	}
	l.draw()
	err := l.flush()
	l.scr.resume() // a full-screen program's screen shows again
	return err
}

// final prints f, a line the output ended, in place of what is drawn.
func (l *liveLine) final(f string) {
	if len(l.typed) > 0 {
		if ansi.Strip(f) == l.typed[0] {
			l.typed = l.typed[1:] // on the screen already: our terminal echoed it
			return
		}
		l.typed = nil
	}
	l.put(f)
	l.buf = append(l.buf, '\n')
	l.shown = ""
}

// draw makes the cursor's line show the pending line.
func (l *liveLine) draw() {
	if l.held {
		return
	}
	if len(l.typed) > 0 {
		if strings.HasPrefix(l.typed[0], ansi.Strip(l.pending)) {
			return // the echo of a line typed, on its way: on the screen already
		}
		l.typed = nil
	}
	switch {
	case l.pending == l.shown:
	case l.pending == "":
		l.erase()
	default:
		l.put(l.pending)
		l.shown = l.pending
	}
}

// put writes s over what is drawn on the cursor's line.
func (l *liveLine) put(s string) {
	switch {
	case l.shown == "":
	case strings.HasPrefix(s, l.shown):
		s = s[len(l.shown):]
	default:
		l.erase()
	}
	l.buf = append(l.buf, s...)
}

// erase erases what is drawn, wrapped over several rows if the terminal
// is narrower than it, and leaves the cursor at its start.
func (l *liveLine) erase() {
	rows := 1
	if cols := l.cols(); cols > 0 {
		rows = max(1, (ansi.StringWidth(l.shown)+cols-1)/cols)
	}
	if rows > 1 {
		l.buf = fmt.Appendf(l.buf, "\r\x1b[%dA\x1b[J", rows-1)
	} else {
		l.buf = append(l.buf, "\r\x1b[K"...)
	}
	l.shown = ""
}

// flush writes what was drawn.
func (l *liveLine) flush() error {
	if len(l.buf) == 0 {
		return nil
	}
	if _, err := l.w.Write(l.buf); err != nil {
		return fmt.Errorf("print turn output: %w", err)
	}
	return nil
}

// asideWriter writes looprig's messages beside a live line (nil: as they
// are).
type asideWriter struct {
	l *liveLine
	w io.Writer
}

func (a asideWriter) Write(p []byte) (int, error) {
	if a.l == nil {
		return a.w.Write(p)
	}
	return a.l.aside(a.w, p)
}
