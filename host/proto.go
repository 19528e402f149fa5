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
const ProtocolVersion = 3

// MaxLine bounds a request line (client to host), newline excluded.
const MaxLine = 1 << 20

// MaxServerLine bounds a line from the host: an event carries up to a
// journal record's payload (storage.MaxPayload, 1 MiB) plus its envelope.
const MaxServerLine = 2 << 20

// requestError refuses a line: kind KindBadRequest (malformed: counts
// towards closing the connection), KindUnknownType or KindLineTooLong. id
// is the request's id when it could be read.
type requestError struct {
	kind explain.Kind
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

// decodeRequest decodes one request line into its type's struct, and
// checks it.
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
	newRequest, ok := requestTypes[head.Type]
	if !ok {
		return nil, &requestError{kind: KindUnknownType, id: head.ID, msg: fmt.Sprintf("unknown request type %.64q", head.Type)}
	}
	r := newRequest()
	if err := json.Unmarshal(line, r); err != nil {
		return nil, &requestError{kind: KindBadRequest, id: head.ID, msg: "malformed request: " + err.Error()}
	}
	if msg := r.check(); msg != "" {
		return nil, &requestError{kind: KindBadRequest, id: head.ID, msg: msg}
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
// holds more than max bytes plus its 64 KiB buffer: a longer line is
// errLineTooLong (and the reader is unusable after), and the room a long
// line took is given back before the next one is read.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// keepLine is the room a lineReader keeps between lines.
const keepLine = 64 << 10

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its newline; it is valid until the
// next call. A final line without a newline is returned at EOF.
func (l *lineReader) next() ([]byte, error) {
	if cap(l.buf) > keepLine {
		l.buf = nil
	}
	l.buf = l.buf[:0]
	for {
		frag, err := l.r.ReadSlice('\n')
		n := len(frag)
		if err == nil {
			n-- // the newline
		}
		if len(l.buf)+n > l.max {
			l.buf = nil
			return nil, errLineTooLong
		}
		if err == nil {
			if len(l.buf) == 0 {
				return frag[:n], nil
			}
			l.grow(n)
			l.buf = append(l.buf, frag[:n]...)
			return l.buf, nil
		}
		l.grow(len(frag))
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

// grow makes room for n more bytes, doubling up to max: a partial line
// never holds more than max bytes.
func (l *lineReader) grow(n int) {
	need := len(l.buf) + n
	if need <= cap(l.buf) {
		return
	}
	c := min(max(2*cap(l.buf), need, 4<<10), max(l.max, need))
	b := make([]byte, len(l.buf), c)
	copy(b, l.buf)
	l.buf = b
}
