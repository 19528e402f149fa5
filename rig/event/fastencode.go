package event

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// appendDataFast appends the encoded data of the events a long turn
// journals by the thousand (TurnOutput, the output checkpoints) without
// encoding/json's reflection, byte for byte as AppendTo's encoding/json
// path writes them: HTML characters unescaped, invalid UTF-8 as a literal
// U+FFFD (see LiteralReplacement). It reports false for every other event.
// FuzzAppendDataFast holds it to that.
func appendDataFast(buf *bytes.Buffer, ev Event) bool {
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
	b = append(b, `,"text":`...)
	b = appendJSONString(b, t.Text)
	b = append(b, `,"elided":`...)
	b = strconv.AppendInt(b, t.Elided, 10)
	b = append(b, '}')
	buf.Write(b)
	return true
}

const hexDigits = "0123456789abcdef"

// appendJSONString is encoding/json's string encoding without HTML
// escaping, with invalid UTF-8 written as a literal U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
