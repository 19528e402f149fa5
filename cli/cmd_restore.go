package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/google/uuid"

	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/hub"
)

var cmdRestore = &command{
	name: "restore", brief: "restore a session (and keep it live with --hold)", help: helpRestore,
	json: true, args: oneID, needs: needsStore, interrupts: true,
	flags: func(fs *flag.FlagSet, o *opts) {
		restoreFlags(fs, o)
		fs.BoolVar(&o.hold, "hold", false, "keep the session live until SIGINT/SIGTERM")
	},
	run: runRestore,
}

func runRestore(c *call) int {
	s, err := c.restoreSession(c.args[0])
	if err != nil {
		return c.fail(err)
	}
	id := s.SessionID().String()
	info := s.Restored()
	if c.json {
		out := restoreJSON{ID: id, Epoch: info.Epoch, Interrupted: nonNil(info.Interrupted), GatesClosed: nonNil(info.GatesClosed),
			ShortID: rig.ShortID(id), Records: info.Records, Adopted: changes(info.Adopted), AdoptedBy: info.AdoptedBy, Held: c.hold}
		if c.hold {
			out.PID = os.Getpid()
		}
		c.writeJSON(out)
	} else {
		title := ""
		if t := s.Status().Title; t != "" {
			title = " " + shortQuote(t, 60)
		}
		fmt.Fprintf(c.stdout, "restored session %s%s at epoch %d (%s replayed)\n",
			rig.ShortID(id), title, info.Epoch, plural(int(info.Records), "record"))
		if n := len(info.Interrupted); n > 0 {
			fmt.Fprintf(c.stdout, "  interrupted %s left running by a crash: %s\n", plural(n, "turn"), shortIDs(info.Interrupted))
			c.printOutputTails(s.SessionID(), info.Interrupted)
		}
		if n := len(info.GatesClosed); n > 0 {
			fmt.Fprintf(c.stdout, "  closed %s nobody can answer any more: %s\n", plural(n, "open gate"), shortIDs(info.GatesClosed))
		}
		if len(info.Adopted) > 0 {
			fmt.Fprintf(c.stdout, "  %s:\n%s\n", adoptedHeading(info.AdoptedBy), driftTable(info.Adopted))
		}
	}
	if c.hold {
		if code := c.holdSession(s); code != exitOK {
			shutdown(s, c.sig)
			return code
		}
	}
	if err := shutdown(s, c.sig); err != nil {
		if errors.Is(err, errForced) {
			return exitInterrupted
		}
		if f := s.Err(); f != nil {
			return c.fail(leaseLost(id, f))
		}
		return c.fail(fmt.Errorf("session %s was restored but did not shut down cleanly: %w", rig.ShortID(id), err))
	}
	if !c.json {
		fmt.Fprintf(c.stdout, "shut down cleanly; run a turn with: looprig %srun %s -- INPUT\n", c.globalArgs(), rig.ShortID(id))
	}
	return exitOK
}

// adoptedHeading says who accepted the drift a restore adopted.
func adoptedHeading(source string) string {
	switch source {
	case acceptDriftSource:
		return "adopted configuration drift (--accept-drift); it is the baseline from now on"
	case "default":
		return "adopted info-level configuration drift (nothing that changes how turns run); it is the baseline from now on"
	}
	return "adopted configuration drift (accepted by " + textsafe.Line(source) + "); it is the baseline from now on"
}

// nonNil makes a nil slice empty, so that JSON prints [] rather than null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// holdSession keeps s live, printing its events, until SIGINT/SIGTERM
// (exit 0) or until the session loses its lease (exit 4).
func (c *call) holdSession(s *rig.Session) int {
	id := s.SessionID().String()
	if !c.json {
		fmt.Fprintf(c.stdout, "holding session %s (pid %d, epoch %d); press Ctrl-C to release it\n", rig.ShortID(id), os.Getpid(), s.Epoch())
	}
	sub := s.Subscribe(hub.Filter{AllLoops: true})
	defer func() { sub.Close() }()
	ctx, cancel := context.WithCancel(c.sig.ctx)
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-s.Done():
			cancel()
		case <-stop:
		}
	}()
	for {
		batch, ok, err := sub.Next(ctx, 0)
		for _, env := range batch {
			c.printEvent(env)
		}
		if f := s.Err(); f != nil {
			return c.fail(leaseLost(id, f))
		}
		if err != nil {
			return exitOK // interrupted: the caller shuts down
		}
		if !ok {
			if sub.Err() != nil { // fell behind: carry on with a new subscription
				sub = s.Subscribe(hub.Filter{AllLoops: true})
				continue
			}
			<-ctx.Done()
			if f := s.Err(); f != nil {
				return c.fail(leaseLost(id, f))
			}
			return exitOK
		}
	}
}

// printEvent prints a live event: a JSON line, or "seq  type  summary".
func (e *env) printEvent(env event.Envelope) {
	if e.json {
		if o, err := envelopeJSON(env); err == nil {
			e.writeJSON(o)
		}
		return
	}
	if d, ok := env.Event.(event.OutputDelta); ok {
		fmt.Fprint(e.stdout, textsafe.Sanitize(d.Text))
		return
	}
	seq := "-"
	if env.Seq > 0 {
		seq = fmt.Sprint(env.Seq)
	}
	fmt.Fprintf(e.stdout, "%6s  %-20s  %s\n", seq, env.Event.Type(), strings.TrimSpace(eventSummary(env.Event)))
}

// tailLines is how many lines of an interrupted turn's output restore shows.
const tailLines = 10

// printOutputTails shows the last lines each interrupted turn printed
// before the crash, read back from the journal.
func (c *call) printOutputTails(id uuid.UUID, turns []string) {
	want := map[string]*strings.Builder{}
	for _, t := range turns {
		want[t] = &strings.Builder{}
	}
	rp, err := rig.ReadEvents(c.ctx, c.st, id, 0)
	if err != nil {
		return
	}
	defer rp.Close()
	for rp.Next() {
		if o, ok := rp.Envelope().Event.(event.TurnOutput); ok {
			if b := want[o.TurnID]; b != nil {
				b.WriteString(o.Text)
				if b.Len() > 256<<10 { // keep the tail bounded
					tail := b.String()[b.Len()-64<<10:]
					b.Reset()
					b.WriteString(tail)
				}
			}
		}
	}
	for _, t := range turns {
		text := strings.TrimRight(want[t].String(), "\n")
		if text == "" {
			fmt.Fprintf(c.stdout, "  turn %s printed nothing before the crash\n", rig.ShortID(t))
			continue
		}
		lines := strings.Split(text, "\n")
		if len(lines) > tailLines {
			lines = lines[len(lines)-tailLines:]
		}
		fmt.Fprintf(c.stdout, "  output of turn %s recorded before the crash (last %s):\n", rig.ShortID(t), plural(len(lines), "line"))
		for _, l := range lines {
			fmt.Fprintf(c.stdout, "    | %s\n", textsafe.Line(l))
		}
	}
}
