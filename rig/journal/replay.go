package journal

import (
	"context"
	"fmt"
	"strings"

	"looprig/rig/event"
	"looprig/rig/storage"
)

// Replayer streams the records of a journal in sequence order, read-only
// (no lease is needed), in the style of bufio.Scanner:
//
//	r, err := journal.NewReplayer(ctx, ledger, name, 0)
//	if err != nil { … }
//	defer r.Close()
//	for r.Next() { rec := r.Record(); … }
//	if err := r.Err(); err != nil { … }
//
// It holds one record at a time. It is bounded at the tip seen when it was
// created; to follow a journal, make a new one after LastSeq. It fails
// closed: the first record that does not decode, or a sequence gap, stops
// it with *RecordDecodeError carrying that record's sequence; errors of the
// ledger's cursor (e.g. *storage.CorruptError) and of ctx are returned
// as they are. A Replayer is not safe for concurrent use.
type Replayer struct {
	ctx    context.Context
	name   string
	cur    storage.Cursor
	rec    Record
	size   int // the current record's payload, in bytes
	last   uint64
	n      uint
	err    error
	done   bool
	closed bool
}

// NewReplayer returns a Replayer over the records of name with sequence
// greater than after (0 for all).
func NewReplayer(ctx context.Context, ledger storage.Ledger, name string, after uint64) (*Replayer, error) {
	cur, err := ledger.Read(ctx, name, after)
	if err != nil {
		return nil, fmt.Errorf("journal %q: read after %d: %w", name, after, err)
	}
	return &Replayer{ctx: ctx, name: name, cur: cur, last: after}, nil
}

// Next advances to the next record and reports whether there is one.
func (r *Replayer) Next() bool {
	if r.done || r.err != nil {
		return false
	}
	if r.n%256 == 0 {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			return false
		}
	}
	r.n++
	if !r.cur.Next() {
		r.done = true
		r.err = r.cur.Err()
		return false
	}
	raw := r.cur.Record()
	if raw.Seq != r.last+1 {
		r.err = &RecordDecodeError{Name: r.name, Seq: raw.Seq, Reason: fmt.Sprintf("sequence gap: expected %d", r.last+1)}
		return false
	}
	rec, err := DecodeRecord(raw.Seq, raw.Payload)
	if err != nil {
		if de, ok := err.(*RecordDecodeError); ok {
			de.Name = r.name
		}
		r.err = err
		return false
	}
	r.rec = rec
	r.size = len(raw.Payload)
	r.last = raw.Seq
	return true
}

// Record returns the current record.
func (r *Replayer) Record() Record { return r.rec }

// Size returns the length of the current record's encoded payload: what
// reading it cost, and about what its decoded form holds (a reader that
// bounds what it keeps in bytes counts this; rig's replay chunks do).
func (r *Replayer) Size() int { return r.size }

// Err returns the error that stopped the replay, nil at a clean end.
func (r *Replayer) Err() error { return r.err }

// LastSeq returns the sequence of the last record yielded (the after
// passed to NewReplayer before the first). Passing it as after to a new
// replayer continues where this one stopped.
func (r *Replayer) LastSeq() uint64 { return r.last }

// Close releases the cursor. It is idempotent.
func (r *Replayer) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.done = true
	return r.cur.Close()
}

// EventReplayer is a Replayer that yields only event records, as
// event.Envelope values, skipping fences and commands. Envelope.Session is
// the session id when name is storage.SessionName(id), else the name itself.
type EventReplayer struct {
	r       *Replayer
	session string
	env     event.Envelope
}

// NewEventReplayer returns an EventReplayer over the event records of name
// with sequence greater than after.
func NewEventReplayer(ctx context.Context, ledger storage.Ledger, name string, after uint64) (*EventReplayer, error) {
	r, err := NewReplayer(ctx, ledger, name, after)
	if err != nil {
		return nil, err
	}
	session := name
	if id, ok := strings.CutPrefix(name, storage.SessionName("")); ok && id != "" && !strings.Contains(id, "/") {
		session = id
	}
	return &EventReplayer{r: r, session: session}, nil
}

// Next advances to the next event record and reports whether there is one.
func (e *EventReplayer) Next() bool {
	for e.r.Next() {
		rec := e.r.Record()
		if rec.Kind != KindEvent {
			continue
		}
		e.env = event.Envelope{Seq: rec.Seq, Session: e.session, LoopID: rec.LoopID, At: rec.At, Event: rec.Event}
		return true
	}
	return false
}

// Envelope returns the current event.
func (e *EventReplayer) Envelope() event.Envelope { return e.env }

// Size returns the length of the current event record's encoded payload
// (see Replayer.Size).
func (e *EventReplayer) Size() int { return e.r.Size() }

// Err returns the error that stopped the replay, nil at a clean end.
func (e *EventReplayer) Err() error { return e.r.Err() }

// LastSeq returns the sequence of the last record read, skipped ones
// included, so a new replayer after it does not read them again.
func (e *EventReplayer) LastSeq() uint64 { return e.r.LastSeq() }

// Close releases the cursor. It is idempotent.
func (e *EventReplayer) Close() error { return e.r.Close() }
