// Package textsafe makes untrusted text safe to draw on a terminal.
//
// Command output, session titles, paths and error causes come from places
// looprig does not control. Written to a terminal as they are, their
// control characters could move the cursor, clear the screen, set the
// clipboard (OSC 52), retitle the window, hide text, or reorder what is
// shown (Unicode bidi overrides). Sanitize keeps printable text, newlines
// and tabs, and turns everything else into visible, inert text:
//
//   - C0 controls other than \n and \t, and DEL, in caret notation:
//     ESC is "^[", BEL "^G", CR "^M", NUL "^@", DEL "^?". An escape
//     sequence such as "\x1b]52;c;…\x07" (OSC 52) therefore prints as
//     "^[]52;c;…^G": every byte of it is visible and none is interpreted.
//   - C1 controls (U+0080–U+009F, including the one-character CSI U+009B),
//     Unicode bidi controls (U+061C, U+200E, U+200F, U+202A–U+202E,
//     U+2066–U+2069) and the line and paragraph separators U+2028 and
//     U+2029 as "<U+XXXX>".
//   - Invalid UTF-8 as U+FFFD, one per invalid byte.
//
// Line is Sanitize for one-line fields (titles, table cells): it also shows
// newline as "^J" and tab as "^I".
//
// A literal "^[" in the input prints the same as an ESC: the output is
// for people to read, not to be parsed back.
package textsafe

import (
	"strings"
	"unicode/utf8"
)

// Sanitize returns s with every character that a terminal would interpret
// made visible and inert; printable text, '\n' and '\t' are kept.
func Sanitize(s string) string { return sanitize(s, false) }

// Line is Sanitize for one-line fields: '\n' and '\t' are shown as "^J"
// and "^I" too.
func Line(s string) string { return sanitize(s, true) }

// Safe reports whether s would come out of Sanitize unchanged.
func Safe(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return false
		}
		if hidden(r) {
			return false
		}
		i += n
	}
	return true
}

func sanitize(s string, oneLine bool) string {
	if !oneLine && Safe(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\n' || c == '\t':
				if oneLine {
					b.WriteByte('^')
					b.WriteByte(c + 0x40)
				} else {
					b.WriteByte(c)
				}
			case c < 0x20:
				b.WriteByte('^')
				b.WriteByte(c + 0x40)
			case c == 0x7f:
				b.WriteString("^?")
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteRune(utf8.RuneError)
		case hidden(r):
			writeCode(&b, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// hidden reports runes above ASCII that must not reach a terminal as they
// are: C1 controls, bidi controls, line and paragraph separators.
func hidden(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e:
		return true
	case r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

const hexDigits = "0123456789ABCDEF"

func writeCode(b *strings.Builder, r rune) {
	b.WriteString("<U+")
	for shift := 12; shift >= 0; shift -= 4 {
		b.WriteByte(hexDigits[(r>>uint(shift))&0xf])
	}
	b.WriteByte('>')
}
