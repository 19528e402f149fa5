package cli

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"looprig/internal/termrender"
	"looprig/internal/textsafe"
	"looprig/rig"
	"looprig/rig/event"
)

// followEvery is how often `log --follow` looks for new records.
const followEvery = 200 * time.Millisecond

var cmdLog = &command{
	name: "log", brief: "print a session's journal, read-only", help: helpLog,
	json: true, args: oneID, needs: needsStore, interrupts: true,
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.BoolVar(&o.follow, "follow", false, "keep printing records as they land")
		fs.BoolVar(&o.follow, "f", false, "keep printing records as they land")
	},
	run: runLog,
}

func runLog(c *call) int {
	id, _, err := c.findExisting(c.args[0])
	if err != nil {
		return c.fail(err)
	}
	if c.follow {
		err := rig.FollowRecords(c.ctx, c.st, id, 0, followEvery, func(rec rig.Record) error {
			c.printRecord(rec)
			return nil
		})
		if err != nil {
			return c.fail(err)
		}
		return exitOK
	}
	rp, err := rig.ReadRecords(c.ctx, c.st, id, 0)
	if err != nil {
		if c.ctx.Err() != nil {
			return exitOK
		}
		return c.fail(err)
	}
	defer rp.Close()
	for rp.Next() {
		c.printRecord(rp.Record())
	}
	if err := rp.Err(); err != nil && c.ctx.Err() == nil {
		return c.fail(err)
	}
	return exitOK
}

// printRecord prints one journal record: a JSON line, or
// "seq  kind  type  summary".
func (e *env) printRecord(rec rig.Record) {
	if e.json {
		o, err := recordJSON(rec)
		if err != nil {
			o = newObj().set("seq", rec.Seq).set("kind", rec.Kind).set("encode_error", err.Error())
		}
		e.writeJSON(o)
		return
	}
	typ, sum := "", ""
	switch rec.Kind {
	case rig.RecordFence:
		typ, sum = "fence", fmt.Sprintf("epoch %d", rec.Epoch)
	case rig.RecordEvent:
		typ, sum = string(rec.Event.Event.Type()), eventSummary(rec.Event.Event)
	case rig.RecordCommand:
		typ, sum = rec.Command.Name, commandSummary(rec.Command)
	}
	line := fmt.Sprintf("%6d  %-7s  %-20s  %s", rec.Seq, rec.Kind, typ, sum)
	fmt.Fprintln(e.stdout, strings.TrimRight(line, " "))
}

// shortQuote shows s for people on one line: made safe, cut to n runes
// and put between double quotes, with nothing escaped (textsafe has made
// it printable).
func shortQuote(s string, n int) string {
	return `"` + clip(textsafe.Line(s), n) + `"`
}

// outputQuote is shortQuote for turn output: the text as a terminal
// would show it (termrender, render.go), plain, since the summary is cut:
// a "\r" progress bar shows its last state, colours and other escape
// sequences are gone. Each record is rendered on its own.
func outputQuote(s string, n int) string {
	lines := strings.Split(termrender.String(s, termrender.NoColor), "\n")
	// A full-screen program's notices are looprig's words: the quote
	// shows what the program printed, the text of its screen included.
	lines = slices.DeleteFunc(lines, termrender.IsNotice)
	return shortQuote(strings.Join(lines, "\n"), n)
}

func commandSummary(c *rig.Command) string {
	switch c.Name {
	case rig.CommandSubmit:
		return fmt.Sprintf("turn %s %s", rig.ShortID(c.TurnID), shortQuote(c.Input, 60))
	case rig.CommandInterrupt:
		return "turn " + rig.ShortID(c.TurnID)
	case rig.CommandRespondGate:
		return fmt.Sprintf("gate %s %s", rig.ShortID(c.GateID), textsafe.Line(c.Action))
	case rig.CommandInput:
		from := ""
		if c.From != "" {
			from = " from " + textsafe.Line(c.From)
		}
		switch {
		case c.EOF:
			return fmt.Sprintf("turn %s end of file%s", rig.ShortID(c.TurnID), from)
		case c.Hidden:
			return fmt.Sprintf("turn %s hidden input, %d bytes%s", rig.ShortID(c.TurnID), c.Bytes, from)
		case c.Input == "":
			// Its text, if echoed, is in the input_written that follows.
			return fmt.Sprintf("turn %s input, %d bytes%s", rig.ShortID(c.TurnID), c.Bytes, from)
		}
		return fmt.Sprintf("turn %s %s%s", rig.ShortID(c.TurnID), shortQuote(c.Input, 60), from)
	case rig.CommandInputWritten:
		return inputWrittenSummary(c)
	}
	return ""
}

// inputWrittenSummary says what went in of the input command that c
// follows: its text, or that it was hidden, and why not all of it went in.
func inputWrittenSummary(c *rig.Command) string {
	s := fmt.Sprintf("turn %s input %d ", rig.ShortID(c.TurnID), c.InputSeq)
	var what string
	switch {
	case c.EOF:
		what = "end of file"
	case c.Hidden:
		what = fmt.Sprintf("%d bytes, hidden", c.Bytes)
	default:
		what = shortQuote(c.Input, 60)
	}
	switch c.Reason {
	case "":
		return s + "written: " + what
	case rig.InputTimedOut:
		s += "not read in time, "
	case rig.InputTurnEnded:
		s += "cut off by the turn's end, "
	default:
		s += "refused by the terminal, "
	}
	if c.EOF || c.Bytes == 0 {
		return s + "nothing written"
	}
	return s + "written in part: " + what
}

// turnOrNone is "turn SHORTID", or "no turn".
func turnOrNone(id string) string {
	if id == "" {
		return "no turn"
	}
	return "turn " + rig.ShortID(id)
}

// eventSummary is one line about ev for people, sanitized.
func eventSummary(ev event.Event) string {
	l := textsafe.Line
	switch v := ev.(type) {
	case event.SessionStarted:
		s := fmt.Sprintf("title %s, profile %s, placement %s", shortQuote(v.Title, 40), l(v.Rig), l(v.Placement))
		if v.Root != "" {
			s += ", root " + l(v.Root)
		}
		if f := v.ForkedFrom; f != nil {
			s += fmt.Sprintf(", forked from %s at turn %d", rig.ShortID(l(f.Session)), f.TurnIndex)
		}
		return s
	case event.RestoreStarted:
		return fmt.Sprintf("epoch %d", v.Epoch)
	case event.RestoreDone:
		s := fmt.Sprintf("epoch %d, interrupted %s, closed %s", v.Epoch, plural(len(v.Interrupted), "turn"), plural(len(v.GatesClosed), "gate"))
		if v.Holder != "" {
			s += ", holder " + l(v.Holder)
		}
		return s
	case event.RestoreErrored:
		return l(v.Kind) + ": " + clip(l(v.Message), 120)
	case event.ConfigurationAdopted:
		parts := make([]string, len(v.Changes))
		for i, c := range v.Changes {
			parts[i] = fmt.Sprintf("%s %q -> %q (%s)", l(c.Field), l(c.Persisted), l(c.Live), l(c.Level))
		}
		return "by " + l(v.Source) + ": " + strings.Join(parts, "; ")
	case event.SessionFaulted:
		return l(v.Cause)
	case event.LoopStarted:
		return fmt.Sprintf("loop %s %s (%s)", rig.ShortID(v.LoopID), l(v.Name), l(v.Engine))
	case event.TurnStarted:
		return fmt.Sprintf("#%d turn %s %s", v.Index, rig.ShortID(v.TurnID), shortQuote(v.Input, 60))
	case event.TurnOutput:
		s := fmt.Sprintf("turn %s %s", rig.ShortID(v.TurnID), outputQuote(v.Text, 60))
		if v.Elided > 0 {
			s += fmt.Sprintf(" (%d bytes elided)", v.Elided)
		}
		return s
	case event.OutputDelta:
		return fmt.Sprintf("turn %s %s %s", rig.ShortID(v.TurnID), l(v.Stream), outputQuote(v.Text, 60))
	case event.TurnDone:
		return fmt.Sprintf("turn %s exit %d in %s", rig.ShortID(v.TurnID), v.ExitCode, roundDuration(v.Duration))
	case event.TurnFailed:
		return fmt.Sprintf("turn %s: %s", rig.ShortID(v.TurnID), clip(l(v.Err), 120))
	case event.TurnInterrupted:
		return fmt.Sprintf("#%d turn %s reason %s", v.Index, rig.ShortID(v.TurnID), l(v.Reason))
	case event.GateOpened:
		return fmt.Sprintf("gate %s turn %s: %s", rig.ShortID(v.GateID), rig.ShortID(v.TurnID), clip(l(v.Prompt), 100))
	case event.GateResolved:
		if v.By != nil {
			return fmt.Sprintf("gate %s %s by %s", rig.ShortID(v.GateID), l(v.Action), clientText(v.By))
		}
		return fmt.Sprintf("gate %s %s (%s)", rig.ShortID(v.GateID), l(v.Action), l(v.Reason))
	case event.Attention:
		if v.Reason == event.AttentionAgent {
			return fmt.Sprintf("turn %s %s", rig.ShortID(v.TurnID), agentWords(v.Agent, v.Text, 100))
		}
		s := fmt.Sprintf("turn %s %s", rig.ShortID(v.TurnID), l(v.Reason))
		if v.Text != "" {
			s += " " + shortQuote(v.Text, 100)
		}
		return s
	case event.Refused:
		return refusedText(v)
	case event.AttentionSeen:
		return fmt.Sprintf("through seq %d by %s", v.Through, l(v.From))
	case event.WorkspaceCheckpointed:
		s := fmt.Sprintf("%s at %s: %s, %d bytes, manifest %s", l(v.Trigger), turnOrNone(v.TurnID), plural(v.Files, "file"), v.Bytes, v.Manifest[:min(12, len(v.Manifest))])
		if v.Skipped > 0 {
			s += fmt.Sprintf(" (%d left out)", v.Skipped)
		}
		return s
	case event.WorkspaceCheckpointSkipped:
		return fmt.Sprintf("%s at %s: %s", l(v.Trigger), turnOrNone(v.TurnID), clip(l(v.Reason), 120))
	case event.WorkspaceReverted:
		what := fmt.Sprintf("to before turn %d", v.TurnIndex)
		if v.Undo {
			what = fmt.Sprintf("undo of the revert of turn %d", v.TurnIndex)
		}
		return fmt.Sprintf("%s on %s: %d changed, %d removed, manifest %s (was %s)", what, l(v.Host), v.Changed, v.Removed,
			v.Manifest[:min(12, len(v.Manifest))], v.From[:min(12, len(v.From))])
	case event.HandedOff:
		return "to the take of " + l(v.To)
	case event.WorkspaceReconciled:
		s := fmt.Sprintf("%s on %s: %d differed from manifest %s", l(v.Action), l(v.Host), v.Differs, v.Manifest[:min(12, len(v.Manifest))])
		if v.MovedTo != "" {
			s += ", moved aside to " + l(v.MovedTo)
		}
		return s
	case event.AgentConversation:
		if v.TurnID == "" {
			return fmt.Sprintf("%s conversation %s, minted", l(v.Agent), l(v.ID))
		}
		return fmt.Sprintf("%s conversation %s, reported at %s", l(v.Agent), l(v.ID), turnOrNone(v.TurnID))
	case event.WorktreeAdded:
		return fmt.Sprintf("git worktree %s on branch %s of %s", l(v.Path), l(v.Branch), l(v.Repo))
	case event.AgentTranscript:
		return fmt.Sprintf("%s conversation %s at %s: %d bytes, blob %s", l(v.Agent), l(v.ID), turnOrNone(v.TurnID), v.Bytes, v.Blob[:min(12, len(v.Blob))])
	}
	return ""
}

// clientText names a client for people: its kind, pid and whether it had
// a terminal ("cli pid 4242 (terminal)").
func clientText(c *event.Client) string {
	if c == nil {
		return "an unknown client"
	}
	term := "no terminal"
	if c.Terminal {
		term = "terminal"
	}
	pid := "pid unknown"
	if c.PID > 0 {
		pid = fmt.Sprintf("pid %d", c.PID)
	}
	return fmt.Sprintf("%s %s (%s)", textsafe.Line(c.Kind), pid, term)
}

// agentWords is an agent's notification for people, as the agent's words,
// never looprig's: `claude says: "…"`, or "claude waits for you" when it
// said nothing.
func agentWords(agent, text string, n int) string {
	if agent == "" {
		agent = "the agent"
	}
	if text == "" {
		return textsafe.Line(agent) + " waits for you"
	}
	return textsafe.Line(agent) + " says: " + shortQuote(text, n)
}

// fromTurnText says why a client's answer or input was refused.
func fromTurnText(reason string, via, pid int) string {
	switch reason {
	case event.FromTurnGone:
		return "the process that connected is gone, or is another one now"
	case event.FromTurnUnknown:
		return "whether it runs inside the session's turns cannot be told"
	}
	who := "it"
	if via != pid && via > 0 {
		who = fmt.Sprintf("its ancestor pid %d", via)
	}
	if reason == event.FromTurnGroup {
		return "it runs inside the session's turn (" + who + " is in the turn's process group)"
	}
	return "it runs inside the session's turns (" + who + " carries LOOPRIG_SESSION)"
}

// refusedText is a Refused record for people.
func refusedText(v event.Refused) string {
	l := textsafe.Line
	pid := 0
	if v.By != nil {
		pid = v.By.PID
	}
	switch v.What {
	case event.RefusedGateAnswer:
		return fmt.Sprintf("%s of gate %s refused, from %s: %s", l(v.Action), rig.ShortID(v.GateID), clientText(v.By), fromTurnText(v.Reason, v.Via, pid))
	case event.RefusedInput:
		return fmt.Sprintf("input to %s refused, from %s: %s", turnOrNone(v.TurnID), clientText(v.By), fromTurnText(v.Reason, v.Via, pid))
	case event.RefusedHook:
		return fmt.Sprintf("%s hook event %s at %s refused: the turn did not ask for it", l(v.Agent), strconv.Quote(l(v.Hook)), turnOrNone(v.TurnID))
	case event.RefusedConversation:
		return fmt.Sprintf("%s conversation %s, reported by the %s at %s, refused: not the session's, not adopted", l(v.Agent), l(v.ID), l(v.Source), turnOrNone(v.TurnID))
	}
	return l(v.What) + " refused"
}
