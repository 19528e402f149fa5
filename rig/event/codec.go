package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Version is the version of the event wire form written by Marshal. It is
// the only one Unmarshal accepts.
const Version = 1

// Marshal encodes ev in the versioned wire form
// {"v":1,"type":"…","data":{…}}. It refuses (*EncodeError) events not
// defined by this package, pointers to them, and enum fields outside their
// allowed values. The output is deterministic: the same event always
// encodes to the same bytes. HTML characters are not escaped.
func Marshal(ev Event) ([]byte, error) {
	var buf bytes.Buffer
	if err := AppendTo(&buf, ev); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// CheckDurable returns *EphemeralError when ev must not be persisted, and
// *EncodeError when ev is not an event of this package (nil included).
func CheckDurable(ev Event) error {
	if _, err := lookupValue(ev); err != nil {
		return err
	}
	if ev.Class() != Enduring {
		return &EphemeralError{Type: ev.Type()}
	}
	return nil
}

// AppendTo writes the wire form of ev to buf, like Marshal. On error buf
// may hold a partial encoding.
func AppendTo(buf *bytes.Buffer, ev Event) error {
	t, err := checkEncode(ev)
	if err != nil {
		return err
	}
	buf.WriteString(`{"v":1,"type":"`)
	buf.WriteString(string(t))
	buf.WriteString(`","data":`)
	if err := appendData(buf, ev, t); err != nil {
		return err
	}
	buf.WriteByte('}')
	return nil
}

// checkEncode returns the type of ev, or why ev cannot be encoded
// (*EncodeError): it is not an event of this package, or a field holds a
// value outside its allowed set.
func checkEncode(ev Event) (Type, error) {
	e, err := lookupValue(ev)
	if err != nil {
		return "", err
	}
	t := e.info.Type
	if v, ok := ev.(validator); ok {
		if err := v.validate(); err != nil {
			var iv *invalidValue
			field := ""
			if errors.As(err, &iv) {
				field = iv.field
			}
			return "", &EncodeError{Type: t, Field: field, Reason: "invalid value", Err: err}
		}
	}
	return t, nil
}

// appendData writes the data of the wire form of ev, of type t, which
// checkEncode accepted: a JSON object, without white space.
func appendData(buf *bytes.Buffer, ev Event, t Type) error {
	if appendDataFast(buf, ev) {
		return nil
	}
	start := buf.Len()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		return &EncodeError{Type: t, Reason: "json", Err: err}
	}
	// Encode ends with a newline.
	if buf.Len() > start && buf.Bytes()[buf.Len()-1] == '\n' {
		buf.Truncate(buf.Len() - 1)
	}
	buf.Truncate(start + len(LiteralReplacement(buf.Bytes()[start:])))
	return nil
}

// LiteralReplacement rewrites, in place, the \ufffd escapes encoding/json
// writes for invalid UTF-8 as a literal U+FFFD, which is what a decoded
// string holds and re-encodes to, and returns the shortened b. That makes
// the encoding canonical: Marshal(Unmarshal(Marshal(ev))) equals
// Marshal(ev) for every event. Package journal encodes the rest of its
// records the same way. b must be encoding/json output.
func LiteralReplacement(b []byte) []byte {
	const esc = `\ufffd`
	if !bytes.Contains(b, []byte(esc)) {
		return b
	}
	out := b[:0] // never longer than what was read: 6 bytes become 3
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

func lookupValue(ev Event) (*entry, error) {
	if ev == nil {
		return nil, &EncodeError{Reason: "nil event"}
	}
	t := ev.Type()
	e, ok := registry[t]
	if !ok {
		return nil, &EncodeError{Type: t, Reason: "unregistered event type"}
	}
	if got := reflect.TypeOf(ev); got != e.goType {
		return nil, &EncodeError{Type: t, Reason: fmt.Sprintf("Go type %v is not %v (events are values, not pointers)", got, e.goType)}
	}
	return e, nil
}

// Raw is the envelope of an encoded event with its data still encoded. It
// lets a container format (the journal record) decode the envelope as part
// of its own document and save a pass; Raw.Decode then applies every check
// Unmarshal applies. Decoding into Raw must refuse unknown fields (as a
// json.Decoder with DisallowUnknownFields does) for the result to be as
// strict as Unmarshal.
type Raw struct {
	V    int             `json:"v"`
	Type Type            `json:"type"`
	Data json.RawMessage `json:"data"`
}

// Decode decodes the event of r, failing closed like Unmarshal.
func (r Raw) Decode() (Event, error) {
	if r.V != Version {
		return nil, &DecodeError{Kind: DecodeVersion, Version: r.V, Type: r.Type,
			Detail: fmt.Sprintf("version %d is not %d", r.V, Version)}
	}
	e, ok := registry[r.Type]
	if !ok {
		return nil, &DecodeError{Kind: DecodeUnknownType, Version: r.V, Type: r.Type,
			Detail: fmt.Sprintf("unknown event type %q", r.Type)}
	}
	if !isObject(r.Data) {
		return nil, &DecodeError{Kind: DecodeInvalid, Version: r.V, Type: r.Type, Detail: "data is missing or not an object"}
	}
	ev, err := e.decode(r.Data)
	if err != nil {
		de := classify(err)
		de.Version, de.Type = r.V, r.Type
		return nil, de
	}
	if v, ok := ev.(validator); ok {
		if err := v.validate(); err != nil {
			return nil, &DecodeError{Kind: DecodeInvalid, Version: r.V, Type: r.Type, Err: err}
		}
	}
	if c, ok := ev.(canonicalizer); ok {
		ev = c.canonical()
	}
	return ev, nil
}

// Unmarshal decodes the wire form written by Marshal. Anything it does not
// fully understand is a *DecodeError: malformed JSON, a version other than
// Version, an unregistered type, a field unknown to the envelope or to the
// event's data, missing or non-object data, a JSON value of the wrong type,
// an enum value outside its set, or anything after the JSON value.
//
// Ephemeral events decode too; persistence layers refuse them separately.
//
// Known leniencies inherited from encoding/json: object keys match field
// names case-insensitively, a repeated key keeps its last value, and
// invalid UTF-8 in strings is replaced by U+FFFD.
func Unmarshal(b []byte) (Event, error) {
	var w Raw
	if err := strictDecode(b, &w); err != nil {
		de := classify(err)
		// Report an unknown version ahead of the fields that come with it.
		var probe struct {
			V    int  `json:"v"`
			Type Type `json:"type"`
		}
		if json.Unmarshal(b, &probe) == nil {
			de.Version, de.Type = probe.V, probe.Type
			if probe.V != Version {
				de.Kind, de.Detail, de.Err = DecodeVersion, fmt.Sprintf("version %d is not %d", probe.V, Version), nil
			}
		}
		return nil, de
	}
	return w.Decode()
}

func isObject(raw json.RawMessage) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		default:
			return false
		}
	}
	return false
}

// strictDecode decodes exactly one JSON value from data into v, refusing
// unknown fields and anything after the value.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if !onlySpace(data[dec.InputOffset():]) {
		return errTrailing
	}
	return nil
}

func onlySpace(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
		default:
			return false
		}
	}
	return true
}

func classify(err error) *DecodeError {
	var de *DecodeError
	if errors.As(err, &de) {
		c := *de
		return &c
	}
	var syn *json.SyntaxError
	var iv *invalidValue
	switch {
	case errors.Is(err, errTrailing):
		return &DecodeError{Kind: DecodeTrailingData, Detail: err.Error()}
	case errors.As(err, &syn), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &DecodeError{Kind: DecodeSyntax, Err: err}
	case errors.As(err, &iv):
		return &DecodeError{Kind: DecodeInvalid, Err: err}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for DisallowUnknownFields.
		return &DecodeError{Kind: DecodeUnknownField, Detail: strings.TrimPrefix(err.Error(), "json: "), Err: err}
	default:
		return &DecodeError{Kind: DecodeInvalid, Err: err}
	}
}
