package event

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"
)

// The output events carry what a turn's programs wrote, byte for byte. A
// JSON string holds UTF-8 only, so their wire form has two spellings of
// Text: "text", the string itself, when it is valid UTF-8 (what almost
// all output is), else "text_b64", the standard base64 of its exact bytes.
// Exactly one is written; reading refuses both at once, and a "text_b64"
// whose bytes are valid UTF-8 (which "text" spells), so that the encoding
// stays canonical. Records written before "text_b64" existed hold "text"
// with U+FFFD where bytes were not UTF-8, and read as they always did.

// turnOutputWire is the wire form of TurnOutput.
type turnOutputWire struct {
	TurnID  string  `json:"turn_id"`
	Offset  int64   `json:"offset"`
	Text    *string `json:"text,omitempty"`
	TextB64 *string `json:"text_b64,omitempty"`
	Elided  int64   `json:"elided"`
}

// outputDeltaWire is the wire form of OutputDelta.
type outputDeltaWire struct {
	TurnID  string  `json:"turn_id"`
	Stream  string  `json:"stream"`
	Offset  int64   `json:"offset"`
	Text    *string `json:"text,omitempty"`
	TextB64 *string `json:"text_b64,omitempty"`
}

// spellText returns the two wire fields of text: one set, the other nil.
func spellText(text string) (plain, b64 *string) {
	if utf8.ValidString(text) {
		return &text, nil
	}
	s := base64.StdEncoding.EncodeToString([]byte(text))
	return nil, &s
}

// readText returns the text the wire fields spell (none: "").
func readText(plain, b64 *string) (string, error) {
	switch {
	case plain != nil && b64 != nil:
		return "", &invalidValue{field: "text_b64", value: "beside text", want: "text or text_b64, not both"}
	case b64 != nil:
		b, err := base64.StdEncoding.Strict().DecodeString(*b64)
		if err != nil {
			return "", &invalidValue{field: "text_b64", value: "not base64", want: "the standard base64 of the output's bytes"}
		}
		if utf8.Valid(b) {
			return "", &invalidValue{field: "text_b64", value: "valid UTF-8", want: "text for output that is UTF-8"}
		}
		return string(b), nil
	case plain != nil:
		return *plain, nil
	}
	return "", nil
}

// decodeWire decodes b strictly into w, the wire form of an output event,
// and returns the text its fields plain and b64 (fields of w) spell.
func decodeWire(b []byte, w any, plain, b64 **string) (string, error) {
	if err := strictDecode(b, w); err != nil {
		return "", err
	}
	return readText(*plain, *b64)
}

func marshalWire(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// MarshalJSON writes Text as "text" or "text_b64" (see the package's
// output events).
func (t TurnOutput) MarshalJSON() ([]byte, error) {
	w := turnOutputWire{TurnID: t.TurnID, Offset: t.Offset, Elided: t.Elided}
	w.Text, w.TextB64 = spellText(t.Text)
	return marshalWire(w)
}

// UnmarshalJSON reads what MarshalJSON writes, strictly.
func (t *TurnOutput) UnmarshalJSON(b []byte) error {
	var w turnOutputWire
	text, err := decodeWire(b, &w, &w.Text, &w.TextB64)
	if err != nil {
		return err
	}
	*t = TurnOutput{TurnID: w.TurnID, Offset: w.Offset, Text: text, Elided: w.Elided}
	return nil
}

// MarshalJSON writes Text as "text" or "text_b64" (see the package's
// output events).
func (o OutputDelta) MarshalJSON() ([]byte, error) {
	w := outputDeltaWire{TurnID: o.TurnID, Stream: o.Stream, Offset: o.Offset}
	w.Text, w.TextB64 = spellText(o.Text)
	return marshalWire(w)
}

// UnmarshalJSON reads what MarshalJSON writes, strictly.
func (o *OutputDelta) UnmarshalJSON(b []byte) error {
	var w outputDeltaWire
	text, err := decodeWire(b, &w, &w.Text, &w.TextB64)
	if err != nil {
		return err
	}
	*o = OutputDelta{TurnID: w.TurnID, Stream: w.Stream, Offset: w.Offset, Text: text}
	return nil
}
