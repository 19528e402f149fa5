package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// envelopeKeys are the keys MarshalEnvelope writes before the payload; a
// payload field of the same name is left out (the envelope's value wins).
var envelopeKeys = []string{"seq", "type", "session", "loop_id", "at"}

// shadowed lists, per event type, the payload fields an envelope key
// hides: MarshalEnvelope drops them, UnmarshalEnvelope restores them from
// the envelope (LoopStarted's loop_id is its envelope's loop id).
var shadowed = map[Type][]string{
	TypeLoopStarted: {"loop_id"},
}

// MarshalEnvelope encodes env in the wire form of an envelope, one line
// (without the newline) of `looprig run --json` and of the host
// protocol's events:
//
//	{"seq":N,"type":"T","session":"…","loop_id":"…","at":"RFC3339Nano"|null,…payload}
//
// where at is in UTC and the payload is the members of the data of the
// event's wire form (Marshal), in order, minus the fields an envelope key
// hides. The envelope's strings are written by AppendString, the payload
// as Marshal writes it. It refuses what Marshal refuses.
func MarshalEnvelope(env Envelope) ([]byte, error) {
	return AppendEnvelope(nil, env)
}

// AppendEnvelope appends MarshalEnvelope(env) to dst. On error it returns
// dst as it was.
func AppendEnvelope(dst []byte, env Envelope) ([]byte, error) {
	t, err := checkEncode(env.Event)
	if err != nil {
		return dst, err
	}
	n := len(dst)
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, env.Seq, 10)
	dst = append(dst, `,"type":`...)
	dst = AppendString(dst, string(t))
	dst = append(dst, `,"session":`...)
	dst = AppendString(dst, env.Session)
	dst = append(dst, `,"loop_id":`...)
	dst = AppendString(dst, env.LoopID)
	dst = append(dst, `,"at":`...)
	if env.At.IsZero() {
		dst = append(dst, "null"...)
	} else {
		dst = AppendString(dst, env.At.UTC().Format(time.RFC3339Nano))
	}
	// The data goes right after the envelope, then becomes its tail.
	buf := bytes.NewBuffer(dst)
	start := buf.Len()
	if err := appendData(buf, env.Event, t); err != nil {
		return dst[:n], err
	}
	dst = buf.Bytes()
	data := dst[start:]
	if !mayShadow(data) {
		if len(data) > len("{}") {
			dst[start] = ',' // its members, then its brace closes the line
			return dst, nil
		}
		return append(dst[:start], '}'), nil
	}
	dst, err = appendMembers(dst[:start], bytes.Clone(data), notEnvelopeKey)
	if err != nil {
		return dst[:n], err
	}
	return append(dst, '}'), nil
}

// AppendPayload appends the payload of ev to dst: the members of the data
// of its wire form (Marshal), in order, each written as ,"key":value, but
// those whose key keep refuses (keep nil: none is). dst ends inside a
// JSON object with a member already, which is left open: this is how a
// line that carries an event beside fields of its own (an envelope, a
// record of `looprig log --json`) writes the event; keep refuses the keys
// the line has. It refuses what Marshal refuses.
func AppendPayload(dst []byte, ev Event, keep func(key string) bool) ([]byte, error) {
	t, err := checkEncode(ev)
	if err != nil {
		return dst, err
	}
	var data bytes.Buffer
	if err := appendData(&data, ev, t); err != nil {
		return dst, err
	}
	n := len(dst)
	dst, err = appendMembers(dst, data.Bytes(), keep)
	if err != nil {
		return dst[:n], err
	}
	return dst, nil
}

// mayShadow reports whether data may hold a key an envelope key hides
// (false positives cost a parse, nothing else).
func mayShadow(data []byte) bool {
	for _, k := range envelopeKeys {
		if bytes.Contains(data, []byte(`"`+k+`":`)) {
			return true
		}
	}
	return false
}

// appendMembers appends the members of the JSON object data that keep
// accepts (nil: all), each as ,"key":value.
func appendMembers(dst, data []byte, keep func(string) bool) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return dst, fmt.Errorf("event: data is not a JSON object: %.40q", data)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return dst, err
		}
		k, ok := t.(string)
		if !ok {
			return dst, fmt.Errorf("event: data key %v", t)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return dst, err
		}
		if keep != nil && !keep(k) {
			continue
		}
		dst = append(dst, ',')
		dst = AppendString(dst, k)
		dst = append(dst, ':')
		dst = append(dst, v...)
	}
	return dst, nil
}

// notEnvelopeKey reports whether k is not one of envelopeKeys.
func notEnvelopeKey(k string) bool {
	for _, e := range envelopeKeys {
		if e == k {
			return false
		}
	}
	return true
}
