package search

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Checking a block: its lines are decoded as ranges of the decompressed
// block (lineRef), not strings, and the block is scanned as a whole for
// the query's anchor, a string every matching line holds; only the lines
// the anchor is found in are matched. A block without the anchor (a
// trigram false positive: the trigrams were there, not the string) costs
// its decompression and one scan (bytes.Index, or a scan for the anchor's
// rarest byte in either case).

// lineRef is a line of a decoded block, its text raw[start:end].
type lineRef struct {
	turn       int
	kind       Kind
	ms         int64
	start, end int
}

func (r lineRef) line(raw []byte) Line {
	return Line{Turn: r.turn, Kind: r.kind, At: time.UnixMilli(r.ms), Text: string(raw[r.start:r.end])}
}

// decodeRefs decompresses a block's lines into buf (reused) and appends
// their ranges to dst.
func decodeRefs(dec *zstd.Decoder, dst []lineRef, body []byte, buf []byte) ([]lineRef, []byte, error) {
	raw, err := dec.DecodeAll(body, buf[:0])
	if err != nil {
		return dst, buf, fmt.Errorf("%w: %w", errBadBlock, err)
	}
	var prev int64
	for i := 0; i < len(raw); {
		turn, n := binary.Varint(raw[i:])
		if n <= 0 || i+n >= len(raw) {
			return dst, raw, errBadBlock
		}
		i += n
		kind := Kind(raw[i])
		i++
		d, n := binary.Varint(raw[i:])
		if n <= 0 {
			return dst, raw, errBadBlock
		}
		i += n
		prev += d
		ln, n := binary.Uvarint(raw[i:])
		if n <= 0 || uint64(len(raw)-i-n) < ln {
			return dst, raw, errBadBlock
		}
		i += n
		dst = append(dst, lineRef{turn: int(turn), kind: kind, ms: prev, start: i, end: i + int(ln)})
		i += int(ln)
	}
	return dst, raw, nil
}

// anchor is a string every line a query matches holds: exactly, or in
// any case (fold; s is then lower-cased ASCII).
type anchor struct {
	s    string
	fold bool
	// rare is the index in s of the byte scanned for (fold): the one
	// least frequent in text.
	rare int
}

func newAnchor(s string, fold bool) anchor {
	a := anchor{s: s, fold: fold}
	if fold {
		for i := 0; i < len(s); i++ {
			if byteRank(s[i]) < byteRank(s[a.rare]) {
				a.rare = i
			}
		}
	}
	return a
}

// byteRank orders bytes by how common they are in text (lower: rarer).
func byteRank(c byte) int {
	const common = "etaoinsrhldcumfpgwybvkxjqz" // most common first
	if i := strings.IndexByte(common, c); i >= 0 {
		return 100 - i
	}
	switch {
	case c == ' ':
		return 200
	case '0' <= c && c <= '9':
		return 60
	}
	return 0
}

// index returns the first index of a in b, -1 when there is none.
func (a anchor) index(b []byte) int {
	if !a.fold {
		return bytes.Index(b, []byte(a.s))
	}
	c := a.s[a.rare]
	if c < 'a' || c > 'z' {
		for from := a.rare; from < len(b); {
			i := bytes.IndexByte(b[from:], c)
			if i < 0 {
				return -1
			}
			if p := from + i - a.rare; p+len(a.s) <= len(b) && equalFold(b[p:p+len(a.s)], a.s) {
				return p
			}
			from += i + 1
		}
		return -1
	}
	// The next position of the byte in each case, each found once.
	cu := c - ('a' - 'A')
	lo, up := nextByte(b, a.rare, c), nextByte(b, a.rare, cu)
	for lo >= 0 || up >= 0 {
		var at int
		if up < 0 || lo >= 0 && lo < up {
			at, lo = lo, nextByte(b, lo+1, c)
		} else {
			at, up = up, nextByte(b, up+1, cu)
		}
		if p := at - a.rare; p+len(a.s) <= len(b) && equalFold(b[p:p+len(a.s)], a.s) {
			return p
		}
	}
	return -1
}

// nextByte is the index of the first c in b from from on, -1 when none.
func nextByte(b []byte, from int, c byte) int {
	if from >= len(b) {
		return -1
	}
	if i := bytes.IndexByte(b[from:], c); i >= 0 {
		return from + i
	}
	return -1
}

// equalFold reports whether b is s (lower-cased ASCII) in any case.
func equalFold(b []byte, s string) bool {
	for i := range len(s) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// scanBlock calls check with the index of each line of refs that may
// match q: those that hold q's anchor (each once), or all of them when q
// has none.
func scanBlock(q *Query, raw []byte, refs []lineRef, check func(i int) error) error {
	a := q.anchor
	if a.s == "" {
		for i := range refs {
			if err := check(i); err != nil {
				return err
			}
		}
		return nil
	}
	li := 0
	for pos := 0; pos < len(raw) && li < len(refs); {
		i := a.index(raw[pos:])
		if i < 0 {
			return nil
		}
		p := pos + i
		for li < len(refs) && refs[li].end < p+len(a.s) {
			li++
		}
		if li == len(refs) {
			return nil
		}
		if refs[li].start > p {
			// Found across a line's header (its bytes are not text).
			pos = p + 1
			continue
		}
		if err := check(li); err != nil {
			return err
		}
		pos = refs[li].end
		li++
	}
	return nil
}
