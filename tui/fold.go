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

// apply folds one envelope into t: the session's state (rig.State, the
// fold every presenter shares), its turns' output (rig.Transcript: each
// byte once, whether a live delta or a checkpoint carried it) and the
// lines of the events pane. The same reducer folds records read from the
// journal and events delivered live by a host, so a restored session, the
// journal of a session held elsewhere and a live one read the same.
// Envelopes come from one source at a time, each once (rig.Follow).
func (t *transcript) apply(env event.Envelope) {
	t.lastSeq = max(t.lastSeq, env.Seq)
	at := env.At
	if c, ok := t.tr.Apply(env.Event); ok {
		cls := clsOutput
		if c.Stream == event.StreamStderr {
			cls = clsStderr
		}
		t.output(c.TurnID, cls, c.Text)
	}
	turn := t.fold.Turn()
	t.fold.Apply(env)
	switch {
	case t.sessionEvent(at, env.Event):
	case t.turnEvent(at, turn, env.Event):
	case t.gateEvent(at, env.Event):
	case t.workspaceEvent(at, env.Event):
	default:
		t.line(at, clsMuted, string(env.Event.Type()))
	}
}

// sessionEvent writes the line of one of the session's own records: its
// start and stop, restores, hand-overs, faults; it reports whether ev is
// one.
func (t *transcript) sessionEvent(at time.Time, ev event.Event) bool {
	switch ev := ev.(type) {
	case event.SessionStarted:
		where := ev.Placement
		if ev.Root != "" {
			where += " " + ev.Root
		}
		title := strconv.Quote(ev.Title)
		if ev.Title == "" {
			title = "(untitled)"
		}
		if f := ev.ForkedFrom; f != nil {
			where += ", forked from " + rig.ShortID(f.Session) + " at turn " + strconv.Itoa(f.TurnIndex)
		}
		t.line(at, clsSession, "● session started: "+title+" (profile "+ev.Rig+", "+where+")")
	case event.LoopStarted:
		t.line(at, clsSession, "loop "+ev.Name+" started (engine "+ev.Engine+")")
	case event.SessionIdle:
		t.flushPending()
	case event.SessionStopped:
		t.flushPending()
		t.line(at, clsSession, "■ session stopped cleanly")
	case event.RestoreStarted:
		t.flushPending()
		t.line(at, clsRestore, "↻ restore started at epoch "+strconv.FormatUint(ev.Epoch, 10))
	case event.RestoreDone:
		by := ""
		if ev.Holder != "" {
			by = " by " + ev.Holder
		}
		t.line(at, clsRestore, fmt.Sprintf("↻ restore done at epoch %d%s: %s interrupted, %s closed",
			ev.Epoch, by, plural(len(ev.Interrupted), "turn"), plural(len(ev.GatesClosed), "gate")))
	case event.RestoreErrored:
		t.line(at, clsError, "✗ restore failed ("+ev.Kind+"): "+firstLine(ev.Message))
	case event.ConfigurationAdopted:
		parts := make([]string, len(ev.Changes))
		for i, c := range ev.Changes {
			parts[i] = c.Field + " " + strconv.Quote(c.Persisted) + " → " + strconv.Quote(c.Live)
		}
		t.line(at, clsRestore, "configuration adopted by "+ev.Source+": "+strings.Join(parts, "; "))
	case event.SessionFaulted:
		t.line(at, clsError, "✗ session faulted: "+firstLine(ev.Cause))
	case event.HandedOff:
		t.line(at, clsRestore, "session handed over to the take of "+ev.To)
	default:
		return false
	}
	return true
}

// turnEvent writes the line of one of a turn's records: its start, its
// end, what it asked that was refused; it reports whether ev is one.
func (t *transcript) turnEvent(at time.Time, turn *rig.OpenTurn, ev event.Event) bool {
	switch ev := ev.(type) {
	case event.SessionActive, event.OutputDelta, event.TurnOutput:
		// the turn start says it; output is the transcript's
	case event.TurnStarted:
		t.flushPending()
		t.line(at, clsTurn, "▶ turn "+strconv.Itoa(ev.Index)+": "+firstLine(ev.Input))
	case event.TurnDone:
		t.flushPending()
		cls, glyph := clsOK, "✓"
		if ev.ExitCode != 0 {
			cls, glyph = clsError, "✗"
		}
		t.line(at, cls, fmt.Sprintf("%s turn %s done: exit %d in %s%s", glyph, turnIndex(turn, ev.TurnID), ev.ExitCode, dur(ev.Duration), t.elidedNote()))
	case event.TurnFailed:
		t.flushPending()
		t.line(at, clsError, "✗ turn "+turnIndex(turn, ev.TurnID)+" failed: "+firstLine(ev.Err))
	case event.TurnInterrupted:
		t.flushPending()
		t.line(at, clsError, "⏹ turn "+strconv.Itoa(ev.Index)+" interrupted ("+ev.Reason+")"+t.elidedNote())
	case event.Refused:
		t.interject()
		t.line(at, clsError, "✗ "+refusedWords(ev))
	default:
		return false
	}
	return true
}

// gateEvent writes the line of one of what a turn asks of the user: gates
// and their answers, attention and its being seen; it reports whether ev
// is one.
func (t *transcript) gateEvent(at time.Time, ev event.Event) bool {
	switch ev := ev.(type) {
	case event.GateOpened:
		t.interject()
		t.line(at, clsGate, "? gate: "+firstLine(ev.Prompt)+" — a approve · d deny")
	case event.GateResolved:
		word := map[string]string{event.ActionApprove: "approved", event.ActionDeny: "denied", event.ActionClose: "closed"}[ev.Action]
		if word == "" {
			word = ev.Action
		}
		cls := clsGate
		if ev.Action == event.ActionDeny || ev.Action == event.ActionClose {
			cls = clsMuted
		}
		by := " (" + ev.Reason + ")"
		if ev.By != nil {
			by = " by " + clientWords(ev.By)
		}
		t.line(at, cls, "gate "+word+by)
	case event.Attention:
		t.interject()
		what := "rang the bell"
		switch {
		case ev.Reason == event.AttentionAgent:
			t.line(at, clsGate, "! "+agentSays(ev.Agent, firstLine(ev.Text)))
			return true
		case ev.Reason == event.AttentionBell:
		case ev.Text == "":
			what = "sent a notification (" + ev.Reason + ")"
		default:
			what = "says: " + firstLine(ev.Text) + " (" + ev.Reason + ")"
		}
		t.line(at, clsGate, "! the turn "+what)
	case event.AttentionSeen:
		t.line(at, clsMuted, "seen (by "+ev.From+")")
	default:
		return false
	}
	return true
}

// workspaceEvent writes the line of one of the workspace's and the agent's
// records: checkpoints, reconciliations, the conversation and its
// transcript; it reports whether ev is one.
func (t *transcript) workspaceEvent(at time.Time, ev event.Event) bool {
	switch ev := ev.(type) {
	case event.WorkspaceCheckpointed:
		t.line(at, clsMuted, fmt.Sprintf("workspace checkpointed (%s): %s files, %s bytes", ev.Trigger, commas(uint64(ev.Files)), commas(uint64(max(ev.Bytes, 0)))))
	case event.WorkspaceCheckpointSkipped:
		t.line(at, clsError, "! workspace not checkpointed ("+ev.Trigger+"): "+firstLine(ev.Reason))
	case event.WorkspaceReconciled:
		what := map[string]string{
			event.ReconcileUpdated:    "workspace brought up to date from an older checkpoint",
			event.ReconcileAdopted:    "workspace with changes no checkpoint had, kept",
			event.ReconcileMovedAside: "workspace with changes no checkpoint had, moved aside to " + ev.MovedTo,
		}[ev.Action]
		t.line(at, clsRestore, fmt.Sprintf("%s (on %s: %d entries)", what, ev.Host, ev.Differs))
	case event.AgentConversation:
		t.interject()
		t.line(at, clsMuted, ev.Agent+" conversation "+ev.ID)
	case event.WorktreeAdded:
		t.line(at, clsMuted, "git worktree "+ev.Path+" on branch "+ev.Branch)
	case event.AgentTranscript:
		t.interject()
		t.line(at, clsMuted, fmt.Sprintf("%s transcript stored: %s bytes", ev.Agent, commas(uint64(max(ev.Bytes, 0)))))
	default:
		return false
	}
	return true
}

// turnIndex is the index of turn id, when it is the turn that was running
// (the fold before its end), else "?".
func turnIndex(running *rig.OpenTurn, id string) string {
	if running != nil && running.ID == id {
		return strconv.Itoa(running.Index)
	}
	return "?"
}

func (t *transcript) elidedNote() string {
	if n := t.tr.Elided(); n > 0 {
		return " (" + commas(uint64(n)) + " bytes not journaled)"
	}
	return ""
}

// line adds one line to the events pane (an event of the session, or a
// note of the TUI's own); its text is sanitized here.
func (t *transcript) line(at time.Time, cls lineClass, text string) {
	t.ring.push(evLine{at: at, cls: cls, text: clean(text)})
	t.added++
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
