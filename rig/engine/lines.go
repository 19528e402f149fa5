package engine

import (
	"bytes"
	"unicode/utf8"
)

// splitter bounds line lengths in a byte stream: whenever a line would
// exceed max bytes it inserts a newline. It keeps the length of the current
// (unterminated) line across calls, so chunk boundaries do not matter.
type splitter struct {
	max     int
	lineLen int    // bytes of the current line already emitted
	out     []byte // reused output buffer
}

// split returns data with newlines inserted so that no line is longer than
// s.max bytes (s.max ≤ 0: data as it is). The result is valid until the
// next call.
func (s *splitter) split(data []byte) []byte {
	if s.max <= 0 {
		return data
	}
	s.out = s.out[:0]
	for len(data) > 0 {
		if s.lineLen+len(data) <= s.max {
			// No line in data can overflow: pass it through whole.
			s.out = append(s.out, data...)
			if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
				s.lineLen = len(data) - i - 1
			} else {
				s.lineLen += len(data)
			}
			break
		}
		nl := bytes.IndexByte(data, '\n')
		if nl >= 0 && s.lineLen+nl <= s.max {
			s.out = append(s.out, data[:nl+1]...)
			s.lineLen = 0
			data = data[nl+1:]
			continue
		}
		// The current line overflows within data (len(data) > room).
		room := s.max - s.lineLen
		cut := runeCut(data, room)
		if cut == 0 && s.lineLen == 0 {
			cut = room // a rune wider than max: split it rather than stall
		}
		s.out = append(s.out, data[:cut]...)
		s.out = append(s.out, '\n')
		s.lineLen = 0
		data = data[cut:]
	}
	return s.out
}

// runeCut returns the cut position ≤ room in data (len(data) > room) that does
// not split a UTF-8 sequence starting in data: room itself, or the start of
// the sequence that straddles it.
func runeCut(data []byte, room int) int {
	i := room
	for i > 0 && room-i < 3 && isCont(data[i]) {
		i--
	}
	if i < room && !isCont(data[i]) && i+seqLen(data[i]) > room {
		return i
	}
	return room
}

func isCont(b byte) bool { return b&0xC0 == 0x80 }

// seqLen is the length of the UTF-8 sequence a byte announces (1 for ASCII,
// continuation and invalid bytes).
func seqLen(b byte) int {
	switch {
	case b >= 0xF0 && b <= 0xF7:
		return 4
	case b >= 0xE0:
		if b <= 0xEF {
			return 3
		}
		return 1
	case b >= 0xC0:
		return 2
	}
	return 1
}

// incompleteTail returns how many bytes at the end of data are the start of
// a UTF-8 sequence whose remaining bytes have not arrived yet (0..3).
func incompleteTail(data []byte) int {
	for i := len(data) - 1; i >= 0 && i >= len(data)-3; i-- {
		b := data[i]
		if b < utf8.RuneSelf {
			return 0
		}
		if !isCont(b) {
			if !utf8.FullRune(data[i:]) {
				return len(data) - i
			}
			return 0
		}
	}
	return 0
}
