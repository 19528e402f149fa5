package cli

import (
	"fmt"
	"io"
	"strings"

	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/event"
)

// eventPrinter prints the events of a followed session (attach, restore
// --hold): with --json each as a JSON line; for people, each turn's output
// as its rig.Transcript passes it on (every byte once, whichever of the
// live deltas and the checkpoints carried it), rendered line by line
// (render.go), and a line for each event a person follows a session by.
type eventPrinter struct {
	e      *env
	tr     rig.Transcript
	out    turnOutputs
	w, err io.Writer // its lines and notes (beside a live line)
}

func newEventPrinter(e *env) *eventPrinter {
	return &eventPrinter{e: e, out: turnOutputs{w: e.stdout}, w: e.stdout, err: e.stderr}
}

// live makes the printer draw the line the output is on before it is
// complete (attach on a terminal), and write its lines beside it.
func (p *eventPrinter) live(l *liveLine) {
	p.out.live = l
	p.w, p.err = asideWriter{l, p.e.stdout}, asideWriter{l, p.e.stderr}
}

func (p *eventPrinter) print(env event.Envelope) {
	e := p.e
	if e.json {
		if o, err := envelopeJSON(env); err == nil {
			e.writeJSON(o)
		}
		return
	}
	if c, ok := p.tr.Apply(env.Event); ok {
		p.out.write(c.TurnID, c.Text)
	}
	switch ev := env.Event.(type) {
	case event.TurnStarted:
		p.header(ev.Index, ev.Input)
	case event.TurnDone, event.TurnFailed, event.TurnInterrupted:
		p.out.end(turnOf(ev))
		p.summary(env)
	case event.TurnOutput:
		if ev.Elided > 0 {
			fmt.Fprintf(p.err, "looprig: %d bytes of turn output were not kept (the per-turn journal limit was reached)\n", ev.Elided)
		}
	case event.GateOpened, event.GateResolved, event.Refused, event.SessionStopped, event.SessionFaulted, event.RestoreDone:
		p.summary(env)
	}
}

// header is the line that starts turn index, whose input (TurnStarted's,
// the command it runs; never what was typed into it) is input.
func (p *eventPrinter) header(index int, input string) {
	fmt.Fprintf(p.w, "── turn %d: %s\n", index, textsafe.Line(input))
}

func (p *eventPrinter) summary(env event.Envelope) {
	fmt.Fprintf(p.w, "── %s  %s\n", env.Event.Type(), strings.TrimSpace(eventSummary(env.Event)))
}

// flush prints the output lines still open, before the command exits.
func (p *eventPrinter) flush() { p.out.flush() }
