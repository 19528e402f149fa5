package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/explain"
)

// The kinds of the protocol's own errors, as the host names them.
const (
	KindBadRequest       = explain.KindBadRequest       // a malformed line or request
	KindUnknownType      = explain.KindUnknownType      // a request type this host does not know
	KindLineTooLong      = explain.KindLineTooLong      // a request line over MaxLine
	KindProtocolMismatch = explain.KindProtocolMismatch // client and host speak different protocols
	KindPeerRefused      = explain.KindPeerRefused      // the peer runs as another uid
	KindEventTooLarge    = explain.KindEventTooLarge    // an event does not fit in MaxServerLine
	KindTooManyClients   = explain.KindTooManyClients   // the host serves as many clients as it may
)

// RemoteError is an error reported by the host, in the shape of the CLI's
// JSON errors. Type and Kind are rig/explain's classification, decoded
// from the wire's "type" and "kind" (a name this client does not know is
// TypeError, KindError: unclassified). Fields holds the typed fields
// (numbers as json.Number once decoded); Hint is the host's own advice on
// its protocol's errors (how to stop a host that speaks another protocol),
// never the words for a remedy, which each presenter has.
//
// errors.As turns a RemoteError of kind busy, no_turn, no_terminal,
// input_timeout or no_gate into *rig.BusyError, *rig.NoTurnError,
// *rig.NoTerminalError, *rig.InputTimeoutError or *rig.NoGateError, and
// errors.Is matches kind session_closed with rig.ErrSessionClosed.
type RemoteError struct {
	Type    explain.Type
	Kind    explain.Kind
	Message string
	Hint    string
	Fields  map[string]any
}

func (e *RemoteError) Error() string {
	if e.Message == "" {
		return "host: " + e.Kind.String()
	}
	return e.Message
}

// Is matches rig.ErrSessionClosed.
func (e *RemoteError) Is(target error) bool {
	return target == rig.ErrSessionClosed && e.Kind == explain.KindSessionClosed
}

// As rebuilds the rig error a RemoteError stands for.
func (e *RemoteError) As(target any) bool {
	switch t := target.(type) {
	case **rig.BusyError:
		if e.Kind == explain.KindBusy {
			*t = &rig.BusyError{TurnID: e.str("turn_id"), Index: int(e.num("index"))}
			return true
		}
	case **rig.NoTurnError:
		if e.Kind == explain.KindNoTurn {
			*t = &rig.NoTurnError{}
			return true
		}
	case **rig.NoTerminalError:
		if e.Kind == explain.KindNoTerminal {
			*t = &rig.NoTerminalError{TurnID: e.str("turn_id")}
			return true
		}
	case **rig.InputTimeoutError:
		if e.Kind == explain.KindInputTimeout {
			*t = &rig.InputTimeoutError{TurnID: e.str("turn_id"), Written: int(e.num("written")), Len: int(e.num("len"))}
			return true
		}
	case **rig.NoGateError:
		if e.Kind == explain.KindNoGate {
			*t = &rig.NoGateError{GateID: e.str("gate_id"), Open: e.str("open")}
			return true
		}
	}
	return false
}

func (e *RemoteError) str(k string) string {
	s, _ := e.Fields[k].(string)
	return s
}

func (e *RemoteError) num(k string) int64 {
	n, _ := e.Number(k)
	return n
}

// Number returns the typed field k as an integer, false when it is absent
// or not an integer (fields decoded from JSON are json.Number).
func (e *RemoteError) Number(k string) (int64, bool) {
	switch v := e.Fields[k].(type) {
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	case float64:
		return int64(v), v == float64(int64(v))
	case int:
		return int64(v), true
	case int64:
		return v, true
	case uint64:
		return int64(v), true
	}
	return 0, false
}

// MarshalJSON writes {"type","kind","message",…fields (sorted),"hint"}.
func (e *RemoteError) MarshalJSON() ([]byte, error) {
	b := []byte(`{"type":`)
	b = event.AppendString(b, e.Type.String())
	b = append(b, `,"kind":`...)
	b = event.AppendString(b, e.Kind.String())
	b = append(b, `,"message":`...)
	b = event.AppendString(b, e.Message)
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		if k != "type" && k != "kind" && k != "message" && k != "hint" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, err := json.Marshal(e.Fields[k])
		if err != nil {
			return nil, err
		}
		b = append(b, ',')
		b = event.AppendString(b, k)
		b = append(b, ':')
		b = append(b, v...)
	}
	if e.Hint != "" {
		b = append(b, `,"hint":`...)
		b = event.AppendString(b, e.Hint)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
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
	e.Type, _ = explain.ParseType(typ)
	e.Kind, _ = explain.ParseKind(kind)
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

// ProtocolMismatchError: the client and the host speak different protocol
// versions. The old host keeps running; Hint says how to stop it.
type ProtocolMismatchError struct {
	Client        int
	Server        int
	ServerVersion string
	Session       string
	PID           int
	Hint          string
}

func (e *ProtocolMismatchError) Error() string {
	msg := fmt.Sprintf("host speaks protocol %d, this looprig speaks %d", e.Server, e.Client)
	if e.ServerVersion != "" {
		msg += " (host version " + e.ServerVersion + ")"
	}
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// Explanation classifies it (explain.Explainer): kind protocol_mismatch,
// as a host that refuses a client's hello says.
func (e *ProtocolMismatchError) Explanation() explain.Explanation {
	return explain.Of(explain.KindProtocolMismatch,
		explain.Field{Name: "session", Value: e.Session}, explain.Field{Name: "pid", Value: e.PID},
		explain.Field{Name: "client_protocol", Value: e.Client}, explain.Field{Name: "server_protocol", Value: e.Server},
		explain.Field{Name: "server_version", Value: e.ServerVersion})
}

// stopHint says how to stop a host that speaks another protocol.
func stopHint(session string, pid int) string {
	id := session
	if id == "" {
		id = "ID"
	}
	h := "stop the old host with 'looprig stop " + rig.ShortID(id) + "'"
	if pid > 0 {
		h += " (or kill " + strconv.Itoa(pid) + ")"
	}
	return h + ", then attach again"
}

// StreamLostError ends a Stream that fell behind: the host (or, when
// Local, the client's own queue) could not keep a durable event for it.
// LastSeq is the last sequence the stream delivered; subscribe again after
// it to go on without a gap.
type StreamLostError struct {
	LastSeq uint64
	Local   bool
	Message string
}

func (e *StreamLostError) Error() string {
	if e.Message != "" {
		return e.Message
	}
	where := "host"
	if e.Local {
		where = "client"
	}
	return fmt.Sprintf("host: subscription fell behind (%s queue full) after seq %d; subscribe again after it", where, e.LastSeq)
}

// HostClosedError: the host closed the connection, saying why (Reason:
// "session_stopped", "session_faulted", "server_stopping"); Err is the
// session's fault, if any.
type HostClosedError struct {
	Reason string
	Err    *RemoteError
}

func (e *HostClosedError) Error() string {
	msg := "host closed the connection: " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *HostClosedError) Unwrap() error {
	if e.Err == nil {
		return nil
	}
	return e.Err
}

// Stream and client ends.
var (
	// ErrSessionEnded ends a Stream whose session stopped; everything up to
	// its SessionStopped was delivered.
	ErrSessionEnded = errors.New("host: the session stopped")
	// ErrStreamClosed ends a Stream closed by Close, or replaced by a later
	// Subscribe on the same client.
	ErrStreamClosed = errors.New("host: stream closed")
	// ErrClientClosed is returned by the calls of a closed Client.
	ErrClientClosed = errors.New("host: client closed")
)

// protoErr is an error of the protocol itself (kind bad_request,
// unknown_type, line_too_long, protocol_mismatch, peer_refused,
// event_too_large or too_many_clients).
func protoErr(kind explain.Kind, msg string, fields map[string]any) *RemoteError {
	return &RemoteError{Type: kind.Type(), Kind: kind, Message: msg, Fields: fields}
}
