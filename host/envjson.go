package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"looprig/rig/event"
)

// envelopeKeys are the keys MarshalEnvelope writes before the payload; a
// payload field of the same name is left out (the envelope's value wins).
var envelopeKeys = []string{"seq", "type", "session", "loop_id", "at"}

// shadowed lists, per event type, the payload fields an envelope key
// hides: MarshalEnvelope drops them, UnmarshalEnvelope restores them from
// the envelope (LoopStarted's loop_id is its envelope's loop id).
var shadowed = map[event.Type][]string{
	event.TypeLoopStarted: {"loop_id"},
}

// MarshalEnvelope encodes env as one line of `looprig run --json` (without
// the newline):
//
//	{"seq":N,"type":"T","session":"…","loop_id":"…","at":"RFC3339Nano"|null,…payload}
//
// where the payload is the event's wire data, field by field, minus the
// fields an envelope key hides. It is byte for byte what cli's
// envelopeJSON writes, so the CLI can use it instead.
func MarshalEnvelope(env event.Envelope) ([]byte, error) {
	return AppendEnvelope(nil, env)
}

// AppendEnvelope appends MarshalEnvelope(env) to dst.
func AppendEnvelope(dst []byte, env event.Envelope) ([]byte, error) {
	data, err := eventData(env.Event)
	if err != nil {
		return dst, err
	}
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, env.Seq, 10)
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, string(env.Event.Type()))
	dst = append(dst, `,"session":`...)
	dst = appendString(dst, env.Session)
	dst = append(dst, `,"loop_id":`...)
	dst = appendString(dst, env.LoopID)
	dst = append(dst, `,"at":`...)
	if env.At.IsZero() {
		dst = append(dst, "null"...)
	} else {
		dst = appendString(dst, env.At.UTC().Format(time.RFC3339Nano))
	}
	if !mayShadow(data) {
		if len(data) > 2 { // not {}
			dst = append(dst, ',')
			dst = append(dst, data[1:]...)
			return dst, nil
		}
		return append(dst, '}'), nil
	}
	return appendMembers(dst, data)
}

// eventData returns the "data" of ev's wire form.
func eventData(ev event.Event) ([]byte, error) {
	b, err := event.Marshal(ev)
	if err != nil {
		return nil, err
	}
	// {"v":1,"type":"T","data":…}: cut the data out without a parse.
	prefix := `{"v":1,"type":"` + string(ev.Type()) + `","data":`
	if bytes.HasPrefix(b, []byte(prefix)) && len(b) > len(prefix)+1 && b[len(b)-1] == '}' {
		return b[len(prefix) : len(b)-1], nil
	}
	var w struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, err
	}
	return w.Data, nil
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

// appendMembers appends the members of the JSON object data, except the
// envelope's keys, then closes the object.
func appendMembers(dst, data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return dst, fmt.Errorf("host: event data is not a JSON object: %.40q", data)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return dst, err
		}
		k, ok := t.(string)
		if !ok {
			return dst, fmt.Errorf("host: event data key %v", t)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return dst, err
		}
		if isEnvelopeKey(k) {
			continue
		}
		dst = append(dst, ',')
		dst = appendString(dst, k)
		dst = append(dst, ':')
		dst = append(dst, v...)
	}
	return append(dst, '}'), nil
}

func isEnvelopeKey(k string) bool {
	for _, e := range envelopeKeys {
		if e == k {
			return true
		}
	}
	return false
}

// appendString appends s as a JSON string exactly as encoding/json does
// with HTML escaping off.
func appendString(dst []byte, s string) []byte {
	simple := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			simple = false
			break
		}
	}
	if simple {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
}
