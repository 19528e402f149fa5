package event

import "unicode/utf8"

// AppendString appends s to dst as a JSON string, as encoding/json writes
// it with HTML escaping off, and with the terminal controls escaped as
// well: '"', '\\' and the control characters escaped (\b, \f, \n, \r, \t,
// else \u00XX), the C1 controls U+0080 to U+009F as \u0080 to \u009f, the
// bidi controls U+202A to U+202E and U+2066 to U+2069 (which reorder what a
// terminal shows) as \u202a to \u202e and \u2066 to \u2069, U+2028 and
// U+2029 as \u2028 and \u2029, each byte of invalid UTF-8 as the escape
// \ufffd, and everything else as it is. It is the string encoding of the
// lines looprig writes beside the journal: envelopes, the host protocol,
// --json output; what it writes decodes to what encoding/json's decodes to.
// The event codec writes strings with the same encoder, less the escapes of
// terminal controls (see appendJSONString); JSON from other encoders is
// made as safe by EscapeTerminalControls.
func AppendString(dst []byte, s string) []byte {
	return appendString(dst, s, `\ufffd`, true)
}

// appendJSONString is the string encoding of the event codec, the
// journal's durable bytes: as encoding/json writes strings with HTML
// escaping off, invalid UTF-8 as a literal U+FFFD (what encoding/json
// followed by LiteralReplacement writes), terminal controls as they are.
func appendJSONString(dst []byte, s string) []byte {
	return appendString(dst, s, "\uFFFD", false)
}

// EscapeTerminalControls returns the JSON text b with every C1 control
// (U+0080 to U+009F) and every bidi control (U+202A to U+202E, U+2066 to
// U+2069) written as its \u escape, as AppendString writes them: JSON that
// encoding/json or the event codec wrote, made safe to print on a
// terminal. In JSON text these characters can only be inside strings, and
// their UTF-8 bytes are never part of another character's, so escaping them
// in place keeps the text valid and its meaning unchanged. It returns b
// itself when there is nothing to escape, else a new slice.
func EscapeTerminalControls(b []byte) []byte {
	i := nextTerminalControl(b, 0)
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	start := 0
	for ; i >= 0; i = nextTerminalControl(b, start) {
		r, size := utf8.DecodeRune(b[i:])
		out = append(out, b[start:i]...)
		out = appendRuneEscape(out, r)
		start = i + size
	}
	return append(out, b[start:]...)
}

// nextTerminalControl returns the index of the first C1 or bidi control
// in b[from:] (an index into b), -1 when there is none.
func nextTerminalControl(b []byte, from int) int {
	for i := from; i < len(b); i++ {
		// 0xc2 leads the C1 controls, 0xe2 the bidi ones; neither byte is
		// ever a continuation byte.
		if c := b[i]; c == 0xc2 || c == 0xe2 {
			if r, _ := utf8.DecodeRune(b[i:]); isTerminalControl(r) {
				return i
			}
		}
	}
	return -1
}

// isTerminalControl reports whether r is a C1 control or a bidi control,
// which a terminal acts on rather than shows.
func isTerminalControl(r rune) bool {
	return (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// appendRuneEscape appends r, a character of the Basic Multilingual
// Plane, as \uXXXX.
func appendRuneEscape(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
}

const hexDigits = "0123456789abcdef"

// appendString is the one JSON string encoder: AppendString with invalid
// written for each byte of invalid UTF-8, and the terminal controls escaped
// when terminal is set.
func appendString(dst []byte, s, invalid string, terminal bool) []byte {
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
		if r == '\u2028' || r == '\u2029' || terminal && isTerminalControl(r) {
			dst = append(dst, s[start:i]...)
			dst = appendRuneEscape(dst, r)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
