package host

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"looprig/rig"
	"looprig/rig/event"
)

// ProtocolVersion is the protocol this package speaks.
const ProtocolVersion = 1

// MaxLine bounds a request line (client to host), newline excluded.
const MaxLine = 1 << 20

// MaxServerLine bounds a line from the host: an event carries up to a
// journal record's payload (storage.MaxPayload, 1 MiB) plus its envelope.
const MaxServerLine = 2 << 20

// Request types.
const (
	reqHello       = "hello"
	reqStatus      = "status"
	reqSubscribe   = "subscribe"
	reqUnsubscribe = "unsubscribe"
	reqSubmit      = "submit"
	reqInterrupt   = "interrupt"
	reqRespondGate = "respond_gate"
	reqShutdown    = "shutdown"
	reqDetach      = "detach"
	reqInput       = "input"
	reqResize      = "resize"
)

// request is one client line. Fields a type does not use are ignored, as
// are unknown fields (a later client of the same protocol may add optional
// ones).
type request struct {
	Type     string  `json:"type"`
	ID       uint64  `json:"id,omitempty"`
	Protocol int     `json:"protocol,omitempty"`
	Version  string  `json:"version,omitempty"`
	AfterSeq uint64  `json:"after_seq,omitempty"`
	Sub      uint64  `json:"sub,omitempty"` // unsubscribe: only this subscription (0: whichever is open)
	Input    *string `json:"input,omitempty"`
	GateID   string  `json:"gate_id,omitempty"`
	Approve  *bool   `json:"approve,omitempty"`
	EOF      bool    `json:"eof,omitempty"`  // input: an end of file instead of text
	From     string  `json:"from,omitempty"` // input: who sends it, for the journal
	Cols     int     `json:"cols,omitempty"` // resize
	Rows     int     `json:"rows,omitempty"` // resize
}

// requestError refuses a line: kind KindBadRequest (malformed: counts
// towards closing the connection) or KindUnknownType. ID is the request's
// id when it could be read.
type requestError struct {
	kind string
	id   uint64
	msg  string
}

func (e *requestError) Error() string { return e.msg }

// decodeRequest decodes and checks one request line.
func decodeRequest(line []byte) (request, error) {
	var r request
	if len(line) > MaxLine {
		return r, &requestError{kind: KindLineTooLong, msg: fmt.Sprintf("request line longer than %d bytes", MaxLine)}
	}
	if !isObject(line) {
		return request{}, &requestError{kind: KindBadRequest, msg: "malformed request: not a JSON object"}
	}
	if tooDeep(line, maxRequestDepth) {
		// encoding/json allocates per level of nesting (up to 10000 deep):
		// a request has no use for more than a few.
		return request{}, &requestError{kind: KindBadRequest, msg: fmt.Sprintf("malformed request: nested deeper than %d levels", maxRequestDepth)}
	}
	if err := json.Unmarshal(line, &r); err != nil {
		var probe struct {
			ID uint64 `json:"id"`
		}
		_ = json.Unmarshal(line, &probe)
		return request{}, &requestError{kind: KindBadRequest, id: probe.ID, msg: "malformed request: " + err.Error()}
	}
	bad := func(msg string) (request, error) {
		return request{}, &requestError{kind: KindBadRequest, id: r.ID, msg: msg}
	}
	switch r.Type {
	case "":
		return bad("request without a type")
	case reqHello:
		if r.Protocol <= 0 {
			return bad("hello without a protocol version")
		}
		return r, nil
	case reqStatus, reqSubscribe, reqUnsubscribe, reqInterrupt, reqShutdown, reqDetach:
	case reqSubmit:
		if r.Input == nil {
			return bad("submit without an input")
		}
	case reqInput:
		if (r.Input == nil) == !r.EOF {
			return bad("input needs either an input or eof (not both)")
		}
	case reqResize:
		if r.Cols < 1 || r.Rows < 1 || r.Cols > 65535 || r.Rows > 65535 {
			return bad("resize needs cols and rows, 1..65535")
		}
	case reqRespondGate:
		if r.GateID == "" {
			return bad("respond_gate without a gate_id")
		}
		if r.Approve == nil {
			return bad("respond_gate without approve (true or false)")
		}
	default:
		return request{}, &requestError{kind: KindUnknownType, id: r.ID, msg: fmt.Sprintf("unknown request type %.64q", r.Type)}
	}
	if r.ID == 0 {
		return bad(r.Type + " without an id (ids start at 1)")
	}
	return r, nil
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

// maxRequestDepth bounds the nesting of a request's JSON.
const maxRequestDepth = 16

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

// errLineTooLong: a line went past the reader's bound.
var errLineTooLong = errors.New("line too long")

// lineReader reads newline-terminated lines of at most max bytes. It never
// holds more than max bytes plus its buffer: a longer line is
// errLineTooLong (and the reader is unusable after).
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its newline; it is valid until the
// next call. A final line without a newline is returned at EOF.
func (l *lineReader) next() ([]byte, error) {
	l.buf = l.buf[:0]
	for {
		frag, err := l.r.ReadSlice('\n')
		n := len(frag)
		if err == nil {
			n-- // the newline
		}
		if len(l.buf)+n > l.max {
			return nil, errLineTooLong
		}
		if err == nil {
			if len(l.buf) == 0 {
				return frag[:n], nil
			}
			l.buf = append(l.buf, frag[:n]...)
			return l.buf, nil
		}
		l.buf = append(l.buf, frag...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) && len(l.buf) > 0 {
			return l.buf, nil
		}
		return nil, err
	}
}

// ---- host to client ---------------------------------------------------------

// Hello is what the host says about itself in its hello.
type Hello struct {
	Protocol int    `json:"protocol"`
	Version  string `json:"version"`
	Session  string `json:"session"`
	PID      int    `json:"pid"`
	Epoch    uint64 `json:"epoch"`
}

// Status is a snapshot of the hosted session: rig.Status over the wire.
type Status struct {
	Session   string      `json:"session"`
	Title     string      `json:"title"`
	Profile   string      `json:"profile"`
	Engine    string      `json:"engine"`
	Epoch     uint64      `json:"epoch"`
	LoopID    string      `json:"loop_id"`
	Placement string      `json:"placement"`
	Workspace string      `json:"workspace"`
	Root      string      `json:"root"`
	Tip       uint64      `json:"tip"`
	Turns     int         `json:"turns"`
	Turn      *TurnStatus `json:"turn"`
	// Terminal: the running turn has a terminal (input can be sent);
	// EchoOff: its echo is off (a password prompt: mask what is typed).
	Terminal bool         `json:"terminal"`
	EchoOff  bool         `json:"echo_off"`
	Gate     *GateStatus  `json:"gate"`
	Fault    *RemoteError `json:"fault"`
	Closed   bool         `json:"closed"`
	PID      int          `json:"pid"`
}

// TurnStatus describes the running turn.
type TurnStatus struct {
	ID      string    `json:"id"`
	Index   int       `json:"index"`
	Input   string    `json:"input"`
	Started time.Time `json:"started"`
}

// GateStatus describes the open gate.
type GateStatus struct {
	ID     string    `json:"id"`
	TurnID string    `json:"turn_id"`
	Prompt string    `json:"prompt"`
	Opened time.Time `json:"opened,omitzero"`
}

func statusOf(st rig.Status, pid int) Status {
	out := Status{
		Session: st.ID.String(), Title: st.Title, Profile: st.Profile, Engine: st.Engine, Epoch: st.Epoch,
		LoopID: st.LoopID, Placement: string(st.Placement), Workspace: st.Workspace, Root: st.Root,
		Tip: st.Tip, Turns: st.Turns, Closed: st.Closed, PID: pid,
	}
	if t := st.Turn; t != nil {
		out.Turn = &TurnStatus{ID: t.ID, Index: t.Index, Input: t.Input, Started: t.Started.UTC()}
	}
	if g := st.Gate; g != nil {
		out.Gate = &GateStatus{ID: g.ID, TurnID: g.TurnID, Prompt: g.Prompt, Opened: g.Opened}
	}
	if st.Fault != nil {
		out.Fault = describe(st.Fault)
	}
	return out
}

// Host message types.
const (
	msgHello   = "hello"
	msgReply   = "reply"
	msgEvent   = "event"
	msgDropped = "dropped"
	msgLost    = "lost"
	msgEnd     = "end"
	msgError   = "error"
	msgBye     = "bye"
)

// Reasons of "end" and "bye".
const (
	ReasonSessionStopped = "session_stopped"
	ReasonSessionFaulted = "session_faulted"
	ReasonServerStopping = "server_stopping"
	ReasonError          = "error"
)

type helloMsg struct {
	Type string `json:"type"`
	Hello
}

type replyMsg struct {
	Type   string       `json:"type"`
	ID     uint64       `json:"id"`
	OK     bool         `json:"ok"`
	Error  *RemoteError `json:"error,omitempty"`
	Status *Status      `json:"status,omitempty"`
	TurnID string       `json:"turn_id,omitempty"`
	Index  *int         `json:"index,omitempty"`
	Sub    uint64       `json:"sub,omitempty"`
	Hidden bool         `json:"hidden,omitempty"` // input: echo was off
}

type droppedMsg struct {
	Type  string `json:"type"`
	Sub   uint64 `json:"sub"`
	Count uint64 `json:"count"`
	Total uint64 `json:"total"`
}

type lostMsg struct {
	Type    string `json:"type"`
	Sub     uint64 `json:"sub"`
	LastSeq uint64 `json:"last_seq"`
	Message string `json:"message"`
}

type endMsg struct {
	Type    string       `json:"type"`
	Sub     uint64       `json:"sub"`
	LastSeq uint64       `json:"last_seq"`
	Reason  string       `json:"reason"`
	Error   *RemoteError `json:"error,omitempty"`
}

type errorMsg struct {
	Type  string       `json:"type"`
	Error *RemoteError `json:"error"`
}

type byeMsg struct {
	Type   string       `json:"type"`
	Reason string       `json:"reason"`
	Error  *RemoteError `json:"error,omitempty"`
}

// inMsg is any host line, as the client decodes it.
type inMsg struct {
	Type     string          `json:"type"`
	ID       uint64          `json:"id"`
	OK       bool            `json:"ok"`
	Error    *RemoteError    `json:"error"`
	Status   *Status         `json:"status"`
	TurnID   string          `json:"turn_id"`
	Index    int             `json:"index"`
	Sub      uint64          `json:"sub"`
	Hidden   bool            `json:"hidden"`
	Event    json.RawMessage `json:"event"`
	Count    uint64          `json:"count"`
	Total    uint64          `json:"total"`
	LastSeq  uint64          `json:"last_seq"`
	Reason   string          `json:"reason"`
	Message  string          `json:"message"`
	Protocol int             `json:"protocol"`
	Version  string          `json:"version"`
	Session  string          `json:"session"`
	PID      int             `json:"pid"`
	Epoch    uint64          `json:"epoch"`
}

// line encodes v as one line.
func line(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only this package's message types are encoded; none can fail.
		panic(fmt.Sprintf("host: encode %T: %v", v, err))
	}
	return b.Bytes()
}

// eventLine is {"type":"event","sub":N,"event":…}\n.
func eventLine(sub uint64, env event.Envelope) ([]byte, error) {
	b := make([]byte, 0, 256)
	b = append(b, `{"type":"event","sub":`...)
	b = strconv.AppendUint(b, sub, 10)
	b = append(b, `,"event":`...)
	b, err := AppendEnvelope(b, env)
	if err != nil {
		return nil, err
	}
	if len(b)+2 > MaxServerLine {
		return nil, fmt.Errorf("event %s seq %d is %d bytes encoded, more than %d", env.Event.Type(), env.Seq, len(b)+2, MaxServerLine)
	}
	return append(b, '}', '\n'), nil
}
