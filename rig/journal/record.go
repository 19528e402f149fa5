package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"looprig/rig/event"
)

// RecordVersion is the version of the record envelope. It is the only one
// DecodeRecord accepts.
const RecordVersion = 1

// Kind is the kind of a journal record.
type Kind string

const (
	// KindFence opens a writer's tenure: the epoch of its lease.
	KindFence Kind = "fence"
	// KindEvent holds one enduring event.
	KindEvent Kind = "event"
	// KindCommand audits one command received by the session.
	KindCommand Kind = "command"
)

// Command names.
const (
	CommandSubmit      = "submit"
	CommandInterrupt   = "interrupt"
	CommandRespondGate = "respond_gate"
	CommandShutdown    = "shutdown"
)

// Command is the audit of one command received by a session. Only the
// fields that apply are set.
type Command struct {
	// Name is CommandSubmit, CommandInterrupt, CommandRespondGate or
	// CommandShutdown.
	Name   string `json:"name"`
	LoopID string `json:"loop_id,omitempty"`
	TurnID string `json:"turn_id,omitempty"`
	GateID string `json:"gate_id,omitempty"`
	Input  string `json:"input,omitempty"`
	// Action is the gate action of respond_gate (event.ActionApprove, …).
	Action string `json:"action,omitempty"`
}

func (c *Command) validate() error {
	switch c.Name {
	case CommandSubmit, CommandInterrupt, CommandRespondGate, CommandShutdown:
		return nil
	}
	return fmt.Errorf("unknown command name %q", c.Name)
}

// Record is one decoded journal record.
type Record struct {
	// Seq is the ledger sequence of the record.
	Seq  uint64
	Kind Kind
	// ID is the idempotency id the record was appended with ("" for none).
	ID string
	// At is when the record was committed (UTC; the flush time of its batch).
	At time.Time
	// Epoch is the lease epoch of a fence; 0 for other kinds.
	Epoch uint64
	// LoopID is the loop of a loop-scope event; "" otherwise (a command
	// carries its loop in Command.LoopID).
	LoopID string
	// Event is set for KindEvent; always enduring.
	Event event.Event
	// Command is set for KindCommand.
	Command *Command
}

// ---- errors -------------------------------------------------------------------

// RecordDecodeError reports a journal record that cannot be trusted: an
// unknown envelope version or kind, a malformed envelope or event, an
// ephemeral event, or a sequence gap. Readers fail closed on it.
type RecordDecodeError struct {
	// Name is the ledger name, when known.
	Name string
	// Seq is the sequence of the offending record.
	Seq uint64
	// Reason says what is wrong, in a few words.
	Reason string
	// Err is the cause, e.g. an *event.DecodeError.
	Err error
}

func (e *RecordDecodeError) Error() string {
	msg := "journal: record " + strconv.FormatUint(e.Seq, 10)
	if e.Name != "" {
		msg += " of " + strconv.Quote(e.Name)
	}
	msg += ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *RecordDecodeError) Unwrap() error { return e.Err }

// ---- encoding -----------------------------------------------------------------
//
// A record is encoded by hand, in a fixed field order, with the commit time
// last:
//
//	{"v":1,"kind":"event","id":"…","loop_id":"…","event":{…},"at":"…"}
//
// Everything before `,"at":` is the record's content. The writer encodes the
// content in the caller's goroutine and the batch leader appends the commit
// time, so times never go backwards along the sequence (given a
// non-decreasing clock). The idempotency digest covers the content only.

// atSuffixMax bounds the bytes appendAt adds.
const atSuffixMax = len(`,"at":"`) + len(time.RFC3339Nano) + len(`"}`) + 8

// encodeContent returns the content of a record, with spare capacity for
// the timestamp. ev must already be checked durable; cmd may be nil.
func encodeContent(kind Kind, id string, epoch uint64, loopID string, ev event.Event, cmd *Command) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(256 + atSuffixMax) // most records; a long output line grows it once more
	buf.WriteString(`{"v":1,"kind":"`)
	buf.WriteString(string(kind))
	buf.WriteByte('"')
	if id != "" {
		buf.WriteString(`,"id":`)
		writeJSON(&buf, id)
	}
	if epoch != 0 {
		buf.WriteString(`,"epoch":`)
		buf.WriteString(strconv.FormatUint(epoch, 10))
	}
	if loopID != "" {
		buf.WriteString(`,"loop_id":`)
		writeJSON(&buf, loopID)
	}
	if ev != nil {
		buf.WriteString(`,"event":`)
		if err := event.AppendTo(&buf, ev); err != nil {
			return nil, err
		}
	}
	if cmd != nil {
		buf.WriteString(`,"command":`)
		if err := writeJSON(&buf, cmd); err != nil {
			return nil, err
		}
	}
	buf.Grow(atSuffixMax)
	return buf.Bytes(), nil
}

// appendAt completes a record's content with its commit time.
func appendAt(content []byte, at time.Time) []byte {
	b := append(content, `,"at":"`...)
	b = at.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}`...)
}

// writeJSON encodes v canonically, like the event codec: without HTML
// escaping, with invalid UTF-8 as a literal U+FFFD (what it decodes to), and
// without a trailing newline.
func writeJSON(buf *bytes.Buffer, v any) error {
	start := buf.Len()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1)
	buf.Truncate(start + len(literalReplacement(buf.Bytes()[start:])))
	return nil
}

// literalReplacement rewrites, in place, the \ufffd escapes encoding/json
// writes for invalid UTF-8 as a literal U+FFFD (see the same function in
// package event).
func literalReplacement(b []byte) []byte {
	const esc = `\ufffd`
	if !bytes.Contains(b, []byte(esc)) {
		return b
	}
	out := b[:0]
	for i := 0; i < len(b); {
		if b[i] == '\\' && i+1 < len(b) {
			if string(b[i:min(i+6, len(b))]) == esc {
				out = append(out, "\uFFFD"...)
				i += 6
				continue
			}
			out = append(out, b[i], b[i+1])
			i += 2
			continue
		}
		out = append(out, b[i])
		i++
	}
	return out
}

// contentOf re-encodes the content of a decoded record.
func contentOf(rec Record) ([]byte, error) {
	return encodeContent(rec.Kind, rec.ID, rec.Epoch, rec.LoopID, rec.Event, rec.Command)
}

// ---- decoding -----------------------------------------------------------------

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
// the event's scope, or an unknown command name.
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
	rec := Record{Seq: seq, Kind: w.Kind, ID: w.ID, At: *w.At, Epoch: w.Epoch, LoopID: w.LoopID}
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
