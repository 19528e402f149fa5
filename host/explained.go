package host

import (
	"encoding/json"
	"slices"

	"looprig/rig/event"
	"looprig/rig/explain"
	"looprig/rig/storage"
)

// Describe maps err to what a client sees, in the shape of the CLI's JSON
// errors: the session's own errors (busy, no turn, lease lost, ...) as the
// protocol names them, and any other error the runtime classifies (a
// restore's or a creation's failure) as rig/explain does, with its stage
// and remedy as the fields "stage" and "remedy", so that a client renders
// it as if the failure had happened in its own process (Explanation).
func Describe(err error) *RemoteError {
	d := describe(err)
	if d.Type != "Error" {
		return d
	}
	x := explain.Explain(err)
	if !x.Classified() {
		return d
	}
	d.Type, d.Kind = x.Type, x.Kind
	d.Fields = make(map[string]any, len(x.Fields)+2)
	for _, f := range x.Fields {
		d.Fields[f.Name] = f.Value
	}
	if x.Stage != "" {
		d.Fields["stage"] = x.Stage
	}
	d.Fields["remedy"] = x.Remedy.String()
	return d
}

// Explanation returns the classification the host made of the failure
// (see Describe): explain.Explain returns it for any error that wraps a
// RemoteError. Fields come in name order; "holder" and "changes" are
// decoded back into their types. An error the host did not classify with
// rig/explain (no "remedy" field: the protocol's own, or busy, no_turn,
// lease_lost ... which errors.As rebuilds) is unclassified here.
func (e *RemoteError) Explanation() explain.Explanation {
	if _, ok := e.Fields["remedy"]; !ok {
		return explain.Explain(nil)
	}
	x := explain.Explanation{Type: e.Type, Kind: e.Kind}
	x.Stage = e.str("stage")
	x.Remedy = explain.ParseRemedy(e.str("remedy"))
	names := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		if k != "stage" && k != "remedy" {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		x.Fields = append(x.Fields, explain.Field{Name: k, Value: typedField(k, e.Fields[k])})
	}
	return x
}

// typedField turns a field decoded from JSON back into the type
// explain.Field documents for it.
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
