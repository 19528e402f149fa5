package event

import "unicode/utf8"

// AppendString appends s to dst as a JSON string, as encoding/json writes
// it with HTML escaping off: '"', '\\' and the control characters escaped
// (\b, \f, \n, \r, \t, else \u00XX), U+2028 and U+2029 as \u2028 and
// \u2029, each byte of invalid UTF-8 as the escape \ufffd, and everything
// else as it is. It is the string encoding of the lines looprig writes
// beside the journal: envelopes, the host protocol, --json output. The
// event codec writes strings with the same encoder (see appendJSONString).
func AppendString(dst []byte, s string) []byte {
	return appendString(dst, s, `\ufffd`)
}

// appendJSONString is AppendString as the event codec writes strings:
// invalid UTF-8 as a literal U+FFFD, which is what encoding/json followed
// by LiteralReplacement writes.
func appendJSONString(dst []byte, s string) []byte {
	return appendString(dst, s, "\uFFFD")
}

const hexDigits = "0123456789abcdef"

// appendString is the one JSON string encoder: AppendString with invalid
// written for each byte of invalid UTF-8.
func appendString(dst []byte, s, invalid string) []byte {
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
			dst = append(dst, invalid...)
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
