// Package fault is the vocabulary an error explains itself in: what
// kind of failure it is (a Kind, which decides its Type), with which
// typed facts (Fields) and what to do about it (a Remedy). Every error
// type of the runtime that people see implements Explainer, so each
// carries its own explanation next to its fields; rig/explain finds it
// in an error's chain and adds the few errors the runtime does not own
// (docs/ARCHITECTURE.md, "Errors"). Presenters render an Explanation,
// switching on these typed values; none of them decides on its own what
// an error means.
//
// The package imports nothing from looprig, so that every package that
// defines an error (rig, rig/storage, rig/journal, rig/hub, rig/engine,
// host, cli) can import it.
package fault

import "slices"

// Explainer is an error that carries its own explanation: an error of
// the runtime's, one classified in another process (a host's failure,
// reported to the client that started it), or an error of a presenter's
// own that is one of the kinds. An Explanation whose Kind is KindError
// says nothing: the error's causes may (First).
type Explainer interface {
	error
	Explanation() Explanation
}

// Field is one typed fact about a failure. Name is snake_case. Value is
// a string, a number, a bool, nil, a []string, a storage.Holder
// ("holder") or the []event.Change of a drift ("changes").
type Field struct {
	Name  string
	Value any
}

// Explanation is what an error says of itself.
type Explanation struct {
	// Type is the error type people and JSON see; TypeError when the
	// error is none the runtime classifies. It is Kind.Type().
	Type Type
	// Kind is what the failure is: a restore's or a creation's stage, or
	// the failure's own kind; KindError when unclassified.
	Kind Kind
	// Fields are the typed facts, in a stable order.
	Fields []Field
	// Remedy is what to do about it.
	Remedy Remedy
}

// Of returns the explanation of a failure of kind k with these fields:
// the kind's type and its remedy (Kind.Remedy).
func Of(k Kind, fields ...Field) Explanation {
	return Explanation{Type: k.Type(), Kind: k, Fields: fields, Remedy: k.Remedy()}
}

// Field returns the value of the field called name.
func (x Explanation) Field(name string) (any, bool) {
	for _, f := range x.Fields {
		if f.Name == name {
			return f.Value, true
		}
	}
	return nil, false
}

// Number returns the field called name as an integer; false when it is
// absent or not an integer.
func (x Explanation) Number(name string) (int64, bool) {
	v, _ := x.Field(name)
	return Integer(v)
}

// Classified reports whether x says what the failure is.
func (x Explanation) Classified() bool { return x.Kind != KindError }

// Add appends the fact name, value to x's fields.
func (x *Explanation) Add(name string, value any) { x.Fields = append(x.Fields, Field{name, value}) }

// Integer is v as an int64, whichever integer type this process or a
// host's JSON gave it; false when it is none.
func Integer(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	case uint64:
		return int64(n), true
	}
	return 0, false
}

// First returns the explanation of the first error in err's chain (in
// the order errors.As looks) that explains itself as a kind (an Explainer
// whose Explanation is classified); false when none does. An error that
// wraps a more specific one returns that one's explanation itself
// (Yield).
func First(err error) (Explanation, bool) {
	return find(err, func(Kind) bool { return true })
}

// Yield returns the explanation of the first error in cause's chain that
// explains itself as one of kinds; false when none does. An error whose
// cause says more than it does (a restore that failed because the
// profile is gone is about the profile) returns that.
func Yield(cause error, kinds ...Kind) (Explanation, bool) {
	return find(cause, func(k Kind) bool { return slices.Contains(kinds, k) })
}

// find returns the explanation of the first error in err's chain that
// explains itself as a kind want accepts.
func find(err error, want func(Kind) bool) (Explanation, bool) {
	for err != nil {
		if e, ok := err.(Explainer); ok {
			if x := e.Explanation(); x.Classified() && want(x.Kind) {
				return x, true
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				if x, ok := find(inner, want); ok {
					return x, true
				}
			}
			return Explanation{}, false
		default:
			return Explanation{}, false
		}
	}
	return Explanation{}, false
}

// Fact is the field name, value.
func Fact(name string, value any) Field { return Field{name, value} }
