package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/fault"
)

// The kinds of the protocol's own errors, as the host names them.
const (
	KindBadRequest       = fault.KindBadRequest       // a malformed line or request
	KindUnknownType      = fault.KindUnknownType      // a request type this host does not know
	KindLineTooLong      = fault.KindLineTooLong      // a request line over MaxLine
	KindProtocolMismatch = fault.KindProtocolMismatch // client and host speak different protocols
	KindPeerRefused      = fault.KindPeerRefused      // the peer runs as another uid
	KindEventTooLarge    = fault.KindEventTooLarge    // an event does not fit in MaxServerLine
	KindTooManyClients   = fault.KindTooManyClients   // the host serves as many clients as it may
)

// HostUnresponsiveError: the host of a session said nothing for Waited:
// it neither answered (its hello, or a request: Request names which) nor
// said how far it was. A host stopped (SIGSTOP, ^Z) or wedged does that;
// only a lease break takes the session from it.
type HostUnresponsiveError struct {
	Session string
	PID     int    // the host's; 0 when not known
	Request string // "hello", "shutdown", ...
	Waited  time.Duration
}

func (e *HostUnresponsiveError) Error() string {
	who := "the host"
	if e.PID > 0 {
		who = "host pid " + strconv.Itoa(e.PID)
	}
	msg := fmt.Sprintf("%s of session %s said nothing for %s (%s unanswered): it is stopped or wedged",
		who, rig.ShortID(e.Session), e.Waited.Round(100*time.Millisecond), e.Request)
	if e.Request != "hello" {
		// It was sent: a host that runs again reads it and carries it out.
		msg += fmt.Sprintf("; the %s request was sent, and the host carries it out if it runs again", e.Request)
	}
	return msg
}

// Explanation classifies it (fault.Explainer): kind host_unresponsive.
func (e *HostUnresponsiveError) Explanation() fault.Explanation {
	return fault.Of(fault.KindHostUnresponsive, fault.Field{Name: "session", Value: e.Session},
		fault.Field{Name: "pid", Value: e.PID}, fault.Field{Name: "request", Value: e.Request},
		fault.Field{Name: "waited_ms", Value: e.Waited.Milliseconds()})
}

// RemoteError is an error reported by the host, in the shape of the CLI's
// JSON errors. Type and Kind are rig/explain's classification, decoded
// from the wire's "type" and "kind" (a name this client does not know is
// TypeError, KindError: unclassified). Fields holds the typed fields
// (numbers as json.Number once decoded); Hint is the host's own advice on
// its protocol's errors (how to stop a host that speaks another protocol),
// never the words for a remedy, which each presenter has.
//
// errors.As turns a RemoteError of kind busy, no_turn, no_terminal,
// input_timeout, no_gate or from_turn into *rig.BusyError,
// *rig.NoTurnError, *rig.NoTerminalError, *rig.InputTimeoutError,
// *rig.NoGateError or *rig.FromTurnError, and
// errors.Is matches kind session_closed with rig.ErrSessionClosed.
type RemoteError struct {
	Type    fault.Type
	Kind    fault.Kind
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
	return target == rig.ErrSessionClosed && e.Kind == fault.KindSessionClosed
}

// As rebuilds the rig error a RemoteError stands for.
func (e *RemoteError) As(target any) bool {
	switch t := target.(type) {
	case **rig.BusyError:
		if e.Kind == fault.KindBusy {
			ckpt, _ := e.Fields["checkpointing"].(bool)
			*t = &rig.BusyError{TurnID: e.str("turn_id"), Index: int(e.num("index")), Checkpointing: ckpt}
			return true
		}
	case **rig.NoTurnError:
		if e.Kind == fault.KindNoTurn {
			*t = &rig.NoTurnError{}
			return true
		}
	case **rig.NoTerminalError:
		if e.Kind == fault.KindNoTerminal {
			*t = &rig.NoTerminalError{TurnID: e.str("turn_id")}
			return true
		}
	case **rig.InputTimeoutError:
		if e.Kind == fault.KindInputTimeout {
			*t = &rig.InputTimeoutError{TurnID: e.str("turn_id"), Written: int(e.num("written")), Len: int(e.num("len"))}
			return true
		}
	case **rig.NoGateError:
		if e.Kind == fault.KindNoGate {
			*t = &rig.NoGateError{GateID: e.str("gate_id"), Open: e.str("open")}
			return true
		}
	case **rig.FromTurnError:
		if e.Kind == fault.KindFromTurn {
			*t = &rig.FromTurnError{Session: e.str("session"), TurnID: e.str("turn_id"), Request: e.str("request"), GateID: e.str("gate_id"),
				Client: event.Client{Kind: e.str("client"), PID: int(e.num("pid"))}, Reason: e.str("reason"), Via: int(e.num("via"))}
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

// Explanation classifies it (fault.Explainer): kind protocol_mismatch,
// as a host that refuses a client's hello says.
func (e *ProtocolMismatchError) Explanation() fault.Explanation {
	return fault.Of(fault.KindProtocolMismatch,
		fault.Field{Name: "session", Value: e.Session}, fault.Field{Name: "pid", Value: e.PID},
		fault.Field{Name: "client_protocol", Value: e.Client}, fault.Field{Name: "server_protocol", Value: e.Server},
		fault.Field{Name: "server_version", Value: e.ServerVersion})
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
func protoErr(kind fault.Kind, msg string, fields map[string]any) *RemoteError {
	return &RemoteError{Type: kind.Type(), Kind: kind, Message: msg, Fields: fields}
}
