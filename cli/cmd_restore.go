package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/hub"
)

func cmdRestore(e *env, args []string) int {
	fs := e.newFlags("restore")
	fs.BoolVar(&e.json, "json", false, "JSON output")
	var o restoreOptions
	o.add(fs)
	hold := fs.Bool("hold", false, "keep the session live until SIGINT/SIGTERM")
	pos, _, dash, code, done := e.parse(fs, args, helpRestore)
	if done {
		return code
	}
	input, code, bad := e.wantID(pos, dash)
	if bad {
		return code
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return e.fail(err)
	}
	st, err := e.openStore()
	if err != nil {
		return e.fail(err)
	}
	defer st.Close()
	sig := notifyInterrupts()
	defer sig.stop()
	s, err := e.restoreSession(sig.ctx, st, cfg, input, o)
	if err != nil {
		return e.fail(err)
	}
	id := s.SessionID().String()
	info := s.Restored()
	if e.json {
		o := newObj().set("id", id).set("epoch", info.Epoch).set("interrupted", nonNil(info.Interrupted)).
			set("gates_closed", nonNil(info.GatesClosed)).set("short_id", rig.ShortID(id)).
			set("records", info.Records).set("adopted", changesJSON(info.Adopted)).set("adopted_by", info.AdoptedBy).set("held", *hold)
		if *hold {
			o.set("pid", pidSelf())
		}
		e.writeJSONLine(o)
	} else {
		title := ""
		if t := s.Status().Title; t != "" {
			title = " " + quote(t, 60)
		}
		fmt.Fprintf(e.stdout, "restored session %s%s at epoch %d (%s replayed)\n",
			rig.ShortID(id), title, info.Epoch, plural(int(info.Records), "record"))
		if n := len(info.Interrupted); n > 0 {
			fmt.Fprintf(e.stdout, "  interrupted %s left running by a crash: %s\n", plural(n, "turn"), shortIDs(info.Interrupted))
			e.printOutputTails(sig.ctx, st, s.SessionID(), info.Interrupted)
		}
		if n := len(info.GatesClosed); n > 0 {
			fmt.Fprintf(e.stdout, "  closed %s nobody can answer any more: %s\n", plural(n, "open gate"), shortIDs(info.GatesClosed))
		}
		if len(info.Adopted) > 0 {
			fmt.Fprintf(e.stdout, "  %s:\n%s\n", adoptedHeading(info.AdoptedBy), driftTable(info.Adopted))
		}
	}
	if *hold {
		if code := e.hold(s, sig); code != exitOK {
			shutdown(s, sig)
			return code
		}
	}
	if err := shutdown(s, sig); err != nil {
		if errors.Is(err, errForced) {
			return exitInterrupted
		}
		if f := s.Err(); f != nil {
			return e.fail(leaseLost(id, f))
		}
		return e.fail(fmt.Errorf("session %s was restored but did not shut down cleanly: %w", rig.ShortID(id), err))
	}
	if !e.json {
		fmt.Fprintf(e.stdout, "shut down cleanly; run a turn with: looprig %srun %s -- INPUT\n", e.globalArgs(), rig.ShortID(id))
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

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// hold keeps s live, printing its events, until SIGINT/SIGTERM (exit 0)
// or until the session loses its lease (exit 4).
func (e *env) hold(s *rig.Session, sig *interrupts) int {
	id := s.SessionID().String()
	if !e.json {
		fmt.Fprintf(e.stdout, "holding session %s (pid %d, epoch %d); press Ctrl-C to release it\n", rig.ShortID(id), pidSelf(), s.Epoch())
	}
	sub := s.Subscribe(hub.Filter{AllLoops: true})
	defer func() { sub.Close() }()
	ctx, cancel := context.WithCancel(sig.ctx)
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
			e.printEvent(env)
		}
		if f := s.Err(); f != nil {
			return e.fail(leaseLost(id, f))
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
				return e.fail(leaseLost(id, f))
			}
			return exitOK
		}
	}
}

// printEvent prints a live event: a JSON line, or "seq  type  summary".
func (e *env) printEvent(env event.Envelope) {
	if e.json {
		if o, err := envelopeJSON(env); err == nil {
			e.writeJSONLine(o)
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
func (e *env) printOutputTails(ctx context.Context, st *openedStore, id uuid.UUID, turns []string) {
	want := map[string]*strings.Builder{}
	for _, t := range turns {
		want[t] = &strings.Builder{}
	}
	rp, err := rig.ReadEvents(ctx, st, id, 0)
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
			fmt.Fprintf(e.stdout, "  turn %s printed nothing before the crash\n", rig.ShortID(t))
			continue
		}
		lines := strings.Split(text, "\n")
		if len(lines) > tailLines {
			lines = lines[len(lines)-tailLines:]
		}
		fmt.Fprintf(e.stdout, "  output of turn %s recorded before the crash (last %s):\n", rig.ShortID(t), plural(len(lines), "line"))
		for _, l := range lines {
			fmt.Fprintf(e.stdout, "    | %s\n", textsafe.Line(l))
		}
	}
}
