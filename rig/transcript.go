package rig

import (
	"looprig/rig/event"
)

// Transcript turns a session's output events into each turn's output,
// every byte once and in order, whatever mix of them a reader gets: live
// OutputDeltas (which a slow reader may miss some of) and the durable
// TurnOutput checkpoints that journal the same bytes. Both say at which
// offset of the turn's output their text begins, so a Transcript passes
// on what follows the bytes it passed on already and nothing else: a
// delta after a gap waits for the checkpoint that fills it (a checkpoint
// holds everything the turn printed up to the moment it was written), a
// checkpoint repeating what the deltas showed adds nothing.
//
// A reader that starts in the middle of a turn (its TurnStarted was before
// the reader's first record) starts at the first output it gets. Output of
// a turn that ended is late (a live delta queued before its end was
// replayed from the journal) and dropped.
//
// Feed it every event a Follower yields, in order; the zero value is
// ready to use. It is not safe for concurrent use.
type Transcript struct {
	turn   string // the turn whose output is passed on; "" before any
	open   bool   // turn has not ended
	have   int64  // bytes of turn passed on: its output up to here
	ckpt   int64  // where turn's checkpoints got to (records without offsets follow it)
	kept   bool   // a checkpoint of turn was applied
	elided int64  // output of turn the journal did not keep
	ended  endedTurns
}

// Chunk is output a Transcript passes on: the bytes of turn TurnID from
// Offset on.
type Chunk struct {
	TurnID string
	// Stream is the stream a live delta came on; event.StreamStdout for
	// the bytes of a checkpoint, which keeps none.
	Stream string
	Offset int64
	Text   string
}

// Apply takes one event and returns the output it adds (ok false when it
// adds none). Events that are not about output only mark the start and
// end of turns.
func (t *Transcript) Apply(ev event.Event) (Chunk, bool) {
	switch e := ev.(type) {
	case event.TurnStarted:
		t.begin(e.TurnID, 0)
	case event.TurnDone:
		t.end(e.TurnID)
	case event.TurnFailed:
		t.end(e.TurnID)
	case event.TurnInterrupted:
		t.end(e.TurnID)
	case event.OutputDelta:
		if !t.follows(e.TurnID, e.Offset) {
			return Chunk{}, false
		}
		return t.take(e.Stream, e.Offset, e.Text)
	case event.TurnOutput:
		off := e.Offset
		if off == 0 && t.turn == e.TurnID && t.kept {
			// Only a turn's first checkpoint begins at 0 (the runtime
			// writes no empty one before it): this is a record written
			// before offsets, which follows the last one.
			off = t.ckpt
		}
		if !t.follows(e.TurnID, off) {
			return Chunk{}, false
		}
		t.ckpt, t.kept = max(t.ckpt, off+int64(len(e.Text))), true
		t.elided = max(t.elided, e.Elided)
		return t.take(event.StreamStdout, off, e.Text)
	}
	return Chunk{}, false
}

// Elided returns how many bytes of the followed turn's output the journal
// did not keep (its per-turn limit was reached), as its checkpoints said.
func (t *Transcript) Elided() int64 { return t.elided }

// follows reports whether output of turn id may be passed on, starting to
// follow id when the reader is new to it: a turn that started before the
// reader's first record begins where its first output does.
func (t *Transcript) follows(id string, off int64) bool {
	switch {
	case id == t.turn:
		return t.open
	case t.ended.has(id):
		return false
	case t.open:
		// Another turn's output while one runs: one turn runs at a time,
		// so it is a turn whose start and end this reader never saw.
		return false
	}
	t.begin(id, off)
	return true
}

func (t *Transcript) begin(id string, at int64) {
	if t.open && t.turn != "" && t.turn != id {
		t.ended.add(t.turn)
	}
	*t = Transcript{turn: id, open: true, have: at, ended: t.ended}
}

func (t *Transcript) end(id string) {
	t.ended.add(id)
	if id == t.turn {
		t.open = false
	}
}

// take passes on what text, at offset off, holds after the bytes passed
// on already; nothing when it begins past them (a gap: a checkpoint will
// fill it).
func (t *Transcript) take(stream string, off int64, text string) (Chunk, bool) {
	end := off + int64(len(text))
	if off > t.have || end <= t.have {
		return Chunk{}, false
	}
	c := Chunk{TurnID: t.turn, Stream: stream, Offset: t.have, Text: text[t.have-off:]}
	t.have = end
	return c, true
}

// endedTurns remembers the last turns that ended, so that their late
// output is recognised. Turns end one at a time and late output trails its
// turn by at most a subscription's buffer, so a few suffice.
type endedTurns struct {
	ids  [64]string
	next int
}

func (e *endedTurns) add(id string) {
	if id == "" || e.has(id) {
		return
	}
	e.ids[e.next] = id
	e.next = (e.next + 1) % len(e.ids)
}

func (e *endedTurns) has(id string) bool {
	for _, x := range e.ids {
		if x == id && id != "" {
			return true
		}
	}
	return false
}
