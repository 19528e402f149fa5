package engines

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"looprig/internal/termrender"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/storage"
	"looprig/search"
)

// A copy of package search's extractor (search/extract.go, unexported):
// the lines the other engines index are made from the journals the way
// looprig's index makes its own, and checkLines compares the two sets line
// for line before anything is measured.

// doc is one line to index.
type doc struct {
	Session uuid.UUID
	Turn    int
	Kind    search.Kind
	At      time.Time
	Text    string
}

const (
	maxPending   = 64 << 10
	maxLineBytes = 4 << 10
)

type extractor struct {
	agents    map[string]bool
	turn      string
	turnIndex int
	turnAgent bool
	pending   string
	tr        rig.Transcript
	session   uuid.UUID
	emit      func(doc)
}

// extractSessions reads the journals of sessions ids in order and calls
// emit with each line.
func extractSessions(ctx context.Context, st storage.Store, ids []uuid.UUID, emit func(doc)) error {
	for _, id := range ids {
		x := &extractor{session: id, emit: emit, agents: map[string]bool{}}
		rr, err := rig.ReadRecords(ctx, st, id, 0)
		if err != nil {
			return err
		}
		for rr.Next() {
			x.record(rr.Record())
		}
		err = rr.Err()
		rr.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func (x *extractor) record(rec rig.Record) {
	switch rec.Kind {
	case rig.RecordCommand:
		c := rec.Command
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
			x.agents[v.LoopID] = true
		}
	case event.TurnStarted:
		x.endTurn(rec.At)
		x.turn, x.turnIndex, x.turnAgent = v.TurnID, v.Index, x.agents[ev.LoopID]
		x.text(x.inputKind(v.TurnID), v.Index, rec.At, v.Input)
	case event.TurnDone:
		x.endOf(v.TurnID, rec.At)
	case event.TurnFailed:
		x.endOf(v.TurnID, rec.At)
	case event.TurnInterrupted:
		x.endOf(v.TurnID, rec.At)
	case event.GateOpened:
		x.text(search.KindGate, x.turnOf(v.TurnID), rec.At, v.Prompt)
	case event.GateResolved:
		answer := "gate " + v.Action
		if v.By == nil && v.Reason != "" {
			answer += " (" + v.Reason + ")"
		}
		x.text(search.KindGate, x.turnOf(""), rec.At, answer)
	case event.Attention:
		if v.Reason == event.AttentionAgent && v.Text != "" {
			x.text(search.KindAgent, x.turnOf(v.TurnID), rec.At, v.Text)
		}
	}
}

func (x *extractor) inputKind(id string) search.Kind {
	if x.turnAgent && (id == "" || id == x.turn) {
		return search.KindAgent
	}
	return search.KindCommand
}

func (x *extractor) turnOf(id string) int {
	if x.turn != "" && (id == "" || id == x.turn) {
		return x.turnIndex
	}
	return -1
}

func (x *extractor) endOf(id string, at time.Time) {
	if id == x.turn {
		x.endTurn(at)
	}
}

func (x *extractor) endTurn(at time.Time) {
	if x.pending != "" {
		x.rendered(termrender.String(x.pending, termrender.NoColor), at)
		x.pending = ""
	}
	x.turn, x.turnAgent = "", false
}

func (x *extractor) output(ch rig.Chunk, at time.Time) {
	if ch.TurnID != x.turn {
		return
	}
	text := x.pending + ch.Text
	cut := strings.LastIndexByte(text, '\n')
	if cut < 0 {
		x.pending = text
		if len(text) > maxPending {
			x.pending = termrender.String(text, termrender.NoColor)
			if len(x.pending) > maxPending/2 {
				x.rendered(x.pending, at)
				x.pending = ""
			}
		}
		return
	}
	x.pending = text[cut+1:]
	x.rendered(renderLines(text[:cut+1]), at)
}

func renderLines(raw string) string {
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; (c < 0x20 && c != '\n') || c >= 0x7f {
			return termrender.String(raw, termrender.NoColor)
		}
	}
	return raw
}

func (x *extractor) rendered(s string, at time.Time) {
	s = strings.TrimSuffix(s, "\n")
	kind := search.KindOutput
	if x.turnAgent {
		kind = search.KindAgent
	}
	for line := range strings.SplitSeq(s, "\n") {
		if termrender.IsNotice(line) || strings.TrimSpace(line) == "" {
			continue
		}
		x.emitLine(doc{Turn: x.turnIndex, Kind: kind, At: at, Text: line})
	}
}

func (x *extractor) text(kind search.Kind, turn int, at time.Time, s string) {
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		x.emitLine(doc{Turn: turn, Kind: kind, At: at, Text: line})
	}
}

func (x *extractor) emitLine(l doc) {
	if len(l.Text) > maxLineBytes {
		cut := maxLineBytes
		for cut > 0 && !utf8.RuneStart(l.Text[cut]) {
			cut--
		}
		l.Text = l.Text[:cut]
	}
	l.At = l.At.Truncate(time.Millisecond)
	l.Session = x.session
	x.emit(l)
}
