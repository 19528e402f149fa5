package host

import (
	"encoding/json"
	"slices"

	"looprig/rig/event"
	"looprig/rig/explain"
	"looprig/rig/fault"
	"looprig/rig/storage"
)

// Describe maps err to what a client sees, in the shape of the CLI's JSON
// errors: rig/explain's classification of it (type, kind, typed fields)
// and, as the fields "stage" and "remedy", a restore's stage and the
// remedy, so that a client classifies and words the failure exactly as it
// would one of its own process (Explanation). A live session's own
// failures (busy, no_turn, ..., lease_lost, persistence_fault, timeout)
// go without "remedy", as the protocol has always sent them: their kind
// implies it. An error explain does not classify is type "Error", kind
// "error", without fields.
func Describe(err error) *RemoteError {
	x := explain.Explain(err)
	d := &RemoteError{Type: x.Type, Kind: x.Kind, Message: err.Error()}
	if !x.Classified() {
		return d
	}
	d.Fields = make(map[string]any, len(x.Fields)+2)
	for _, f := range x.Fields {
		d.Fields[f.Name] = f.Value
	}
	if x.Type == fault.TypeRestoreError {
		d.Fields["stage"] = x.Kind.String()
	}
	if !remedyImplied(x) {
		d.Fields["remedy"] = x.Remedy.String()
	}
	if len(d.Fields) == 0 {
		d.Fields = nil
	}
	return d
}

// describe is Describe, by the name the connection's replies, stream ends
// and status call it.
func describe(err error) *RemoteError { return Describe(err) }

// remedyImplied reports whether the wire leaves x's remedy out: x is one
// of a live session's own failures, whose remedy is its kind's.
func remedyImplied(x fault.Explanation) bool {
	switch x.Kind {
	case fault.KindBusy, fault.KindNoTurn, fault.KindNoTerminal, fault.KindInputTimeout, fault.KindNoGate, fault.KindFromTurn,
		fault.KindSessionClosed, fault.KindEngineUnresponsive, fault.KindLeaseLost, fault.KindPersistenceFault,
		fault.KindTimeout, fault.KindCanceled, fault.KindSocketPathTooLong:
		return x.Remedy == x.Kind.Remedy()
	}
	return false
}

// Explanation returns the classification the host made of the failure
// (see Describe), for every kind: explain.Explain returns it for any
// error that wraps a RemoteError. Fields come in name order; numbers are
// int64 (float64 if not integers), and "holder" and "changes" are decoded
// back into their types. The remedy is the field "remedy", or the kind's
// when the wire leaves it out.
func (e *RemoteError) Explanation() fault.Explanation {
	if e.Kind == fault.KindError {
		return fault.Of(fault.KindError)
	}
	x := fault.Of(e.Kind)
	if name, ok := e.Fields["remedy"].(string); ok {
		x.Remedy, _ = fault.ParseRemedy(name)
	}
	names := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		if k == "remedy" || k == "stage" && x.Type == fault.TypeRestoreError {
			continue // the classification's, not a typed field
		}
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		x.Fields = append(x.Fields, fault.Field{Name: k, Value: typedField(k, e.Fields[k])})
	}
	return x
}

// typedField turns a field decoded from JSON back into the type
// fault.Field documents for it.
func typedField(name string, v any) any {
	switch name {
	case "holder":
		var h storage.Holder
		if redecode(v, &h) {
			return h
		}
	case "changes":
		var cs []event.Change
		if redecode(v, &cs) {
			return cs
		}
	}
	switch t := v.(type) {
	case json.Number:
		if n, err := t.Int64(); err == nil {
			return n
		}
		if f, err := t.Float64(); err == nil {
			return f
		}
	case []any:
		ss := make([]string, 0, len(t))
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return v
			}
			ss = append(ss, s)
		}
		return ss
	}
	return v
}

func redecode(v, into any) bool {
	b, err := json.Marshal(v)
	return err == nil && json.Unmarshal(b, into) == nil
}
