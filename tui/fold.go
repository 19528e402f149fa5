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

// fold is what the events of a session say about it. The same reducer
// (sessView.apply) folds records replayed from the journal and events
// delivered live by the hub, so a restored session, a journal tail of a
// session held elsewhere and a live one read the same.
type fold struct {
	profile, placement, root string
	loopID, loopName, engine string
	turns                    int
	openTurn                 *openTurn
	openGate                 *openGate
	lastEnd                  *rig.TurnEnd // how the last turn that ended ended
	lastRestore              *event.RestoreDone
	lastAt                   time.Time

	// Output accounting of the open turn: bytes shown (live deltas and
	// checkpoints) and bytes checkpointed. A checkpoint shows only what
	// the deltas did not (a replay has no deltas, so it shows all).
	outTurn     string
	shown, ckpt int64
	elided      int64
}

type openTurn struct {
	id      string
	index   int
	input   string
	started time.Time
}

type openGate struct {
	id, prompt string
	at         time.Time // when it opened
}

// apply folds one envelope into v: state, and lines for the events pane.
// Enduring events at or below the last sequence seen are duplicates (a
// journal replay overlapping a live subscription) and are skipped.
func (v *sessView) apply(env event.Envelope) {
	if env.Seq != 0 {
		if env.Seq <= v.lastSeq {
			return
		}
		v.lastSeq = env.Seq
	}
	f := &v.f
	if !env.At.IsZero() {
		f.lastAt = env.At
	}
	at := env.At
	switch ev := env.Event.(type) {
	case event.SessionStarted:
		f.profile, f.placement, f.root = ev.Rig, ev.Placement, ev.Root
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
		f.loopID, f.loopName, f.engine = ev.LoopID, ev.Name, ev.Engine
		v.line(at, clsSession, "loop "+ev.Name+" started (engine "+ev.Engine+")")
	case event.SessionActive:
		// the turn start says it
	case event.SessionIdle:
		v.flushPending()
	case event.SessionStopped:
		v.flushPending()
		f.openTurn, f.openGate = nil, nil
		v.line(at, clsSession, "■ session stopped cleanly")
	case event.RestoreStarted:
		v.flushPending()
		v.line(at, clsRestore, "↻ restore started at epoch "+strconv.FormatUint(ev.Epoch, 10))
	case event.RestoreDone:
		f.lastRestore = &ev
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
		f.turns = max(f.turns, ev.Index+1)
		f.openTurn = &openTurn{id: ev.TurnID, index: ev.Index, input: ev.Input, started: at}
		f.outTurn, f.shown, f.ckpt, f.elided = ev.TurnID, 0, 0, 0
		v.line(at, clsTurn, "▶ turn "+strconv.Itoa(ev.Index)+": "+firstLine(ev.Input))
	case event.OutputDelta:
		cls := clsOutput
		if ev.Stream == event.StreamStderr {
			cls = clsStderr
		}
		if ev.TurnID == f.outTurn {
			f.shown += int64(len(ev.Text))
		}
		v.output(ev.TurnID, cls, ev.Text)
	case event.TurnOutput:
		if ev.Elided > 0 {
			f.elided = ev.Elided
		}
		if ev.TurnID != f.outTurn {
			f.outTurn, f.shown, f.ckpt = ev.TurnID, 0, 0
		}
		f.ckpt += int64(len(ev.Text))
		if f.ckpt > f.shown {
			missing := f.ckpt - f.shown
			text := ev.Text
			if missing < int64(len(text)) {
				text = text[int64(len(text))-missing:]
			}
			f.shown = f.ckpt
			v.output(ev.TurnID, clsOutput, text)
		}
	case event.TurnDone:
		v.flushPending()
		idx := v.turnIndex(ev.TurnID)
		v.noteEnd(ev, ev.TurnID, at)
		f.openTurn = nil
		cls := clsOK
		glyph := "✓"
		if ev.ExitCode != 0 {
			cls, glyph = clsError, "✗"
		}
		v.line(at, cls, fmt.Sprintf("%s turn %s done: exit %d in %s%s", glyph, idx, ev.ExitCode, dur(ev.Duration), v.elidedNote()))
	case event.TurnFailed:
		v.flushPending()
		idx := v.turnIndex(ev.TurnID)
		v.noteEnd(ev, ev.TurnID, at)
		f.openTurn, f.openGate = nil, nil
		v.line(at, clsError, "✗ turn "+idx+" failed: "+firstLine(ev.Err))
	case event.TurnInterrupted:
		v.flushPending()
		v.noteEnd(ev, ev.TurnID, at)
		f.openTurn, f.openGate = nil, nil
		v.line(at, clsError, "⏹ turn "+strconv.Itoa(ev.Index)+" interrupted ("+ev.Reason+")"+v.elidedNote())
	case event.GateOpened:
		v.flushPending()
		f.openGate = &openGate{id: ev.GateID, prompt: ev.Prompt, at: at}
		v.line(at, clsGate, "? gate: "+firstLine(ev.Prompt)+" — a approve · d deny")
	case event.GateResolved:
		if f.openGate != nil && f.openGate.id == ev.GateID {
			f.openGate = nil
		}
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

// noteEnd folds the end ev of turn turnID, recorded at: its index and
// start come from the open turn when it is the one that ended
// (rig.TurnEndOf).
func (v *sessView) noteEnd(ev event.Event, turnID string, at time.Time) {
	index, started := -1, at
	if t := v.f.openTurn; t != nil && t.id == turnID {
		index, started = t.index, t.started
	}
	if e, ok := rig.TurnEndOf(ev, index, started, at); ok {
		v.f.lastEnd = &e
	}
}

func (v *sessView) turnIndex(turnID string) string {
	if t := v.f.openTurn; t != nil && t.id == turnID {
		return strconv.Itoa(t.index)
	}
	return "?"
}

func (v *sessView) elidedNote() string {
	if v.f.elided > 0 {
		return " (" + commas(uint64(v.f.elided)) + " bytes not journaled)"
	}
	return ""
}

// line adds one line to the events pane (an event of the session, or a
// note of the TUI's own); its text is sanitized here.
func (v *sessView) line(at time.Time, cls lineClass, text string) {
	v.ring.push(evLine{at: at, cls: cls, text: clean(text)})
	v.added++
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
