package event

import (
	"bytes"
	"encoding/base64"
	"strconv"
	"unicode/utf8"
)

// appendDataFast appends the encoded data of the events a long turn
// makes by the thousand (TurnOutput, the output checkpoints it journals;
// OutputDelta, the live output a host sends its clients) without
// encoding/json's reflection, byte for byte as AppendTo's encoding/json
// path writes them (through their MarshalJSON): HTML characters
// unescaped, invalid UTF-8 in the turn id as a literal U+FFFD (see
// LiteralReplacement), the text as "text" or "text_b64". It reports false
// for every other event. FuzzAppendDataFast holds it to that.
func appendDataFast(buf *bytes.Buffer, ev Event) bool {
	if d, ok := ev.(OutputDelta); ok {
		appendDeltaFast(buf, d)
		return true
	}
	t, ok := ev.(TurnOutput)
	if !ok {
		return false
	}
	// Room for the common case (little to escape), so the appends below
	// write into the buffer's own free space instead of growing a copy.
	buf.Grow(len(`{"turn_id":"","offset":,"text":"","elided":}`) + len(t.TurnID) + len(t.Text) + len(t.Text)/16 + 48)
	b := buf.AvailableBuffer()
	b = append(b, `{"turn_id":`...)
	b = appendJSONString(b, t.TurnID)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, t.Offset, 10)
	b = appendText(b, t.Text)
	b = append(b, `,"elided":`...)
	b = strconv.AppendInt(b, t.Elided, 10)
	b = append(b, '}')
	buf.Write(b)
	return true
}

// appendDeltaFast is appendDataFast for an OutputDelta.
func appendDeltaFast(buf *bytes.Buffer, d OutputDelta) {
	buf.Grow(len(`{"turn_id":"","stream":"","offset":,"text":""}`) + len(d.TurnID) + len(d.Stream) + len(d.Text) + len(d.Text)/16 + 24)
	b := buf.AvailableBuffer()
	b = append(b, `{"turn_id":`...)
	b = appendJSONString(b, d.TurnID)
	b = append(b, `,"stream":`...)
	b = appendJSONString(b, d.Stream)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, d.Offset, 10)
	b = appendText(b, d.Text)
	b = append(b, '}')
	buf.Write(b)
}

// appendText appends the member that spells text: ,"text":"…" when it is
// valid UTF-8, else ,"text_b64":"<base64 of its bytes>".
func appendText(b []byte, text string) []byte {
	if utf8.ValidString(text) {
		b = append(b, `,"text":`...)
		return appendJSONString(b, text)
	}
	b = append(b, `,"text_b64":"`...)
	b = base64.StdEncoding.AppendEncode(b, []byte(text))
	return append(b, '"')
}
