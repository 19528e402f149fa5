// Package tomlscan bounds the shape of a TOML document before a decoder
// reads it. The TOML decoder looprig uses (BurntSushi/toml) takes time and
// memory quadratic in the depth of nested inline tables and in the number
// of parts of a dotted key: a few KiB of either takes gigabytes. Check
// reads the document once, in time and memory linear in its size, and
// refuses one that nests values deeper, writes longer keys, or has more
// keys and values than a file of looprig's needs (a configuration file or
// a theme has a few dozen).
//
// Check follows TOML's lexical structure (comments; basic, literal and
// multi-line strings; keys, bare, quoted and dotted; table headers; arrays
// and inline tables) from where the decoder starts: past the byte-order
// mark it skips (Marks). It is no validator, but it refuses what it cannot
// follow, with a *ShapeError at its line: what it has not read, it has not
// bounded, and a decoder that reads past the same place (as it did past a
// mark Check once did not skip) would decode it unchecked. A mistake it
// reads past, and one at the end of the document, are left to the
// decoder, which then reads nothing Check has not.
package tomlscan

import (
	"bytes"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Marks are the byte-order marks the decoder (BurntSushi/toml's parse)
// skips at the start of a document, and so does Check: one of them, the
// first that matches, in this order. A document in UTF-16 does not get
// far past its mark: Check refuses its first NUL byte.
var Marks = [][]byte{
	{0xff, 0xfe},       // UTF-16, little-endian
	{0xfe, 0xff},       // UTF-16, big-endian
	{0xef, 0xbb, 0xbf}, // UTF-8
}

// Limits bounds a document's shape.
type Limits struct {
	// Depth bounds the nesting of arrays and inline tables in a value.
	Depth int
	// KeyParts bounds the parts of a dotted key or a table header.
	KeyParts int
	// KeyBytes bounds one part of a key.
	KeyBytes int
	// Values bounds the keys, table headers and array elements of the
	// document, together.
	Values int
}

// Default is what looprig's files are held to: they nest three levels at
// most (profiles = { work = { gate_policy = [...] } }) and their keys have
// three parts (colors.accent.truecolor).
var Default = Limits{Depth: 8, KeyParts: 8, KeyBytes: 256, Values: 2_000}

// ShapeError refuses a document that goes past a limit, at a line.
type ShapeError struct {
	Line   int // 1-based
	Reason string
}

func (e *ShapeError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Reason) }

// Check returns a *ShapeError when doc goes past lim or holds what Check
// cannot follow before its end, else nil.
func Check(doc []byte, lim Limits) error {
	s := &scanner{b: doc, line: 1, lim: lim}
	for _, m := range Marks {
		if bytes.HasPrefix(doc, m) {
			s.i = len(m)
			break
		}
	}
	s.document()
	if s.err == nil && s.stop && s.i < len(s.b) {
		// Stopped where the rest is unread: refuse it.
		s.err = &ShapeError{Line: s.line, Reason: "invalid TOML: " + s.why}
	}
	return s.err
}

type scanner struct {
	b      []byte
	i      int
	line   int
	lim    Limits
	depth  int
	values int
	err    error
	stop   bool   // stopped: past a limit, or at what it cannot follow
	why    string // what it could not follow, when that stopped it
}

// halt stops the scan at what it cannot follow: want is what it expected
// there (Check refuses the document unless nothing is left to read).
func (s *scanner) halt(want string) {
	if s.stop {
		return
	}
	s.stop = true
	if s.i >= len(s.b) {
		s.why = want + ", found the end of the file"
		return
	}
	s.why = fmt.Sprintf("%s, found %s", want, describe(s.b[s.i:]))
}

// describe names the character b starts with, for a refusal.
func describe(b []byte) string {
	r, n := utf8.DecodeRune(b)
	switch {
	case r == 0:
		return "a NUL byte (TOML files are UTF-8; is this one UTF-16?)"
	case r == '\n' || r == '\r':
		return "the end of the line"
	case r == 0xfeff:
		return "a byte-order mark (U+FEFF) past the start of the file"
	case r == utf8.RuneError && n <= 1:
		return fmt.Sprintf("byte 0x%02x, not UTF-8", b[0])
	case unicode.IsPrint(r):
		return fmt.Sprintf("%q", r)
	}
	return fmt.Sprintf("%U", r)
}

func (s *scanner) fail(format string, args ...any) {
	if s.err == nil {
		s.err = &ShapeError{Line: s.line, Reason: fmt.Sprintf(format, args...)}
	}
	s.stop = true
}

func (s *scanner) eof() bool { return s.stop || s.i >= len(s.b) }

func (s *scanner) peek() byte { return s.b[s.i] }

// count counts one key, header or element.
func (s *scanner) count() {
	if s.values++; s.values > s.lim.Values {
		s.fail("more than %d keys and values; this is not a file of looprig's", s.lim.Values)
	}
}

// blank skips spaces and tabs.
func (s *scanner) blank() {
	for !s.eof() && (s.peek() == ' ' || s.peek() == '\t') {
		s.i++
	}
}

// space skips white space, newlines and comments (inside arrays).
func (s *scanner) space() {
	for !s.eof() {
		switch s.peek() {
		case ' ', '\t', '\r':
			s.i++
		case '\n':
			s.i++
			s.line++
		case '#':
			s.comment()
		default:
			return
		}
	}
}

// comment skips to the end of the line (not past its newline).
func (s *scanner) comment() {
	for !s.eof() && s.peek() != '\n' {
		s.i++
	}
}

// document reads the top level: key/value lines and table headers.
func (s *scanner) document() {
	for !s.eof() {
		s.space()
		if s.eof() {
			return
		}
		if s.peek() == '[' {
			s.header()
		} else {
			s.keyValue()
		}
		// The rest of the line: a comment, else what the decoder refuses.
		s.blank()
		if !s.eof() && s.peek() == '#' {
			s.comment()
		}
		if !s.eof() && s.peek() != '\n' && s.peek() != '\r' {
			s.halt("expected the end of the line or a comment")
		}
	}
}

// header reads [a.b] or [[a.b]].
func (s *scanner) header() {
	s.i++
	double := !s.eof() && s.peek() == '['
	if double {
		s.i++
	}
	s.count()
	s.key()
	if s.eof() || s.peek() != ']' {
		if double {
			s.halt("expected ']]' to close an array-of-tables header")
		} else {
			s.halt("expected ']' to close a table header")
		}
		return
	}
	s.i++
	if double {
		if s.eof() || s.peek() != ']' {
			s.halt("expected ']]' to close an array-of-tables header")
			return
		}
		s.i++
	}
}

// keyValue reads key = value.
func (s *scanner) keyValue() {
	s.count()
	s.key()
	s.blank()
	if s.eof() || s.peek() != '=' {
		s.halt("expected '=' after a key")
		return
	}
	s.i++
	s.blank()
	s.value()
}

// key reads a dotted key: parts, bare or quoted, separated by dots.
func (s *scanner) key() {
	parts := 0
	for {
		s.blank()
		if s.eof() {
			s.halt("expected a key")
			return
		}
		start := s.i
		switch c := s.peek(); {
		case c == '"' || c == '\'':
			if !s.singleLineString(c) {
				return
			}
		case isBare(c):
			for !s.eof() && isBare(s.peek()) {
				s.i++
			}
		default:
			s.halt("expected a key (letters, digits, '_', '-', or quoted)")
			return
		}
		if n := s.i - start; n > s.lim.KeyBytes+2 {
			s.fail("a key longer than %d bytes", s.lim.KeyBytes)
			return
		}
		if parts++; parts > s.lim.KeyParts {
			s.fail("a key of more than %d dotted parts", s.lim.KeyParts)
			return
		}
		s.blank()
		if s.eof() || s.peek() != '.' {
			return
		}
		s.i++
	}
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// value reads one value: a string, an array, an inline table or a scalar
// (a number, a boolean or a date, read up to the next delimiter).
func (s *scanner) value() {
	if s.eof() {
		return
	}
	switch c := s.peek(); c {
	case '"', '\'':
		if s.i+2 < len(s.b) && s.b[s.i+1] == c && s.b[s.i+2] == c {
			s.multiLineString(c)
		} else {
			s.singleLineString(c)
		}
	case '[':
		s.array()
	case '{':
		s.inlineTable()
	default:
		for !s.eof() {
			switch s.peek() {
			case ',', ']', '}', '\n', '\r', '#':
				return
			}
			s.i++
		}
	}
}

func (s *scanner) nest() bool {
	if s.depth++; s.depth > s.lim.Depth {
		s.fail("values nested deeper than %d levels", s.lim.Depth)
		return false
	}
	return true
}

// array reads [v, v, ...], comments and newlines between.
func (s *scanner) array() {
	s.list(']', "expected ',' or ']' in an array", func() {
		s.count()
		s.value()
	})
}

// inlineTable reads { k = v, k = v }.
func (s *scanner) inlineTable() {
	s.list('}', "expected ',' or '}' in an inline table", s.keyValue)
}

// list reads what array and inlineTable share: the opening bracket, then
// items read by item and separated by commas, up to the closing byte end;
// anything else after an item halts with want.
func (s *scanner) list(end byte, want string, item func()) {
	s.i++
	if !s.nest() {
		return
	}
	defer func() { s.depth-- }()
	for {
		s.space()
		if s.eof() {
			return
		}
		if s.peek() == end {
			s.i++
			return
		}
		item()
		s.space()
		if s.eof() {
			return
		}
		switch s.peek() {
		case ',':
			s.i++
		case end:
		default:
			s.halt(want)
			return
		}
	}
}

// singleLineString reads "..." (with escapes) or '...'; false when it does
// not end on its line.
func (s *scanner) singleLineString(q byte) bool {
	s.i++
	for !s.eof() {
		switch c := s.peek(); {
		case c == '\n':
			s.halt("expected a string to end on its line")
			return false
		case c == '\\' && q == '"':
			s.i += 2
			continue
		case c == q:
			s.i++
			return true
		}
		s.i++
	}
	s.halt("expected a string to end")
	return false
}

// multiLineString reads """...""" (with escapes) or ”'...”', and up to
// two quotes right before its end, which are its own.
func (s *scanner) multiLineString(q byte) {
	s.i += 3
	for !s.eof() {
		switch c := s.peek(); {
		case c == '\n':
			s.line++
		case c == '\\' && q == '"':
			if s.i+1 < len(s.b) && s.b[s.i+1] == '\n' {
				s.line++
			}
			s.i += 2
			continue
		case c == q && s.i+2 < len(s.b) && s.b[s.i+1] == q && s.b[s.i+2] == q:
			s.i += 3
			for n := 0; n < 2 && !s.eof() && s.peek() == q; n++ {
				s.i++
			}
			return
		}
		s.i++
	}
	s.halt("expected a multi-line string to end")
}
