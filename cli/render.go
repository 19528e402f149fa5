package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/muesli/termenv"

	"looprig/internal/termrender"
	"looprig/themes"
)

// Turn output for people. A turn's output is what a program wrote to its
// terminal: colours, "\r" progress bars, cursor movements, and at times
// sequences that must never reach ours (OSC 52, screen clears). run,
// attach, restore --hold and the crash tails of restore draw it through
// internal/termrender, which keeps printable text, newlines and the SGR
// sequences it emits itself, for the colour profile of the terminal we
// print on (outputProfile). log shows it, one-shot, in its records'
// summaries (eventSummary). Text that is not turn output (titles, errors,
// headers) goes through textsafe as before. With --json the exact bytes
// travel JSON-escaped, untouched.

// streamWindow is the window of a streaming renderer: the one line under
// the cursor. A line is printed once, when it becomes final (at its "\n",
// or at the turn's end), so a "\r" progress bar prints its last state
// only; run on a terminal also draws the line under the cursor before it
// is final, in place (liveline.go). A cursor-up cannot reach a line already printed: multi-line
// progress (cursor up, erase line, rewrite) prints each successive state
// below the previous one, as a log of its states.
const streamWindow = 1

// outputProfile is the colour profile of turn output printed on w:
// NoColor when NO_COLOR is set (themes.NoColor, as the TUI decides), when
// w is not a terminal, or for TERM=dumb; else the terminal's, as termenv
// detects it from TERM and COLORTERM (the TUI's detection, through
// lipgloss).
func outputProfile(w io.Writer) termrender.Profile {
	f, ok := w.(*os.File)
	if themes.NoColor() || !ok || !isTerminal(f) || os.Getenv("TERM") == "dumb" {
		return termrender.NoColor
	}
	// Our own check said terminal: termenv's (which also says no under CI)
	// is not asked again.
	return termrender.ProfileOf(termenv.NewOutput(f, termenv.WithTTY(true)).ColorProfile())
}

// outputPrinter prints the output of one turn (one stream of it) on w as
// it arrives, line by line, each line once it is final.
type outputPrinter struct {
	w   io.Writer
	r   *termrender.Renderer // nil: exact (the bytes as they are)
	buf []byte

	// leaveOpen: flush leaves a last line the output did not end
	// unterminated, and sets open (run: its stdout is the turn's, and
	// looprig ends that line on stderr, before its closing line).
	leaveOpen, open bool

	// live, on a terminal, shows the line the output is on before it is
	// final (liveline.go); nil: each line is printed once final.
	live *liveLine
}

func newOutputPrinter(w io.Writer, p termrender.Profile) *outputPrinter {
	return &outputPrinter{w: w, r: termrender.New(termrender.Options{Profile: p, Window: streamWindow})}
}

// newExactPrinter prints output as it is, byte for byte: for a turn on
// pipes (no terminal drew it) printed where no terminal will either.
func newExactPrinter(w io.Writer) *outputPrinter { return &outputPrinter{w: w} }

// write feeds text to the renderer and prints the lines it made final
// (exact: writes text).
func (p *outputPrinter) write(text string) error {
	if p.r == nil {
		if _, err := io.WriteString(p.w, text); err != nil {
			return fmt.Errorf("print turn output: %w", err)
		}
		return nil
	}
	if p.live != nil && p.live.scr != nil {
		return p.writeScreen(p.live.scr, text)
	}
	p.r.WriteString(text)
	if p.live != nil {
		return p.live.update(p.r.Final(), p.cursorLine())
	}
	return p.print(p.r.Final(), false)
}

// writeScreen is write on a terminal that shows a full-screen program's
// screen while the output has the alternate screen (screen_term.go): the
// renderer, whose virtual terminal the screen is drawn from, is written
// under the screen's lock; the screen is left before the lines that
// follow it are printed, and entered after the notice that precedes it.
func (p *outputPrinter) writeScreen(s *screenTerm, text string) error {
	var finals []string
	var pending string
	var alt bool
	s.with(func() {
		p.r.WriteString(text)
		finals, pending, alt = p.r.Final(), p.cursorLine(), p.r.FullScreen()
		if !alt {
			s.done(p.r)
		}
	})
	err := p.live.update(finals, pending)
	if alt {
		s.want(p.r)
	}
	return err
}

// cursorLine is the line the output is on, rendered; "" when empty. (With
// a window of one line, Pending holds that line alone.)
func (p *outputPrinter) cursorLine() string {
	if pend := p.r.Pending(); len(pend) > 0 {
		return pend[len(pend)-1]
	}
	return ""
}

// flush ends the turn's output: it prints every line not printed yet,
// the last one included, and leaves the renderer empty.
func (p *outputPrinter) flush() error {
	if p.r == nil {
		return nil
	}
	// With a window of one line, Pending is the cursor's line, empty (and
	// left out) when the output ended with "\n".
	open := p.leaveOpen && len(p.r.Pending()) > 0
	if p.live != nil {
		var lines []string
		p.live.scr.with(func() {
			p.live.scr.done(p.r) // the turn ended on the program's screen: back to the lines
			lines = p.r.Flush()
		})
		left, err := p.live.end(lines, open)
		p.open = p.open || left
		return err
	}
	if err := p.print(p.r.Flush(), open); err != nil {
		return err
	}
	p.open = p.open || open
	return nil
}

// print writes lines in one write, each ended by "\n" but the last one
// when open.
func (p *outputPrinter) print(lines []string, open bool) error {
	if len(lines) == 0 {
		return nil
	}
	p.buf = p.buf[:0]
	for _, l := range lines {
		p.buf = append(p.buf, l...)
		p.buf = append(p.buf, '\n')
	}
	if open {
		p.buf = p.buf[:len(p.buf)-1]
	}
	if _, err := p.w.Write(p.buf); err != nil {
		return fmt.Errorf("print turn output: %w", err)
	}
	return nil
}

// turnOutputs prints the output of the turns of a session on w, each turn
// through its own renderer (attach, restore --hold: a session's events
// may carry more than one turn).
type turnOutputs struct {
	w io.Writer
	p map[string]*outputPrinter // by turn id
	// live, on a terminal, shows the line the output is on before it is
	// final (attach); a last line the output did not end is ended at the
	// turn's end.
	live *liveLine
}

// write prints output of turn id. A write error is not reported: a closed
// stdout ends the process with SIGPIPE (fd 1), as the writes of attach
// and restore --hold always did.
func (o *turnOutputs) write(id, text string) {
	if text == "" {
		return
	}
	p := o.p[id]
	if p == nil {
		if o.p == nil {
			o.p = map[string]*outputPrinter{}
		}
		p = newOutputPrinter(o.w, outputProfile(o.w))
		if o.live != nil {
			p.live, p.leaveOpen = o.live, true
			o.live.scr.fit(p.r)
		}
		o.p[id] = p
	}
	p.write(text)
}

// end prints the lines of turn id still open, and forgets the turn.
func (o *turnOutputs) end(id string) {
	if p := o.p[id]; p != nil {
		p.flush()
		if p.open {
			io.WriteString(o.w, "\n")
		}
		delete(o.p, id)
	}
}

// flush prints the lines of every turn still open, before the command
// exits.
func (o *turnOutputs) flush() {
	for id := range o.p {
		o.end(id)
	}
}
