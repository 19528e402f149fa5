package search

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"
)

// Kind is what an indexed line is.
type Kind byte

// The kinds of lines.
const (
	// KindCommand is a turn's input to a shell (or the demo engine), or
	// input sent to a running turn: the text that was journaled (hidden
	// input never is).
	KindCommand Kind = 1 + iota
	// KindOutput is a line of a turn's output, as a user reads it: escape
	// sequences gone, carriage-return redraws folded (internal/termrender).
	KindOutput
	// KindGate is a gate's prompt or its answer.
	KindGate
	// KindAgent is a prompt to an agent engine, a line of its reply or an
	// agent's notification.
	KindAgent
)

var kindNames = [...]string{KindCommand: "command", KindOutput: "output", KindGate: "gate", KindAgent: "agent"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// ParseKind is the Kind named s ("command", "output", "gate", "agent").
func ParseKind(s string) (Kind, error) {
	for k, n := range kindNames {
		if n != "" && n == s {
			return Kind(k), nil
		}
	}
	return 0, fmt.Errorf("unknown kind %q: want command, output, gate or agent", s)
}

// Line is one indexed line of a session.
type Line struct {
	Turn int // the turn's index; -1 when the line belongs to no turn
	Kind Kind
	At   time.Time
	Text string
}

// maxLineBytes bounds the text kept of one line; the rest of a longer
// line is not indexed (the journal still holds it).
const maxLineBytes = 4 << 10

// A block is up to blockBytes of text (or blockLines lines) of one
// session, stored compressed under its id; the trigram postings name
// blocks, not lines, which keeps them small (a line's trigrams are mostly
// its block's already). A query reads the blocks its trigrams allow and
// checks each line, so a block's text is what a hit costs to decompress.
// Blocks of about 28 KiB (256 lines of 108 bytes), not 512 lines, halved
// that: at 1,000 sessions a word's query and a regexp's with a common
// literal were each 1.5× as fast in process, for 4% more compressed text,
// and the index as a whole is smaller than with 512 lines and postings as
// lists of deltas (postings.go). The bound is bytes, not lines, because
// what a block costs to write is per block: a turn of short lines (`seq`)
// in blocks of 256 lines was indexed 10% slower than in blocks of 512.
const (
	blockBytes = 28 << 10
	blockLines = 1024
)

// blockFormat is the first byte of every stored block.
const blockFormat = 2

// blockHeader is what a block says of itself outside its compressed
// lines, so that a filtered query skips it unread.
type blockHeader struct {
	session uuid.UUID
	last    time.Time // the time of its newest line
}

// The block codecs, an Index's own (Index.encoder, Index.decoder): made at
// first use and dropped with it, so that what they keep between blocks
// (tables and windows, a few megabytes) is garbage once the index is
// closed, which a host that indexes between turns gives back before it
// sleeps.
func newEncoder() *zstd.Encoder {
	e, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(blocksInFlight))
	return e
}

// newDecoder's decoder serves every goroutine that checks blocks
// (Search); a block's checksum is not checked (bbolt's pages are the
// index's integrity: a block that does not decode is damage, found all
// the same).
func newDecoder() *zstd.Decoder {
	d, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(maxVerifiers), zstd.IgnoreChecksum(true))
	return d
}

// errBadBlock: a stored block does not decode; the index is corrupt.
var errBadBlock = errors.New("search index: a block does not decode")

// encodeBlock stores lines of session sess.
func encodeBlock(enc *zstd.Encoder, sess uuid.UUID, lines []Line) []byte {
	var last time.Time
	var prev int64 // a line's time is stored as the difference from the line before's
	raw := make([]byte, 0, 64*len(lines))
	for _, l := range lines {
		if l.At.After(last) {
			last = l.At
		}
		ms := l.At.UnixMilli()
		raw = binary.AppendVarint(raw, int64(l.Turn))
		raw = append(raw, byte(l.Kind))
		raw = binary.AppendVarint(raw, ms-prev)
		prev = ms
		raw = binary.AppendUvarint(raw, uint64(len(l.Text)))
		raw = append(raw, l.Text...)
	}
	out := make([]byte, 0, 32+len(raw)/3)
	out = append(out, blockFormat)
	out = append(out, sess[:]...)
	out = binary.AppendVarint(out, last.UnixMilli())
	return enc.EncodeAll(raw, out)
}

// decodeHeader reads a block's header and returns the rest (its
// compressed lines).
func decodeHeader(b []byte) (blockHeader, []byte, error) {
	if len(b) < 18 || b[0] != blockFormat {
		return blockHeader{}, nil, errBadBlock
	}
	var h blockHeader
	copy(h.session[:], b[1:17])
	ms, n := binary.Varint(b[17:])
	if n <= 0 {
		return blockHeader{}, nil, errBadBlock
	}
	h.last = time.UnixMilli(ms)
	return h, b[17+n:], nil
}

// decodeLines decodes a block's compressed lines, appending to dst.
func decodeLines(dec *zstd.Decoder, dst []Line, body []byte) ([]Line, error) {
	refs, raw, err := decodeRefs(dec, nil, body, nil)
	if err != nil {
		return dst, err
	}
	s := string(raw) // one copy, which the lines' texts share
	for _, r := range refs {
		dst = append(dst, Line{Turn: r.turn, Kind: r.kind, At: time.UnixMilli(r.ms), Text: s[r.start:r.end]})
	}
	return dst, nil
}

// wordStart marks a trigram that begins a word: the first of its bytes
// is a word character of regular expressions (ASCII letters, digits and
// _, as \b tests) and the byte before it in its line is not one, or there
// is none. A block holds both grams of such a trigram, the plain one and
// the marked one, so that /\bdea/ reads the blocks where a word begins
// with "dea" and not every block where "dea" is inside one (in a log of
// hex ids, a third of them). Grams are 25 bits: a trigram's 24 and this.
const wordStart = 1 << 24

// isWordByte reports whether c is a word character of \b (ASCII).
func isWordByte(c byte) bool { return wordBytes[c] == 1 }

// wordBytes is 1 for the word characters of \b (ASCII letters, digits
// and _), 0 for other bytes.
var wordBytes = func() (t [256]uint64) {
	for c := range t {
		if c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
			t[c] = 1
		}
	}
	return t
}()

// gramSet collects the distinct grams of some text (trigrams, and those
// that begin a word marked wordStart): a bitmap of every possible gram
// (4 MiB) and the list of those set, cleared after use. A trigram's two
// bits are side by side (bit), so that noting both costs one cache line.
type gramSet struct {
	bits *[2 * wordStart / 64]uint64
	set  []uint32
}

func newGramSet() *gramSet { return &gramSet{bits: new([2 * wordStart / 64]uint64)} }

// bit is gram t's place in the bitmap.
func bit(t uint32) uint32 { return (t&(wordStart-1))<<1 | t>>24&1 }

// add adds the grams of s, lower-cased.
func (g *gramSet) add(s string) {
	folded := false
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			// Lower-casing may lengthen s: a byte that is not UTF-8
			// becomes U+FFFD's three, as a query's does.
			s, folded = strings.ToLower(s), true
			break
		}
	}
	g.addTrigrams(s)
	g.addWordStarts(s, folded)
}

// addTrigrams adds the trigrams of s, whose ASCII is folded as it is read
// (asciiLower), without a lower-cased copy of every line: the same
// trigrams as lower(s)'s when s is ASCII or lower-cased.
func (g *gramSet) addTrigrams(s string) {
	if len(s) < 3 {
		return
	}
	// The trigram rolls: each byte shifts one in.
	t := uint32(asciiLower[s[0]])<<8 | uint32(asciiLower[s[1]])
	for i := 0; i+2 < len(s); i++ {
		t = (t<<8 | uint32(asciiLower[s[i+2]])) & (wordStart - 1)
		w, b := &g.bits[t/32%uint32(len(g.bits))], uint64(1)<<(t%32*2) // bit(t)
		if *w&b == 0 {
			*w |= b
			g.set = append(g.set, t)
		}
	}
}

// addWordStarts adds the trigrams of s (lower-cased) that begin a word,
// marked wordStart. It is a loop of its own, after the trigrams': a
// branch on where words begin, in their loop, is one no predictor
// guesses, and each miss threw away the bitmap reads in flight (noting a
// block's grams took twice as long as its trigrams alone; this way, 1.65
// times: BenchmarkGramSetAdd). Here the word starts of 64 bytes at a
// time are found as a mask, and only they are visited; their bits are
// beside their trigrams', which the loop before just read.
func (g *gramSet) addWordStarts(s string, folded bool) {
	var prev uint64 // the byte before this stretch is a word character
	for base := 0; base+2 < len(s); base += 64 {
		end := min(base+64, len(s)-2) // each position with a whole trigram
		var word uint64
		j := base
		for ; j+8 <= end; j += 8 { // eight at a time, independent of each other
			b := s[j : j+8]
			word |= (wordBytes[b[0]] | wordBytes[b[1]]<<1 | wordBytes[b[2]]<<2 | wordBytes[b[3]]<<3 |
				wordBytes[b[4]]<<4 | wordBytes[b[5]]<<5 | wordBytes[b[6]]<<6 | wordBytes[b[7]]<<7) << (j - base)
		}
		for ; j < end; j++ {
			word |= wordBytes[s[j]] << (j - base)
		}
		starts := word &^ (word<<1 | prev)
		prev = word >> (end - base - 1) & 1
		if folded {
			for j := base; j < end; j++ {
				if wordBytes[s[j]] == 1 && startsWordFolded(s, j) {
					starts |= 1 << (j - base)
				}
			}
		}
		// Each start's gram is written past the set's end, which moves
		// over it when it is new: whether it is, no predictor guesses.
		n := len(g.set)
		set := slices.Grow(g.set, bits.OnesCount64(starts))
		set = set[:n+bits.OnesCount64(starts)]
		for starts != 0 {
			j := base + bits.TrailingZeros64(starts)
			starts &= starts - 1
			t := uint32(asciiLower[s[j]])<<16 | uint32(asciiLower[s[j+1]])<<8 | uint32(asciiLower[s[j+2]])
			w, sh := &g.bits[t/32%uint32(len(g.bits))], t%32*2+1 // bit(wordStart|t)
			isNew := ^*w >> sh & 1
			*w |= 1 << sh
			set[n] = wordStart | t
			n += int(isNew)
		}
		g.set = set[:n]
	}
}

// startsWordFolded reports whether the word character at s[i], in a line
// lower-cased with non-ASCII in it, may begin a word of the line as it
// was: two runes lower-case to ASCII letters, the Kelvin sign to k and
// İ to i, and neither is a word character of \b. So a k or an i may be
// one of them, not a word character, after a word (/\bkb/ matches
// "aKb" in any case); and the byte after one may have begun a word.
func startsWordFolded(s string, i int) bool {
	return s[i] == 'k' || s[i] == 'i' || i > 0 && (s[i-1] == 'k' || s[i-1] == 'i')
}

// take returns the grams added since the last take and clears the set.
func (g *gramSet) take() []uint32 {
	out := g.set
	for _, t := range out {
		g.bits[bit(t)/64%uint32(len(g.bits))] = 0
	}
	g.set = nil
	return out
}

// asciiLower maps each byte to itself, A-Z to a-z.
var asciiLower = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = byte(c) + 'a' - 'A'
	}
	return t
}()

// lower lower-cases s, quickly when it is ASCII.
func lower(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return strings.ToLower(s)
		}
		if 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 0x80 {
					return strings.ToLower(s)
				}
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// trigrams returns the distinct trigrams of s, lower-cased.
func trigrams(s string) []uint32 {
	s = lower(s)
	var out []uint32
	for i := 0; i+3 <= len(s); i++ {
		t := uint32(s[i])<<16 | uint32(s[i+1])<<8 | uint32(s[i+2])
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}
