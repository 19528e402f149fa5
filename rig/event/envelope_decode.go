package event

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// EnvelopeDecodeError is a line that is not an event of MarshalEnvelope's
// shape, or whose event the event codec refuses (Err).
type EnvelopeDecodeError struct {
	Seq    uint64
	Type   Type
	Reason string
	Err    error
}

func (e *EnvelopeDecodeError) Error() string {
	msg := "event: decode envelope"
	if e.Type != "" {
		msg += " " + string(e.Type)
	}
	if e.Seq != 0 {
		msg += " seq " + strconv.FormatUint(e.Seq, 10)
	}
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *EnvelopeDecodeError) Unwrap() error { return e.Err }

// UnmarshalEnvelope decodes a MarshalEnvelope line back into an envelope;
// the event is decoded (strictly) by the event codec.
//
// A line of exactly MarshalEnvelope's shape is scanned once: the envelope
// prefix is read by hand and the payload members go to the event codec
// as they are (unmarshalFast). Any other line, and any line that fast
// path does not accept (errors included), takes the general path
// (unmarshalGeneral), which decides the result; both give the same
// envelope for every line the fast path accepts (FuzzUnmarshalEnvelope).
func UnmarshalEnvelope(b []byte) (Envelope, error) {
	if env, ok := unmarshalFast(b); ok {
		return env, nil
	}
	return unmarshalGeneral(b)
}

// unmarshalFast decodes b when it is
//
//	{"seq":N,"type":"T","session":"…","loop_id":"…","at":"…"|null,…members}
//
// with no whitespace in the prefix, and the members' keys are distinct,
// made of [a-z0-9_] only and none an envelope key; it reports false for
// any other line and for any error (the general path then reports it).
//
// Why the result is unmarshalGeneral's: that path decodes the line into a
// map (the last of repeated keys wins, keys compared exactly), takes the
// envelope keys out and re-encodes the rest with sorted keys. With no
// envelope key among the members the envelope values are the prefix's;
// with distinct lowercase ASCII keys no two members name the same field
// (encoding/json matches keys to fields exactly, else by case folding,
// which cannot join two distinct lowercase ASCII keys), so member order
// is irrelevant; re-encoding a value does not change what it decodes to.
// The event codec's strict decode of the members accepts only a valid
// JSON object followed by white space, so the whole line is valid JSON.
// Shadowed types (LoopStarted) take the general path. DecodeFast is
// Raw.Decode, faster for the hot events.
func unmarshalFast(b []byte) (Envelope, bool) {
	var env Envelope
	const (
		pSeq     = `{"seq":`
		pType    = `,"type":`
		pSession = `,"session":`
		pLoop    = `,"loop_id":`
		pAt      = `,"at":`
	)
	if !bytes.HasPrefix(b, []byte(pSeq)) {
		return env, false
	}
	i := len(pSeq)
	j := i
	for j < len(b) && '0' <= b[j] && b[j] <= '9' {
		j++
	}
	if j == i || b[i] == '0' && j > i+1 {
		return env, false // no digits, or a leading zero (not JSON)
	}
	seq, err := strconv.ParseUint(string(b[i:j]), 10, 64)
	if err != nil {
		return env, false
	}
	env.Seq = seq
	i = j
	var typ string
	var ok bool
	if typ, i, ok = prefixString(b, i, pType); !ok || typ == "" {
		return env, false
	}
	if env.Session, i, ok = prefixString(b, i, pSession); !ok {
		return env, false
	}
	if env.LoopID, i, ok = prefixString(b, i, pLoop); !ok {
		return env, false
	}
	if !bytes.HasPrefix(b[i:], []byte(pAt)) {
		return env, false
	}
	i += len(pAt)
	if bytes.HasPrefix(b[i:], []byte("null")) {
		i += len("null")
	} else {
		var at string
		if at, i, ok = prefixString(b, i, ""); !ok {
			return env, false
		}
		t, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			return env, false
		}
		env.At = t
	}
	t := Type(typ)
	if len(shadowed[t]) > 0 || !plainMembers(b, i) {
		return env, false
	}
	// b[i] is the ',' before the first member or the closing '}'.
	data := make([]byte, 0, len(b)-i+1)
	data = append(data, '{')
	if b[i] == ',' {
		i++
	}
	data = append(data, b[i:]...)
	ev, err := DecodeFast(Raw{V: Version, Type: t, Data: data})
	if err != nil {
		return env, false
	}
	env.Event = ev
	return env, true
}

// prefixString reads key (a literal such as `,"type":`, may be empty) at
// b[i:] and the JSON string after it; it returns the string and the index
// after it. A string with escapes, control or non-ASCII bytes is decoded
// by encoding/json, as the general path decodes it.
func prefixString(b []byte, i int, key string) (string, int, bool) {
	if !bytes.HasPrefix(b[i:], []byte(key)) {
		return "", 0, false
	}
	i += len(key)
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	plain := true
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			if plain {
				return string(b[i+1 : j]), j + 1, true
			}
			var s string
			if err := json.Unmarshal(b[i:j+1], &s); err != nil {
				return "", 0, false
			}
			return s, j + 1, true
		case c == '\\':
			plain = false
			j++ // the escaped byte is no delimiter
		case c < 0x20 || c >= 0x80:
			plain = false
		}
	}
	return "", 0, false
}

// maxPlainMembers bounds the members plainMembers compares pairwise.
const maxPlainMembers = 16

// plainMembers reports whether b[i:] is `}` or `,"k":v,…}` (up to white
// space and the validity of the values, which the strict decode checks)
// with at most maxPlainMembers keys, distinct, made of [a-z0-9_] only and
// none an envelope key. It reports false for anything it is unsure of.
func plainMembers(b []byte, i int) bool {
	var keys [maxPlainMembers][]byte
	n := 0
	for {
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '}':
			return true
		case ',':
		default:
			return false
		}
		i++
		if i >= len(b) || b[i] != '"' {
			return false
		}
		j := i + 1
		for j < len(b) && (b[j] >= 'a' && b[j] <= 'z' || b[j] >= '0' && b[j] <= '9' || b[j] == '_') {
			j++
		}
		if j+1 >= len(b) || b[j] != '"' || b[j+1] != ':' || n == maxPlainMembers {
			return false
		}
		key := b[i+1 : j]
		switch string(key) {
		case "seq", "type", "session", "loop_id", "at":
			return false
		}
		for _, k := range keys[:n] {
			if bytes.Equal(k, key) {
				return false
			}
		}
		keys[n] = key
		n++
		var ok bool
		if i, ok = skipValue(b, j+2); !ok {
			return false
		}
	}
}

// skipValue returns the index after the JSON value at b[i:], which is
// right for a valid value; an invalid one fails the strict decode.
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				j, ok := skipString(b, i)
				if !ok {
					return 0, false
				}
				i = j
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	default: // a number or a literal
		for i < len(b) && b[i] != ',' && b[i] != '}' {
			i++
		}
		return i, true
	}
}

// skipString returns the index after the JSON string starting at b[i].
func skipString(b []byte, i int) (int, bool) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, false
		}
		j += k
		esc := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			esc++
		}
		if esc%2 == 0 {
			return j + 1, true
		}
		j++
	}
}

// unmarshalGeneral is UnmarshalEnvelope for any line: it decodes the line
// into a map, re-encodes the payload and has the event codec decode it.
func unmarshalGeneral(b []byte) (Envelope, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return Envelope{}, &EnvelopeDecodeError{Reason: "not a JSON object", Err: err}
	}
	var env Envelope
	var typ Type
	bad := func(reason string, err error) (Envelope, error) {
		return Envelope{}, &EnvelopeDecodeError{Seq: env.Seq, Type: typ, Reason: reason, Err: err}
	}
	if err := json.Unmarshal(m["type"], &typ); err != nil || typ == "" {
		return bad("missing or bad type", err)
	}
	if raw, ok := m["seq"]; !ok {
		return bad("missing seq", nil)
	} else if err := json.Unmarshal(raw, &env.Seq); err != nil {
		return bad("bad seq", err)
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"session", &env.Session}, {"loop_id", &env.LoopID}} {
		if raw, ok := m[f.key]; ok {
			if err := json.Unmarshal(raw, f.dst); err != nil {
				return bad("bad "+f.key, err)
			}
		}
	}
	if raw, ok := m["at"]; ok && string(raw) != "null" {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return bad("bad at", err)
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return bad("bad at", err)
		}
		env.At = t
	}
	hidden := shadowed[typ]
	for _, k := range envelopeKeys {
		delete(m, k)
	}
	for _, k := range hidden {
		if k == "loop_id" {
			m[k] = AppendString(nil, env.LoopID)
		}
	}
	data, err := json.Marshal(m)
	if err != nil {
		return bad("payload", err)
	}
	ev, err := Raw{V: Version, Type: typ, Data: data}.Decode()
	if err != nil {
		return bad("", err)
	}
	env.Event = ev
	return env, nil
}
