package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"looprig/host"
	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/event"
)

// attach in a terminal is the session's terminal, as run is its turn's:
// the output's line is drawn before it is complete (liveline.go), the
// lines typed go to the running turn, with our echo following the turn's
// and our window size its own (run_input.go); between turns a prompt,
// "looprig ID › ", takes a line that starts a new turn. Two keys end a
// line at once (our terminal's VEOL and VEOL2, so its line editing stays
// the terminal's own): Ctrl-] detaches, and Ctrl-C interrupts the running
// turn (the terminal sends no SIGINT for it) or, at the prompt, detaches.
// ^D at the start of an empty prompt detaches too. The session keeps
// running whichever way attach ends.

const (
	keyDetach    = 0x1d // Ctrl-]
	keyInterrupt = 0x03 // Ctrl-C
)

// attachKeys makes Ctrl-] and Ctrl-C end a line, and Ctrl-C send no
// SIGINT; it returns the keys.
func attachKeys(t *unix.Termios) string {
	t.Cc[unix.VEOL] = keyDetach
	t.Cc[unix.VEOL2] = keyInterrupt
	t.Cc[unix.VINTR] = vdisable
	return string([]byte{keyDetach, keyInterrupt})
}

// attachTerm is attach's terminal: what the event loop and the input
// forwarder share.
type attachTerm struct {
	c     *call
	h     *hostTurn
	short string
	live  *liveLine
	in    *termInput
	// detach ends the attachment (attach's loop waits on its context).
	detach context.CancelFunc
	// tip: the prompt shows once the replay reached it.
	tip uint64

	mu       sync.Mutex
	seen     uint64 // the last record printed
	running  string // the running turn's id, "" between turns
	index    int
	prompted bool   // the prompt holds the cursor's line
	asked    string // the gate whose question was asked here
	live0    bool   // the replay is over: a program's screen shows (screen_term.go)
}

// newAttachTerm returns attach's terminal when stdin and stdout are one
// (and not --json); nil otherwise, and attach only follows. The printer
// draws the output's live line and writes beside it.
func newAttachTerm(c *call, h *hostTurn, p *eventPrinter, st host.Status, detach context.CancelFunc) *attachTerm {
	in, ok := c.stdin.(*os.File)
	out, ook := c.stdout.(*os.File)
	if c.json || !ok || !ook || !isTerminal(in) || !isTerminal(out) {
		return nil
	}
	a := &attachTerm{c: c, h: h, short: rig.ShortID(h.id), live: newLiveLine(out), detach: detach, tip: st.Tip}
	// A full-screen program's screen shows once the replay is over: one
	// the replay only passes through is not flashed.
	a.live.scr = newScreenTerm(out, outputProfile(out), false)
	if st.Turn != nil {
		a.running, a.index = st.Turn.ID, st.Turn.Index
	}
	p.live(a.live)
	return a
}

// start starts forwarding what is typed; stop ends it and gives our
// terminal its settings back.
func (a *attachTerm) start(ctx context.Context) (stop func()) {
	var stopIn func()
	a.in, stopIn = startTermInput(ctx, a.c.env, a.h, a, a.live, a.stderr(), attachKeys)
	if a.in != nil {
		a.in.persist = true // a turn without a terminal leaves the prompt and the keys
	}
	return func() {
		a.live.scr.close()
		stopIn()
	}
}

// stderr is where attach's messages go: beside the live line.
func (a *attachTerm) stderr() io.Writer { return asideWriter{a.live, a.c.stderr} }

// before takes an event before it is printed: a turn that starts ends
// the prompt's line.
func (a *attachTerm) before(env event.Envelope) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if env.Seq > a.seen {
		a.seen = env.Seq
	}
	switch ev := env.Event.(type) {
	case event.TurnStarted:
		a.running, a.index = ev.TurnID, ev.Index
		if a.prompted {
			a.prompted = false
			a.live.resume(false)
		}
	case event.GateResolved:
		if ev.GateID == a.asked { // answered here or elsewhere: its question is done
			a.asked = ""
			if a.in != nil {
				a.in.dropGate(ev.GateID)
			}
			a.live.resume(false)
		}
	}
}

// after takes an event once printed: the running turn's end, a gate to
// ask about.
func (a *attachTerm) after(env event.Envelope) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch ev := env.Event.(type) {
	case event.TurnDone, event.TurnFailed, event.TurnInterrupted:
		if turnOf(ev) == a.running {
			a.running = ""
		}
	case event.GateOpened:
		if a.in != nil && ev.TurnID == a.running && a.seen >= a.tip {
			a.asked = ev.GateID
			a.in.answerGate(rig.OpenGate{ID: ev.GateID, TurnID: ev.TurnID, Prompt: ev.Prompt})
			fmt.Fprint(a.stderr(), "approve? [y/N] ")
		}
	}
}

// settled is called after each batch: between turns, once the replay is
// over, the prompt shows.
func (a *attachTerm) settled() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.live0 && a.seen >= a.tip {
		a.live0 = true
		if a.live.scr.start() {
			go a.redraw()
		}
	}
	if a.in != nil && a.running == "" && !a.prompted && a.seen >= a.tip {
		a.prompt()
	}
}

// redraw makes the full-screen program of the running turn, whose screen
// attach came in the middle of (the replay has only its last output),
// draw its whole screen again: its terminal shrinks by a row and grows
// back, so the program gets SIGWINCH twice and redraws for the size it
// ends with (the TUI's redraw, tui/screenfocus.go).
func (a *attachTerm) redraw() {
	cols, rows := a.live.scr.size()
	if rows < 2 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if a.h.Resize(ctx, cols, rows-1) == nil {
		a.h.Resize(ctx, cols, rows)
	}
}

// keys takes Ctrl-] from what is typed to a full-screen program: the
// bytes before it go to the program, then attach detaches.
func (a *attachTerm) keys(text string) (send, then string) {
	if i := strings.IndexByte(text, keyDetach); i >= 0 {
		return text[:i], string([]byte{keyDetach})
	}
	return text, ""
}

// prompt shows the prompt (a.mu held).
func (a *attachTerm) prompt() {
	a.prompted = true
	fmt.Fprintf(a.stderr(), "looprig %s › ", a.short)
}

// take is the input forwarder's: the keys, and the prompt's line.
func (a *attachTerm) take(ctx context.Context, line string, err error) bool {
	a.mu.Lock()
	running, index := a.running, a.index
	a.mu.Unlock()
	key := byte(0)
	if line != "" && strings.IndexByte(string([]byte{keyDetach, keyInterrupt}), line[len(line)-1]) >= 0 {
		key = line[len(line)-1]
	}
	switch {
	case key == keyDetach, key == keyInterrupt && running == "", running == "" && errors.Is(err, io.EOF) && line == "":
		a.live.scr.close() // a program's screen first: our terminal back as it was
		a.mu.Lock()
		if a.prompted {
			a.prompted = false
			a.live.resume(true)
		}
		a.mu.Unlock()
		fmt.Fprintln(a.c.stderr) // after the key's echo, or the prompt
		a.detach()
		return true
	case key == keyInterrupt:
		fmt.Fprintf(a.stderr(), "\nlooprig: interrupting turn %d (Ctrl-] detaches; the session keeps running)\n", index)
		ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if ierr := a.h.Interrupt(ictx); ierr != nil && ctx.Err() == nil {
			fmt.Fprintf(a.stderr(), "looprig: interrupt: %s\n", textsafe.Line(ierr.Error()))
		}
		return true
	case running != "":
		return false // the running turn's
	}
	a.mu.Lock()
	if a.prompted {
		a.prompted = false
		a.live.resume(true) // our terminal went to the next line
	}
	a.mu.Unlock()
	if strings.TrimSpace(line) == "" || err != nil {
		a.reprompt()
		return true
	}
	a.submit(ctx, line)
	return true
}

// submit starts a turn with the line typed at the prompt.
func (a *attachTerm) submit(ctx context.Context, line string) {
	if _, err := a.h.Submit(ctx, line); err != nil && ctx.Err() == nil {
		if f := a.h.fault(); f != nil {
			err = f
		}
		fmt.Fprintf(a.stderr(), "looprig: turn not started: %s\n", textsafe.Line(err.Error()))
		a.reprompt()
	}
}

// reprompt shows the prompt again when still between turns.
func (a *attachTerm) reprompt() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running == "" && !a.prompted {
		a.prompt()
	}
}

// ready: a line for the running turn goes at once.
func (a *attachTerm) ready(context.Context, bool) {}

// end ends the prompt's line before attach's last words.
func (a *attachTerm) end() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.prompted {
		a.prompted = false
		a.live.resume(false)
	}
}
