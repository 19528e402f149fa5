package search

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"looprig/internal/termrender"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/storage"
)

// sessionState is what the index remembers of a session between
// catch-ups: how far it read the journal, what it needs to go on reading
// (the open turn, the output after its last newline) and where its lines
// are.
type sessionState struct {
	// Seq is the sequence of the last journal record indexed.
	Seq uint64 `json:"seq"`
	// Agents are the loops whose engine is an agent (not shell or demo).
	Agents map[string]bool `json:"agents,omitempty"`
	// Turn is the open turn (its id, index and whether an agent runs it).
	Turn      string `json:"turn,omitempty"`
	TurnIndex int    `json:"turn_index,omitempty"`
	TurnAgent bool   `json:"turn_agent,omitempty"`
	// Pending is the open turn's output after its last newline, not yet a
	// line.
	Pending string `json:"pending,omitempty"`
	// Blocks are the ids of the session's blocks, in order; the last is
	// still filled when Open lines is under blockLines.
	Blocks []uint64 `json:"blocks,omitempty"`
	Open   int      `json:"open,omitempty"`
	// Lines counts the lines indexed.
	Lines int64 `json:"lines"`
	// Epoch and Settled: the session was unheld at lease epoch Epoch
	// when its journal was read to its tip (Update's Session).
	Epoch   uint64 `json:"epoch,omitempty"`
	Settled bool   `json:"settled,omitempty"`
}

// maxPending bounds the output kept waiting for a newline: a progress bar
// redrawn with carriage returns for hours is folded, and a line longer
// than this is cut into lines.
const maxPending = 64 << 10

// extractor turns a session's journal records into lines.
type extractor struct {
	st   *sessionState
	tr   rig.Transcript
	emit func(Line)
}

// record takes one journal record.
func (x *extractor) record(rec rig.Record) {
	switch rec.Kind {
	case rig.RecordCommand:
		c := rec.Command
		// A hidden input's text is never journaled: Input is "" then. An
		// input's text is in the input_written that follows it (older
		// journals: in the input itself).
		if (c.Name == rig.CommandInput || c.Name == rig.CommandInputWritten) && !c.Hidden && c.Input != "" {
			x.text(x.inputKind(c.TurnID), x.turnOf(c.TurnID), rec.At, c.Input)
		}
		return
	case rig.RecordEvent:
	default:
		return
	}
	ev := rec.Event
	if ch, ok := x.tr.Apply(ev.Event); ok {
		x.output(ch, rec.At)
	}
	switch v := ev.Event.(type) {
	case event.LoopStarted:
		if v.Engine != "shell" && v.Engine != "demo" {
			if x.st.Agents == nil {
				x.st.Agents = map[string]bool{}
			}
			x.st.Agents[v.LoopID] = true
		}
	case event.TurnStarted:
		x.endTurn(rec.At)
		x.st.Turn, x.st.TurnIndex, x.st.TurnAgent = v.TurnID, v.Index, x.st.Agents[ev.LoopID]
		x.text(x.inputKind(v.TurnID), v.Index, rec.At, v.Input)
	case event.TurnDone:
		x.endOf(v.TurnID, rec.At)
	case event.TurnFailed:
		x.endOf(v.TurnID, rec.At)
	case event.TurnInterrupted:
		x.endOf(v.TurnID, rec.At)
	case event.GateOpened:
		x.text(KindGate, x.turnOf(v.TurnID), rec.At, v.Prompt)
	case event.GateResolved:
		answer := "gate " + v.Action
		if v.By == nil && v.Reason != "" {
			answer += " (" + v.Reason + ")"
		}
		x.text(KindGate, x.turnOf(""), rec.At, answer)
	case event.Attention:
		if v.Reason == event.AttentionAgent && v.Text != "" {
			x.text(KindAgent, x.turnOf(v.TurnID), rec.At, v.Text)
		}
	}
}

// inputKind is the kind of an input to turn id: a command, or a prompt
// to an agent.
func (x *extractor) inputKind(id string) Kind {
	if x.st.TurnAgent && (id == "" || id == x.st.Turn) {
		return KindAgent
	}
	return KindCommand
}

// turnOf is the index of turn id when it is the open one (or id is ""),
// else -1.
func (x *extractor) turnOf(id string) int {
	if x.st.Turn != "" && (id == "" || id == x.st.Turn) {
		return x.st.TurnIndex
	}
	return -1
}

// endOf ends turn id's output if it is the open turn.
func (x *extractor) endOf(id string, at time.Time) {
	if id == x.st.Turn {
		x.endTurn(at)
	}
}

// endTurn makes the open turn's pending output a line and forgets the turn.
func (x *extractor) endTurn(at time.Time) {
	if x.st.Pending != "" {
		x.rendered(termrender.String(x.st.Pending, termrender.NoColor), at)
		x.st.Pending = ""
	}
	x.st.Turn, x.st.TurnAgent = "", false
}

// output takes a chunk of a turn's output: the complete lines it ends are
// rendered and emitted, the rest waits.
func (x *extractor) output(ch rig.Chunk, at time.Time) {
	if ch.TurnID != x.st.Turn {
		return // output of a turn this reader did not see start: none to place
	}
	text := x.st.Pending + ch.Text
	cut := strings.LastIndexByte(text, '\n')
	if cut < 0 {
		x.st.Pending = text
		if len(text) > maxPending {
			x.st.Pending = termrender.String(text, termrender.NoColor)
			if len(x.st.Pending) > maxPending/2 {
				x.rendered(x.st.Pending, at)
				x.st.Pending = ""
			}
		}
		return
	}
	x.st.Pending = text[cut+1:]
	x.rendered(renderLines(text[:cut+1]), at)
}

// renderLines is raw output as a terminal shows it, lines joined by "\n";
// plain printable ASCII is already that.
func renderLines(raw string) string {
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; (c < 0x20 && c != '\n') || c >= 0x7f {
			return termrender.String(raw, termrender.NoColor)
		}
	}
	return raw
}

// rendered emits the lines of rendered output, but for the renderer's own
// notices and the empty line after a final newline.
func (x *extractor) rendered(s string, at time.Time) {
	s = strings.TrimSuffix(s, "\n")
	kind := KindOutput
	if x.st.TurnAgent {
		kind = KindAgent
	}
	for line := range strings.SplitSeq(s, "\n") {
		if termrender.IsNotice(line) || strings.TrimSpace(line) == "" {
			continue
		}
		x.emitLine(Line{Turn: x.st.TurnIndex, Kind: kind, At: at, Text: line})
	}
}

// text emits each non-blank line of s.
func (x *extractor) text(kind Kind, turn int, at time.Time, s string) {
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		x.emitLine(Line{Turn: turn, Kind: kind, At: at, Text: line})
	}
}

func (x *extractor) emitLine(l Line) {
	if len(l.Text) > maxLineBytes {
		cut := maxLineBytes
		for cut > 0 && !utf8.RuneStart(l.Text[cut]) {
			cut--
		}
		l.Text = l.Text[:cut]
	}
	l.At = l.At.Truncate(time.Millisecond)
	x.st.Lines++
	x.emit(l)
}

// ReadLines reads session id's journal in store from its start and calls
// emit with each line the index makes of it, in order: the lines an
// index rebuilt now holds of the session (the output of a turn still
// running after its last newline is not a line yet). For comparing
// engines on the same input (internal/benchmarks/engines).
func ReadLines(ctx context.Context, store storage.Store, id uuid.UUID, emit func(Line)) error {
	ex := &extractor{st: &sessionState{}, emit: emit}
	rr, err := rig.ReadRecords(ctx, store, id, 0)
	if err != nil {
		return fmt.Errorf("search: read session %s: %w", id, err)
	}
	defer rr.Close()
	for rr.Next() {
		ex.record(rr.Record())
	}
	if err := rr.Err(); err != nil {
		return fmt.Errorf("search: read session %s: %w", id, err)
	}
	return nil
}
