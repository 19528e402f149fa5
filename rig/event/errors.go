package event

import (
	"errors"
	"fmt"
)

// EncodeError refuses to encode an event: a type this package does not
// define (or a pointer to one), or a field value outside its allowed set.
type EncodeError struct {
	Type Type
	// Field is the offending wire field, when one is to blame.
	Field  string
	Reason string
	Err    error
}

func (e *EncodeError) Error() string {
	msg := fmt.Sprintf("event: cannot encode %s", e.Type)
	if e.Field != "" {
		msg += " field " + e.Field
	}
	msg += ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *EncodeError) Unwrap() error { return e.Err }

// EphemeralError refuses to persist an ephemeral event.
type EphemeralError struct {
	Type Type
}

func (e *EphemeralError) Error() string {
	return fmt.Sprintf("event: %s is ephemeral and is never persisted", e.Type)
}

// DecodeErrorKind classifies a DecodeError.
type DecodeErrorKind string

const (
	// DecodeSyntax: the input is not well-formed JSON.
	DecodeSyntax DecodeErrorKind = "syntax"
	// DecodeVersion: the "v" is missing or not Version.
	DecodeVersion DecodeErrorKind = "version"
	// DecodeUnknownType: the "type" is not registered.
	DecodeUnknownType DecodeErrorKind = "unknown_type"
	// DecodeUnknownField: the envelope or the data has a field this
	// version does not define.
	DecodeUnknownField DecodeErrorKind = "unknown_field"
	// DecodeTrailingData: something follows the JSON value.
	DecodeTrailingData DecodeErrorKind = "trailing_data"
	// DecodeInvalid: well-formed JSON of the wrong shape: missing or
	// non-object data, a value of the wrong JSON type, or a value outside
	// its allowed set.
	DecodeInvalid DecodeErrorKind = "invalid"
)

// DecodeError is returned by Unmarshal for any input it does not fully
// understand. Decoding fails closed: nothing is guessed or skipped.
type DecodeError struct {
	Kind DecodeErrorKind
	// Version is the "v" found, when it could be read.
	Version int
	// Type is the "type" found, when it could be read.
	Type Type
	// Detail says what is wrong, in a few words.
	Detail string
	Err    error
}

func (e *DecodeError) Error() string {
	msg := "event: decode"
	if e.Type != "" {
		msg += " " + string(e.Type)
	}
	msg += ": " + string(e.Kind)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *DecodeError) Unwrap() error { return e.Err }

// invalidValue is the cause of an enum or range violation.
type invalidValue struct {
	field string
	value string
	want  string
}

func (e *invalidValue) Error() string {
	return fmt.Sprintf("field %s: %s is not %s", e.field, e.value, e.want)
}

var errTrailing = errors.New("data after the JSON value")
