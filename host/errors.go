package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// Error kinds of the protocol itself (rig errors keep the CLI's kinds).
const (
	KindBadRequest       = "bad_request"       // a malformed line or request
	KindUnknownType      = "unknown_type"      // a request type this host does not know
	KindLineTooLong      = "line_too_long"     // a request line over MaxLine
	KindProtocolMismatch = "protocol_mismatch" // client and host speak different protocols
	KindPeerRefused      = "peer_refused"      // the peer runs as another uid
	KindEventTooLarge    = "event_too_large"   // an event does not fit in MaxServerLine
	// KindLeaseLost is the session's own error (and a stream's end) when
	// another process broke its lease: fields epoch, new_epoch, reason.
	KindLeaseLost = "lease_lost"
)

// RemoteError is an error reported by the host, in the shape of the CLI's
// JSON errors. Fields holds the typed fields (numbers as json.Number).
//
// errors.As turns a RemoteError of kind busy, no_turn, no_terminal,
// input_timeout or no_gate into *rig.BusyError, *rig.NoTurnError,
// *rig.NoTerminalError, *rig.InputTimeoutError or *rig.NoGateError, and
// errors.Is
// matches kind session_closed with rig.ErrSessionClosed.
type RemoteError struct {
	Type    string
	Kind    string
	Message string
	Hint    string
	Fields  map[string]any
}

func (e *RemoteError) Error() string {
	if e.Message == "" {
		return "host: " + e.Kind
	}
	return e.Message
}

// Is matches rig.ErrSessionClosed.
func (e *RemoteError) Is(target error) bool {
	return target == rig.ErrSessionClosed && e.Kind == "session_closed"
}

// As rebuilds the rig error a RemoteError stands for.
func (e *RemoteError) As(target any) bool {
	switch t := target.(type) {
	case **rig.BusyError:
		if e.Kind == "busy" {
			*t = &rig.BusyError{TurnID: e.str("turn_id"), Index: int(e.num("index"))}
			return true
		}
	case **rig.NoTurnError:
		if e.Kind == "no_turn" {
			*t = &rig.NoTurnError{}
			return true
		}
	case **rig.NoTerminalError:
		if e.Kind == "no_terminal" {
			*t = &rig.NoTerminalError{TurnID: e.str("turn_id")}
			return true
		}
	case **rig.InputTimeoutError:
		if e.Kind == "input_timeout" {
			*t = &rig.InputTimeoutError{TurnID: e.str("turn_id"), Written: int(e.num("written")), Len: int(e.num("len"))}
			return true
		}
	case **rig.NoGateError:
		if e.Kind == "no_gate" {
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
	b = event.AppendString(b, e.Type)
	b = append(b, `,"kind":`...)
	b = event.AppendString(b, e.Kind)
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
	e.Type, _ = m["type"].(string)
	e.Kind, _ = m["kind"].(string)
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

// describe maps an error a rig call returned to what a client sees.
func describe(err error) *RemoteError {
	var (
		busy    *rig.BusyError
		noGate  *rig.NoGateError
		noTurn  *rig.NoTurnError
		noTerm  *rig.NoTerminalError
		timeout *rig.InputTimeoutError
		jLost   *journal.JournalLeaseLostError
		fenced  *journal.FencedError
		rLost   *rig.WorkspaceRootLeaseLostError
		sLost   *storage.LeaseLostError
		stuck   *rig.EngineUnresponsiveError
		fault   *hub.FaultError
		tooLong *SocketPathTooLongError
	)
	d := &RemoteError{Type: "Error", Kind: "error", Message: err.Error()}
	switch {
	case errors.As(err, &busy):
		d.Type, d.Kind = "BusyError", "busy"
		d.Fields = map[string]any{"turn_id": busy.TurnID, "index": busy.Index}
		d.Hint = "interrupt the running turn or wait for it"
	case errors.As(err, &noTurn):
		d.Type, d.Kind = "NoTurnError", "no_turn"
	case errors.As(err, &noTerm):
		d.Type, d.Kind = "NoTerminalError", "no_terminal"
		d.Fields = map[string]any{"turn_id": noTerm.TurnID}
		d.Hint = "the turn runs on pipes (tty = false in its profile) or has just ended"
	case errors.As(err, &timeout):
		d.Type, d.Kind = "InputTimeoutError", "input_timeout"
		d.Fields = map[string]any{"turn_id": timeout.TurnID, "written": timeout.Written, "len": timeout.Len}
		d.Hint = "the turn is not reading its input"
	case errors.As(err, &noGate):
		d.Type, d.Kind = "NoGateError", "no_gate"
		d.Fields = map[string]any{"gate_id": noGate.GateID, "open": noGate.Open}
	case errors.Is(err, rig.ErrSessionClosed):
		d.Type, d.Kind = "SessionClosedError", "session_closed"
		d.Hint = "the session is shutting down; restore it to go on"
	case errors.As(err, &stuck):
		d.Type, d.Kind = "EngineUnresponsiveError", "engine_unresponsive"
		d.Fields = map[string]any{"session": stuck.Session.String(), "turn_id": stuck.Turn, "waited_ms": stuck.Waited.Milliseconds()}
		d.Hint = "the turn's engine ignored the interrupt; the session is listed as crashed: restore it"
	case errors.As(err, &jLost), errors.As(err, &fenced), errors.As(err, &rLost), errors.As(err, &sLost):
		d.Type, d.Kind = "LeaseLostError", KindLeaseLost
		d.Fields = map[string]any{}
		switch {
		case jLost != nil:
			d.Fields["epoch"] = jLost.Epoch
		case rLost != nil:
			d.Fields["epoch"], d.Fields["root"] = rLost.Epoch, rLost.Root
		case fenced != nil:
			d.Fields["epoch"] = fenced.Epoch
		}
		if errors.As(err, &sLost) {
			d.Fields["reason"], d.Fields["new_epoch"] = string(sLost.Reason), sLost.NewEpoch
		}
		d.Hint = "another process broke the lease ('looprig lease break'); see who holds it with 'looprig ls'"
	case errors.As(err, &fault):
		d.Type, d.Kind = "PersistenceFaultError", "persistence_fault"
		d.Fields = map[string]any{"event_type": string(fault.Type)}
	case errors.Is(err, context.DeadlineExceeded):
		d.Type, d.Kind = "TimeoutError", "timeout"
	case errors.Is(err, context.Canceled):
		d.Type, d.Kind = "CanceledError", "canceled"
	case errors.As(err, &tooLong):
		d.Type, d.Kind = "SocketPathTooLongError", "socket_path_too_long"
	}
	return d
}

// protoErr is an error of the protocol itself.
func protoErr(kind, msg string, fields map[string]any) *RemoteError {
	typ := map[string]string{
		KindBadRequest: "BadRequestError", KindUnknownType: "UnknownTypeError", KindLineTooLong: "LineTooLongError",
		KindProtocolMismatch: "ProtocolMismatchError", KindPeerRefused: "PeerRefusedError", KindEventTooLarge: "EventTooLargeError",
	}[kind]
	if typ == "" {
		typ = "Error"
	}
	return &RemoteError{Type: typ, Kind: kind, Message: msg, Fields: fields}
}
