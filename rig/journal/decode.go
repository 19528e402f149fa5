package journal

import (
	"encoding/json"
	"fmt"
	"time"

	"looprig/rig/event"
)

// recordWire is a record envelope as written. ID is the idempotency id
// earlier versions could write; it is read (a string, at most once) so that
// their journals stay readable, and dropped.
type recordWire struct {
	V       int        `json:"v"`
	Kind    Kind       `json:"kind"`
	ID      string     `json:"id"`
	Epoch   uint64     `json:"epoch"`
	LoopID  string     `json:"loop_id"`
	Event   *event.Raw `json:"event"`
	Command *Command   `json:"command"`
	At      *time.Time `json:"at"`
}

// DecodeRecord decodes one ledger payload stored at seq. It fails closed
// with *RecordDecodeError (Name left empty) on anything it does not fully
// understand: malformed JSON, unknown or repeated fields, a version other
// than RecordVersion, an unknown kind, fields that do not belong to the
// kind, a missing commit time, an event that does not decode (Err is then
// the *event.DecodeError) or is ephemeral, a loop id that does not match
// the event's scope, or an unknown command name. A string field "id", the
// idempotency id earlier versions could write, is accepted and ignored.
//
// The envelope is read by a small strict parser (parseRecord) rather than
// encoding/json, which halves the cost of replay; it accepts exactly the
// JSON that encoding/json accepts for these fields, minus encoding/json's
// leniencies (keys matched case-insensitively, repeated keys, null for
// absent).
func DecodeRecord(seq uint64, payload []byte) (Record, error) {
	w, err := parseRecord(payload)
	if err != nil {
		return Record{}, explain(seq, payload, err)
	}
	return finishRecord(seq, w)
}

// explain turns a parse failure into a *RecordDecodeError, as precise as a
// lenient look at the payload allows.
func explain(seq uint64, payload []byte, err error) error {
	var probe struct {
		V     int             `json:"v"`
		Event json.RawMessage `json:"event"`
	}
	if json.Unmarshal(payload, &probe) == nil {
		if probe.V != RecordVersion {
			return &RecordDecodeError{Seq: seq, Reason: fmt.Sprintf("unknown record version %d", probe.V)}
		}
		if len(probe.Event) > 0 {
			if _, eerr := event.Unmarshal(probe.Event); eerr != nil {
				return &RecordDecodeError{Seq: seq, Reason: "bad event", Err: eerr}
			}
		}
	}
	return &RecordDecodeError{Seq: seq, Reason: "malformed record", Err: err}
}

// finishRecord checks a parsed envelope and decodes its event.
func finishRecord(seq uint64, w recordWire) (Record, error) {
	fail := func(reason string, err error) (Record, error) {
		return Record{}, &RecordDecodeError{Seq: seq, Reason: reason, Err: err}
	}
	if w.V != RecordVersion {
		return fail(fmt.Sprintf("unknown record version %d", w.V), nil)
	}
	if w.At == nil {
		return fail("missing commit time", nil)
	}
	rec := Record{Seq: seq, Kind: w.Kind, At: *w.At, Epoch: w.Epoch, LoopID: w.LoopID}
	hasEvent := w.Event != nil
	switch w.Kind {
	case KindFence:
		if w.Epoch == 0 || hasEvent || w.Command != nil || w.LoopID != "" {
			return fail("malformed fence", nil)
		}
	case KindEvent:
		if !hasEvent || w.Command != nil || w.Epoch != 0 {
			return fail("malformed event record", nil)
		}
		ev, ok := decodeFast(w.Event)
		if !ok {
			var err error
			if ev, err = w.Event.Decode(); err != nil {
				return fail("bad event", err)
			}
		}
		if err := event.CheckDurable(ev); err != nil {
			return fail("event is not durable", err)
		}
		if err := checkScope(w.LoopID, ev); err != nil {
			return fail("bad loop id", err)
		}
		rec.Event = ev
	case KindCommand:
		if w.Command == nil || hasEvent || w.Epoch != 0 || w.LoopID != "" {
			return fail("malformed command record", nil)
		}
		if err := w.Command.validate(); err != nil {
			return fail("bad command", err)
		}
		rec.Command = w.Command
	default:
		return fail(fmt.Sprintf("unknown record kind %q", w.Kind), nil)
	}
	return rec, nil
}

// checkScope requires a loop id for loop-scope events (the one LoopStarted
// names, for LoopStarted) and none for session-scope events.
func checkScope(loopID string, ev event.Event) error {
	switch ev.Scope() {
	case event.LoopScope:
		if loopID == "" {
			return fmt.Errorf("loop-scope event %s without a loop id", ev.Type())
		}
		if ls, ok := ev.(event.LoopStarted); ok && ls.LoopID != loopID {
			return fmt.Errorf("LoopStarted names loop %q but is recorded for loop %q", ls.LoopID, loopID)
		}
	case event.SessionScope:
		if loopID != "" {
			return fmt.Errorf("session-scope event %s with loop id %q", ev.Type(), loopID)
		}
	}
	return nil
}
