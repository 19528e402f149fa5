package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"looprig/rig/event"
	"looprig/rig/fault"
	"looprig/rig/storage"
)

// The protocol's one codec: encode writes every message of the table
// (protocol.go), both ways, and decodeInto reads every one, both ways
// (decodeRequest on the host, decodeMsg on the client). The error object
// (AppendErrorJSON) and the holder object (Holder) are written here too,
// the one shape of each wherever looprig writes them.

// encode is m's line: {"type":…, then m's fields}, newline included.
func encode(m message) []byte {
	b, err := appendMessage(nil, m)
	if err != nil {
		// Only this package's message types are encoded; none but an
		// event (eventLine) can fail.
		panic(fmt.Sprintf("host: encode %T: %v", m, err))
	}
	return b
}

// appendMessage appends m's line to b: its type, then its fields in the
// order its struct declares them; an event's envelope without
// reflection (event.AppendEnvelope).
func appendMessage(b []byte, m message) ([]byte, error) {
	b = append(b, `{"type":`...)
	b = event.AppendString(b, m.msgType())
	if ev, ok := m.(*eventMsg); ok && ev.Event == nil {
		b = append(b, `,"sub":`...)
		b = strconv.AppendUint(b, ev.Sub, 10)
		b = append(b, `,"event":`...)
		b, err := event.AppendEnvelope(b, ev.env)
		if err != nil {
			return nil, err
		}
		return append(b, '}', '\n'), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	fields := buf.Bytes() // {…}\n
	if fields[1] != '}' {
		b = append(b, ',')
	}
	return append(b, fields[1:]...), nil
}

// eventLine is the event line of env on subscription sub, in a buffer
// about its size: a line's cost is its capacity (sendqueue.go), and one
// grown by doubling would count, and hold, up to twice its length.
func eventLine(sub uint64, env event.Envelope) ([]byte, error) {
	b, err := appendMessage(make([]byte, 0, lineHint(env)), &eventMsg{Sub: sub, env: env})
	if err != nil {
		return nil, err
	}
	if len(b) > MaxServerLine {
		return nil, fmt.Errorf("event %s seq %d is %d bytes encoded, more than %d", env.Event.Type(), env.Seq, len(b), MaxServerLine)
	}
	if cap(b)-len(b) > len(b)/8+lineSlack {
		b = append(make([]byte, 0, len(b)), b...) // grew past the hint (text that escapes)
	}
	return b, nil
}

// lineSlack is what an event line takes besides its text.
const lineSlack = 256

// lineHint is the capacity an event line is encoded in: the envelope's
// fields and its text, with room for a sixteenth of it escaped.
func lineHint(env event.Envelope) int {
	var text int
	switch ev := env.Event.(type) {
	case event.OutputDelta:
		text = len(ev.Text)
	case event.TurnOutput:
		text = len(ev.Text)
	}
	return lineSlack + text + text/16
}

// messageTypes is the table by direction and type.
var messageTypes = func() map[direction]map[string]func() message {
	t := map[direction]map[string]func() message{toHost: {}, toClient: {}}
	for _, s := range protocol {
		t[s.dir][s.typ] = s.new
	}
	return t
}()

// decodeInto decodes line b, of type typ, into the struct the table
// declares for it in direction dir; known is false when it declares none.
func decodeInto(dir direction, typ string, b []byte) (m message, known bool, err error) {
	newMsg, ok := messageTypes[dir][typ]
	if !ok {
		return nil, false, nil
	}
	m = newMsg()
	return m, true, json.Unmarshal(b, m)
}

// requestError refuses a line: kind KindBadRequest (malformed: counts
// towards closing the connection), KindUnknownType or KindLineTooLong. id
// is the request's id when it could be read.
type requestError struct {
	kind fault.Kind
	id   uint64
	msg  string
}

func (e *requestError) Error() string { return e.msg }

// requestHead is what decodeRequest reads of a line first: its type,
// which picks the struct the line decodes into, and its id, which a
// refusal echoes.
type requestHead struct {
	Type string `json:"type"`
	ID   uint64 `json:"id"`
}

// maxRequestDepth bounds the nesting of a request's JSON.
const maxRequestDepth = 16

// decodeRequest decodes one request line (the host's side) into its
// type's struct, and checks it.
func decodeRequest(line []byte) (request, error) {
	if len(line) > MaxLine {
		return nil, &requestError{kind: KindLineTooLong, msg: fmt.Sprintf("request line longer than %d bytes", MaxLine)}
	}
	if !isObject(line) {
		return nil, &requestError{kind: KindBadRequest, msg: "malformed request: not a JSON object"}
	}
	if tooDeep(line, maxRequestDepth) {
		// encoding/json allocates per level of nesting (up to 10000 deep):
		// a request has no use for more than a few.
		return nil, &requestError{kind: KindBadRequest, msg: fmt.Sprintf("malformed request: nested deeper than %d levels", maxRequestDepth)}
	}
	var head requestHead
	if err := json.Unmarshal(line, &head); err != nil {
		// A value of the wrong type leaves the others decoded: the id
		// is known unless it is the culprit.
		return nil, &requestError{kind: KindBadRequest, id: head.ID, msg: "malformed request: " + err.Error()}
	}
	if head.Type == "" {
		return nil, &requestError{kind: KindBadRequest, id: head.ID, msg: "request without a type"}
	}
	m, known, err := decodeInto(toHost, head.Type, line)
	if !known {
		return nil, &requestError{kind: KindUnknownType, id: head.ID, msg: fmt.Sprintf("unknown request type %.64q", head.Type)}
	}
	if err != nil {
		return nil, &requestError{kind: KindBadRequest, id: head.ID, msg: "malformed request: " + err.Error()}
	}
	r := m.(request)
	if msg := r.check(); msg != "" {
		return nil, &requestError{kind: KindBadRequest, id: head.ID, msg: msg}
	}
	return r, nil
}

// decodeMsg decodes one host line (the client's side) into the struct of
// its type: *helloMsg, *replyMsg, *progressMsg, *eventMsg, *droppedMsg,
// *lostMsg, *endMsg, *errorMsg, *byeMsg, or *unknownMsg.
func decodeMsg(b []byte) (message, error) {
	typ, err := msgType(b)
	if err != nil {
		return nil, err
	}
	m, known, err := decodeInto(toClient, typ, b)
	if !known {
		return &unknownMsg{Type: typ}, nil
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// hostTypes are the host message types, which msgType reads off a
// line's start: events first, the most frequent.
var hostTypes = func() []string {
	ts := []string{msgEvent}
	for _, s := range protocol {
		if s.dir == toClient && s.typ != msgEvent {
			ts = append(ts, s.typ)
		}
	}
	return ts
}()

// msgType returns the "type" of a host line: read off its start when the
// line begins with it, as encode writes every line (an event line is
// read once, by its decode, not twice), else decoded.
func msgType(b []byte) (string, error) {
	const lead = `{"type":"`
	if bytes.HasPrefix(b, []byte(lead)) {
		rest := b[len(lead):]
		for _, t := range hostTypes {
			if len(rest) > len(t) && string(rest[:len(t)]) == t && rest[len(t)] == '"' {
				return t, nil
			}
		}
	}
	var m struct {
		Type string `json:"type"`
	}
	err := json.Unmarshal(b, &m)
	return m.Type, err
}

// isObject reports whether b starts (after white space) like a JSON
// object.
func isObject(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		}
		return false
	}
	return false
}

// tooDeep reports whether the JSON text b nests arrays and objects deeper
// than max, without allocating. Brackets inside strings do not count.
func tooDeep(b []byte, max int) bool {
	depth := 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > max {
				return true
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return false
}

// AppendErrorJSON appends the JSON object of an error, its one shape on
// the wire (replies, "end", "error", "bye", the status's fault), in the
// ready report and in the CLI's --json errors: {"type","kind","message",
// the typed fields in name order, "hint" when there is one}. Name order
// is the one order every hop keeps: a host's error, decoded by a client
// into a RemoteError (its fields a map), is written again byte for byte
// as the host wrote it, so that a failure's --json is the same whether it
// happened in the CLI's process or in a host. Fields named type, kind,
// message or hint are left out; a storage.Holder is written as a Holder;
// strings as event.AppendString writes them, other values as
// encoding/json does but with <, > and & as they are.
func AppendErrorJSON(b []byte, typ, kind, message string, fields []fault.Field, hint string) ([]byte, error) {
	b = append(b, `{"type":`...)
	b = event.AppendString(b, typ)
	b = append(b, `,"kind":`...)
	b = event.AppendString(b, kind)
	b = append(b, `,"message":`...)
	b = event.AppendString(b, message)
	sorted := slices.Clone(fields)
	slices.SortStableFunc(sorted, func(a, b fault.Field) int { return strings.Compare(a.Name, b.Name) })
	for _, f := range sorted {
		switch f.Name {
		case "type", "kind", "message", "hint":
			continue
		}
		b = append(b, ',')
		b = event.AppendString(b, f.Name)
		b = append(b, ':')
		var err error
		if b, err = appendValue(b, f.Value); err != nil {
			return nil, err
		}
	}
	if hint != "" {
		b = append(b, `,"hint":`...)
		b = event.AppendString(b, hint)
	}
	return append(b, '}'), nil
}

// appendValue appends v, a typed field's value, as AppendErrorJSON writes
// it.
func appendValue(b []byte, v any) ([]byte, error) {
	switch h := v.(type) {
	case string:
		return event.AppendString(b, h), nil
	case storage.Holder:
		v = HolderOf(h)
	case *storage.Holder:
		if h != nil {
			v = HolderOf(*h)
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("host: error field: %w", err)
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

// MarshalJSON writes the error object (AppendErrorJSON).
func (e *RemoteError) MarshalJSON() ([]byte, error) {
	fields := make([]fault.Field, 0, len(e.Fields))
	for k, v := range e.Fields {
		fields = append(fields, fault.Field{Name: k, Value: v})
	}
	return AppendErrorJSON(nil, e.Type.String(), e.Kind.String(), e.Message, fields, e.Hint)
}

// UnmarshalJSON reads the error object.
func (e *RemoteError) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return err
	}
	*e = RemoteError{}
	typ, _ := m["type"].(string)
	kind, _ := m["kind"].(string)
	e.Type, _ = fault.ParseType(typ)
	e.Kind, _ = fault.ParseKind(kind)
	e.Message, _ = m["message"].(string)
	e.Hint, _ = m["hint"].(string)
	for _, k := range []string{"type", "kind", "message", "hint"} {
		delete(m, k)
	}
	if len(m) > 0 {
		e.Fields = m
	}
	return nil
}

// Holder is the one JSON shape of a lease's holder wherever looprig
// writes one: an error's "holder" (on the wire, in the ready report, in
// --json errors), `ls --json`'s "holder" and `lease break --json`'s
// "previous_holder": {"acquired","host","pid"}, in that order, acquired
// in UTC (RFC 3339 with nanoseconds), null when not known. It decodes
// into a storage.Holder.
type Holder struct {
	Acquired time.Time
	Host     string
	PID      int
}

// HolderOf is h in its JSON shape.
func HolderOf(h storage.Holder) Holder {
	return Holder{Acquired: h.Acquired, Host: h.Host, PID: h.PID}
}

// MarshalJSON writes {"acquired","host","pid"}.
func (h Holder) MarshalJSON() ([]byte, error) {
	b := []byte(`{"acquired":`)
	if h.Acquired.IsZero() {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = h.Acquired.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	b = append(b, `,"host":`...)
	b = event.AppendString(b, h.Host)
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(h.PID), 10)
	return append(b, '}'), nil
}
