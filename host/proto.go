package host

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"looprig/rig/explain"
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
	kind explain.Kind
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
