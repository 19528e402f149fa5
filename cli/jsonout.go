package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"looprig/rig/event"
	"looprig/rig/journal"
)

// obj builds a JSON object with its keys in insertion order; a key set
// twice keeps its first value.
type obj struct {
	b    bytes.Buffer
	seen []string // keys set or skipped: a handful, so a slice beats a map
}

func newObj() *obj {
	o := &obj{}
	o.b.Grow(512)
	o.b.WriteByte('{')
	return o
}

func (o *obj) has(k string) bool {
	for _, s := range o.seen {
		if s == k {
			return true
		}
	}
	return false
}

func marshal(v any) []byte {
	if b, ok := marshalSimple(v); ok {
		return b
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only values this package builds are marshalled; none can fail.
		panic(fmt.Sprintf("cli: marshal %T: %v", v, err))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// set adds k with v marshalled.
func (o *obj) set(k string, v any) *obj { return o.raw(k, marshal(v)) }

// raw adds k with a JSON value.
func (o *obj) raw(k string, v []byte) *obj {
	if o.has(k) {
		return o
	}
	o.seen = append(o.seen, k)
	if o.b.Len() > 1 {
		o.b.WriteByte(',')
	}
	o.b.Write(marshal(k))
	o.b.WriteByte(':')
	o.b.Write(v)
	return o
}

// skip makes later sets of keys no-ops.
func (o *obj) skip(keys ...string) *obj {
	o.seen = append(o.seen, keys...)
	return o
}

// merge adds the fields of the JSON object data, in their order, except
// keys already set.
func (o *obj) merge(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("cli: merge: not a JSON object: %s", data)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		k, ok := t.(string)
		if !ok {
			return fmt.Errorf("cli: merge: key %v", t)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		o.raw(k, v)
	}
	return nil
}

func (o *obj) bytes() []byte {
	out := append(bytes.Clone(o.b.Bytes()), '}')
	return out
}

func (e *env) writeJSONLine(o *obj) error {
	b := o.bytes()
	b = append(b, '\n')
	_, err := e.stdout.Write(b)
	return err
}

func jsonTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// eventData returns the payload of ev: the "data" of its wire form, whose
// field names are snake_case.
func eventData(ev event.Event) ([]byte, error) {
	b, err := event.Marshal(ev)
	if err != nil {
		return nil, err
	}
	var w struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, err
	}
	return w.Data, nil
}

// envelopeJSON is one line of `run --json` and `restore --hold --json`:
// {"seq","type","session","loop_id","at",...payload}.
func envelopeJSON(env event.Envelope) (*obj, error) {
	o := newObj().set("seq", env.Seq).set("type", env.Event.Type()).set("session", env.Session).
		set("loop_id", env.LoopID).set("at", jsonTime(env.At))
	data, err := eventData(env.Event)
	if err != nil {
		return nil, err
	}
	return o, o.merge(data)
}

// recordJSON is one line of `log --json`:
// {"seq","kind","type","epoch"(fences),"at","loop_id"(loop events),...payload}.
func recordJSON(rec journal.Record) (*obj, error) {
	o := newObj().set("seq", rec.Seq).set("kind", rec.Kind)
	switch rec.Kind {
	case journal.KindFence:
		o.set("type", "fence").set("epoch", rec.Epoch).set("at", jsonTime(rec.At))
	case journal.KindEvent:
		o.set("type", rec.Event.Type()).set("at", jsonTime(rec.At))
		if rec.LoopID != "" {
			o.set("loop_id", rec.LoopID)
		}
		data, err := eventData(rec.Event)
		if err != nil {
			return nil, err
		}
		if err := o.merge(data); err != nil {
			return nil, err
		}
	case journal.KindCommand:
		o.set("type", rec.Command.Name).set("at", jsonTime(rec.At)).skip("name")
		if err := o.merge(marshal(rec.Command)); err != nil {
			return nil, err
		}
	}
	if rec.ID != "" {
		o.set("record_id", rec.ID)
	}
	return o, nil
}
