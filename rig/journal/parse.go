package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"looprig/rig/event"
)

// A strict reader for the record envelope and the event envelope inside it.
// The event's data and a command are handed to encoding/json (strictly,
// unknown fields refused) as sub-slices. Strings decode exactly as
// encoding/json decodes them (escapes, surrogate pairs, invalid UTF-8 as
// U+FFFD); numbers must be plain unsigned integers; keys must match
// exactly, once; null is refused.

type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("at byte %d: %s", e.off, e.msg) }

type lexer struct {
	b []byte
	i int
}

func (l *lexer) fail(msg string) error { return &syntaxError{off: l.i, msg: msg} }

func (l *lexer) ws() {
	for l.i < len(l.b) {
		switch l.b[l.i] {
		case ' ', '\t', '\n', '\r':
			l.i++
		default:
			return
		}
	}
}

func (l *lexer) consume(c byte) bool {
	l.ws()
	if l.i < len(l.b) && l.b[l.i] == c {
		l.i++
		return true
	}
	return false
}

// object reads an object, calling member for each key with the lexer at
// the start of its value. Each key may appear at most once among those
// named in keys (member rejects the others).
func (l *lexer) object(member func(key []byte) error) error {
	if !l.consume('{') {
		return l.fail("expected an object")
	}
	if l.consume('}') {
		return nil
	}
	for {
		l.ws()
		key, err := l.stringBytes()
		if err != nil {
			return err
		}
		if !l.consume(':') {
			return l.fail("expected ':'")
		}
		l.ws()
		if err := member(key); err != nil {
			return err
		}
		if l.consume(',') {
			continue
		}
		if l.consume('}') {
			return nil
		}
		return l.fail("expected ',' or '}'")
	}
}

// stringBytes reads a string and returns its decoded bytes. Without escapes
// or invalid UTF-8 they alias the input.
func (l *lexer) stringBytes() ([]byte, error) {
	if l.i >= len(l.b) || l.b[l.i] != '"' {
		return nil, l.fail("expected a string")
	}
	l.i++
	start := l.i
	simple := true
	for l.i < len(l.b) {
		c := l.b[l.i]
		switch {
		case c == '"':
			s := l.b[start:l.i]
			l.i++
			if simple && utf8.Valid(s) {
				return s, nil
			}
			return unquote(s, start)
		case c == '\\':
			simple = false
			l.i += 2
			continue
		case c < 0x20:
			return nil, l.fail("control character in string")
		}
		l.i++
	}
	return nil, l.fail("unterminated string")
}

func (l *lexer) string() (string, error) {
	b, err := l.stringBytes()
	return string(b), err
}

// uint reads a non-negative integer without fraction or exponent.
func (l *lexer) uint() (uint64, error) {
	start := l.i
	if l.i >= len(l.b) || l.b[l.i] < '0' || l.b[l.i] > '9' {
		return 0, l.fail("expected an unsigned integer")
	}
	var n uint64
	if l.b[l.i] == '0' {
		l.i++
	} else {
		for l.i < len(l.b) && l.b[l.i] >= '0' && l.b[l.i] <= '9' {
			d := uint64(l.b[l.i] - '0')
			if n > (1<<64-1-d)/10 {
				l.i = start
				return 0, l.fail("integer overflows 64 bits")
			}
			n = n*10 + d
			l.i++
		}
	}
	if l.i < len(l.b) {
		switch l.b[l.i] {
		case '.', 'e', 'E':
			return 0, l.fail("expected an integer")
		case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			return 0, l.fail("leading zero")
		}
	}
	return n, nil
}

// composite skips an object or array and returns it. Only its strings and
// nesting are checked here: the slice must be fully validated by whoever
// decodes it (encoding/json does).
func (l *lexer) composite() ([]byte, error) {
	start := l.i
	if l.i >= len(l.b) || (l.b[l.i] != '{' && l.b[l.i] != '[') {
		return nil, l.fail("expected an object")
	}
	depth := 0
	for l.i < len(l.b) {
		switch l.b[l.i] {
		case '"':
			l.i++
			for l.i < len(l.b) && l.b[l.i] != '"' {
				if l.b[l.i] == '\\' {
					l.i++
				}
				l.i++
			}
			if l.i >= len(l.b) {
				return nil, l.fail("unterminated string")
			}
		case '{', '[':
			depth++
			if depth > 10000 {
				return nil, l.fail("nested too deeply")
			}
		case '}', ']':
			depth--
			if depth == 0 {
				l.i++
				return l.b[start:l.i], nil
			}
		}
		l.i++
	}
	return nil, l.fail("unterminated object")
}

// unescaped maps the byte after a backslash in a one-byte escape to the
// byte it stands for.
var unescaped = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// unquote decodes the body of a string that has escapes or invalid UTF-8,
// as encoding/json does. off is its offset, for errors.
func unquote(s []byte, off int) ([]byte, error) {
	bad := func(msg string) ([]byte, error) { return nil, &syntaxError{off: off, msg: msg} }
	out := make([]byte, 0, len(s)+2*utf8.UTFMax)
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			if r+1 >= len(s) {
				return bad("truncated escape")
			}
			switch s[r+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				out = append(out, unescaped[s[r+1]])
				r += 2
			case 'u':
				rr := getu4(s[r:])
				if rr < 0 {
					return bad("invalid \\u escape")
				}
				r += 6
				if utf16.IsSurrogate(rr) {
					rr1 := getu4(s[r:])
					if dec := utf16.DecodeRune(rr, rr1); dec != unicode.ReplacementChar {
						out = utf8.AppendRune(out, dec)
						r += 6
						break
					}
					rr = unicode.ReplacementChar
				}
				out = utf8.AppendRune(out, rr)
			default:
				return bad("invalid escape")
			}
		case c == '"' || c < ' ':
			return bad("invalid character in string")
		case c < utf8.RuneSelf:
			out = append(out, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			out = utf8.AppendRune(out, rr) // RuneError for an invalid byte, as encoding/json
		}
	}
	return out, nil
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c = c - '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

var errDuplicate = errors.New("repeated field")

// parseRecord reads a record envelope. The event's data aliases payload.
func parseRecord(payload []byte) (recordWire, error) {
	var w recordWire
	l := lexer{b: payload}
	var seen uint8
	once := func(bit uint8, key []byte) error {
		if seen&bit != 0 {
			return fmt.Errorf("%w %q", errDuplicate, key)
		}
		seen |= bit
		return nil
	}
	err := l.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "v":
			if err = once(1, key); err == nil {
				var v uint64
				v, err = l.uint()
				if v > 1<<31 {
					v = 1 << 31 // any unknown version
				}
				w.V = int(v)
			}
		case "kind":
			if err = once(2, key); err == nil {
				var k []byte
				k, err = l.stringBytes()
				switch string(k) {
				case string(KindFence):
					w.Kind = KindFence
				case string(KindEvent):
					w.Kind = KindEvent
				case string(KindCommand):
					w.Kind = KindCommand
				default:
					w.Kind = Kind(k)
				}
			}
		case "id": // written by earlier versions; ignored (see recordWire)
			if err = once(4, key); err == nil {
				w.ID, err = l.string()
			}
		case "epoch":
			if err = once(8, key); err == nil {
				w.Epoch, err = l.uint()
			}
		case "loop_id":
			if err = once(16, key); err == nil {
				w.LoopID, err = l.string()
			}
		case "event":
			if err = once(32, key); err == nil {
				w.Event, err = l.event()
			}
		case "command":
			if err = once(64, key); err == nil {
				var raw []byte
				if raw, err = l.composite(); err == nil {
					w.Command = new(Command)
					err = strictJSON(raw, w.Command)
				}
			}
		case "at":
			if err = once(128, key); err == nil {
				var s []byte
				if s, err = l.stringBytes(); err == nil {
					w.At = new(time.Time)
					err = w.At.UnmarshalText(s)
				}
			}
		default:
			err = fmt.Errorf("unknown field %q", key)
		}
		return err
	})
	if err == nil {
		l.ws()
		if l.i != len(l.b) {
			err = l.fail("data after the record")
		}
	}
	return w, err
}

// event reads an event envelope {"v":…,"type":…,"data":{…}}.
func (l *lexer) event() (*event.Raw, error) {
	var raw event.Raw
	var seen uint8
	err := l.object(func(key []byte) error {
		var err error
		bit := uint8(0)
		switch string(key) {
		case "v":
			bit = 1
			var v uint64
			v, err = l.uint()
			if v > 1<<31 {
				v = 1 << 31
			}
			raw.V = int(v)
		case "type":
			bit = 2
			var t []byte
			if t, err = l.stringBytes(); err == nil {
				raw.Type = internType(t)
			}
		case "data":
			bit = 4
			var d []byte
			if d, err = l.composite(); err == nil {
				raw.Data = d
			}
		default:
			return fmt.Errorf("unknown event field %q", key)
		}
		if seen&bit != 0 {
			return fmt.Errorf("%w %q", errDuplicate, key)
		}
		seen |= bit
		return err
	})
	if err != nil {
		return nil, err
	}
	return &raw, nil
}

var knownTypes = func() map[string]event.Type {
	m := make(map[string]event.Type)
	for _, info := range event.Registered() {
		m[string(info.Type)] = info.Type
	}
	return m
}()

// internType avoids allocating the names of registered types.
func internType(b []byte) event.Type {
	if t, ok := knownTypes[string(b)]; ok {
		return t
	}
	return event.Type(b)
}

// strictJSON decodes exactly one JSON value from data into v, refusing
// unknown fields and anything after it.
func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.InputOffset() != int64(len(data)) {
		return errors.New("data after the JSON value")
	}
	return nil
}
