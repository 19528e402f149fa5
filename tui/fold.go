package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"looprig/rig"
	"looprig/rig/event"
)

// ringCapacity bounds the events pane of one session.
const ringCapacity = 10_000

// apply folds one envelope into v: the session's state (rig.State, the
// fold every presenter shares), its turns' output (rig.Transcript: each
// byte once, whether a live delta or a checkpoint carried it) and the
// lines of the events pane. The same reducer folds records read from the
// journal and events delivered live by a host, so a restored session, the
// journal of a session held elsewhere and a live one read the same.
// Envelopes come from one source at a time, each once (rig.Follow).
func (v *sessView) apply(env event.Envelope) {
	v.transcript.lastSeq = max(v.transcript.lastSeq, env.Seq)
	at := env.At
	if c, ok := v.transcript.tr.Apply(env.Event); ok {
		cls := clsOutput
		if c.Stream == event.StreamStderr {
			cls = clsStderr
		}
		v.output(c.TurnID, cls, c.Text)
	}
	turn := v.transcript.fold.Turn()
	v.transcript.fold.Apply(env)
	switch ev := env.Event.(type) {
	case event.SessionStarted:
		where := ev.Placement
		if ev.Root != "" {
			where += " " + ev.Root
		}
		title := strconv.Quote(ev.Title)
		if ev.Title == "" {
			title = "(untitled)"
		}
		v.line(at, clsSession, "● session started: "+title+" (profile "+ev.Rig+", "+where+")")
	case event.LoopStarted:
		v.line(at, clsSession, "loop "+ev.Name+" started (engine "+ev.Engine+")")
	case event.SessionActive, event.OutputDelta, event.TurnOutput:
		// the turn start says it; output is the transcript's
	case event.SessionIdle:
		v.flushPending()
	case event.SessionStopped:
		v.flushPending()
		v.line(at, clsSession, "■ session stopped cleanly")
	case event.RestoreStarted:
		v.flushPending()
		v.line(at, clsRestore, "↻ restore started at epoch "+strconv.FormatUint(ev.Epoch, 10))
	case event.RestoreDone:
		v.line(at, clsRestore, fmt.Sprintf("↻ restore done at epoch %d: %s interrupted, %s closed",
			ev.Epoch, plural(len(ev.Interrupted), "turn"), plural(len(ev.GatesClosed), "gate")))
	case event.RestoreErrored:
		v.line(at, clsError, "✗ restore failed ("+ev.Kind+"): "+firstLine(ev.Message))
	case event.ConfigurationAdopted:
		parts := make([]string, len(ev.Changes))
		for i, c := range ev.Changes {
			parts[i] = c.Field + " " + strconv.Quote(c.Persisted) + " → " + strconv.Quote(c.Live)
		}
		v.line(at, clsRestore, "configuration adopted by "+ev.Source+": "+strings.Join(parts, "; "))
	case event.SessionFaulted:
		v.line(at, clsError, "✗ session faulted: "+firstLine(ev.Cause))
	case event.TurnStarted:
		v.flushPending()
		v.line(at, clsTurn, "▶ turn "+strconv.Itoa(ev.Index)+": "+firstLine(ev.Input))
	case event.TurnDone:
		v.flushPending()
		cls, glyph := clsOK, "✓"
		if ev.ExitCode != 0 {
			cls, glyph = clsError, "✗"
		}
		v.line(at, cls, fmt.Sprintf("%s turn %s done: exit %d in %s%s", glyph, turnIndex(turn, ev.TurnID), ev.ExitCode, dur(ev.Duration), v.elidedNote()))
	case event.TurnFailed:
		v.flushPending()
		v.line(at, clsError, "✗ turn "+turnIndex(turn, ev.TurnID)+" failed: "+firstLine(ev.Err))
	case event.TurnInterrupted:
		v.flushPending()
		v.line(at, clsError, "⏹ turn "+strconv.Itoa(ev.Index)+" interrupted ("+ev.Reason+")"+v.elidedNote())
	case event.GateOpened:
		v.flushPending()
		v.line(at, clsGate, "? gate: "+firstLine(ev.Prompt)+" — a approve · d deny")
	case event.GateResolved:
		word := map[string]string{event.ActionApprove: "approved", event.ActionDeny: "denied", event.ActionClose: "closed"}[ev.Action]
		if word == "" {
			word = ev.Action
		}
		cls := clsGate
		if ev.Action == event.ActionDeny || ev.Action == event.ActionClose {
			cls = clsMuted
		}
		v.line(at, cls, "gate "+word+" ("+ev.Reason+")")
	default:
		v.line(at, clsMuted, string(env.Event.Type()))
	}
}

// turnIndex is the index of turn id, when it is the turn that was running
// (the fold before its end), else "?".
func turnIndex(running *rig.OpenTurn, id string) string {
	if running != nil && running.ID == id {
		return strconv.Itoa(running.Index)
	}
	return "?"
}

func (v *sessView) elidedNote() string {
	if n := v.transcript.tr.Elided(); n > 0 {
		return " (" + commas(uint64(n)) + " bytes not journaled)"
	}
	return ""
}

// line adds one line to the events pane (an event of the session, or a
// note of the TUI's own); its text is sanitized here.
func (v *sessView) line(at time.Time, cls lineClass, text string) {
	v.transcript.ring.push(evLine{at: at, cls: cls, text: clean(text)})
	v.transcript.added++
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
