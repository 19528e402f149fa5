package search

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// The trigram postings: for each trigram (three bytes of lower-cased
// text) and each chunk of 1<<chunkShift block ids, the offsets within the
// chunk of the blocks that hold it. Keys are the trigram's 3 bytes then
// the chunk's 4 (big-endian), so a trigram's chunks are adjacent and in
// order.
//
// A value is in one of two forms, told by its first byte, whichever is
// smaller: a list of the sorted offsets as uvarint deltas (a trigram in
// few blocks), or a bitmap as long as its last offset needs (one in many:
// most of a log's trigrams are in most of its blocks, and a list spends a
// byte on each where a bitmap spends a bit). A list grows by appending,
// without being decoded; it becomes a bitmap once that is smaller, and a
// bitmap stays one.
//
// A chunk is 8,192 blocks, so that three full bitmaps (1 KiB each) fit in
// a page of bbolt's: two of a chunk of 16,384 (2 KiB each, with their
// headers) would not, and bbolt splits no page below two keys, so each
// pair would take two pages.
const chunkShift = 13

// chunkMask is a block id's offset in its chunk.
const chunkMask = 1<<chunkShift - 1

// The forms of a postings value (its first byte).
const (
	postingsList   byte = 0
	postingsBitmap byte = 1
)

// gramKey is the key of gram g's postings in chunk: the gram's four bytes
// (the first 1 for a word's first trigram, wordStart) and the chunk's.
func gramKey(g uint32, chunk uint32) []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(make([]byte, 0, gramKeyLen), g), chunk)
}

// gramKeyLen is the length of a postings key.
const gramKeyLen = 8

// decodePostings appends the block ids of a chunk's value to dst.
func decodePostings(dst []uint64, chunk uint32, v []byte) ([]uint64, error) {
	if len(v) == 0 {
		return dst, errBadBlock
	}
	base := uint64(chunk) << chunkShift
	switch v[0] {
	case postingsList:
		var prev uint64
		for i := 1; i < len(v); {
			d, n := binary.Uvarint(v[i:])
			if n <= 0 || d > chunkMask-prev {
				return dst, errBadBlock // torn, or past the chunk's end
			}
			i += n
			prev += d
			dst = append(dst, base+prev)
		}
		return dst, nil
	case postingsBitmap:
		if len(v) > bitmapSize(chunkMask) {
			return dst, errBadBlock // past the chunk's end
		}
		for i, b := range v[1:] {
			for b != 0 {
				dst = append(dst, base+uint64(i*8+bits.TrailingZeros8(b)))
				b &= b - 1
			}
		}
		return dst, nil
	}
	return dst, errBadBlock
}

// lastListed is the last offset of a list value's body, read without
// decoding the offsets into a list.
func lastListed(body []byte) (last uint64, err error) {
	for i := 0; i < len(body); {
		d, k := binary.Uvarint(body[i:])
		if k <= 0 {
			return 0, errBadBlock
		}
		i += k
		last += d
	}
	return last, nil
}

// bitmapSize is the length of a bitmap value whose last offset is last.
func bitmapSize(last uint64) int { return 1 + int(last/8) + 1 }

// mergePostings merges ids (sorted, all in chunk) into the chunk's value
// old (nil: none yet) and returns the new value; old is not modified.
func mergePostings(old []byte, chunk uint32, ids []uint64) ([]byte, error) {
	if len(old) > 0 && old[0] == postingsBitmap {
		if len(old) > bitmapSize(chunkMask) {
			return nil, errBadBlock
		}
		// old may be bbolt's (its memory map): the bits are set in a copy.
		v := make([]byte, max(len(old), bitmapSize(ids[len(ids)-1]&chunkMask)))
		copy(v, old)
		return setBits(v, ids), nil
	}
	var last uint64
	if len(old) > 0 {
		if old[0] != postingsList {
			return nil, errBadBlock
		}
		var err error
		if last, err = lastListed(old[1:]); err != nil {
			return nil, err
		}
	}
	var out []byte
	if len(old) <= 1 || last < ids[0]&chunkMask {
		// The common case: new blocks come after every one it has.
		out = slices.Clip(old)
		if len(out) == 0 {
			out = []byte{postingsList}
		}
		out, last = appendDeltas(out, last, ids)
	} else {
		have, err := decodePostings(nil, chunk, old)
		if err != nil {
			return nil, err
		}
		all := append(have, ids...)
		slices.Sort(all)
		all = slices.Compact(all)
		out, last = appendDeltas(make([]byte, 1, len(all)+8), 0, all)
	}
	if len(out) <= bitmapSize(last) {
		return out, nil
	}
	all, err := decodePostings(nil, chunk, out)
	if err != nil {
		return nil, err
	}
	return setBits([]byte{postingsBitmap}, all), nil
}

// appendDeltas appends the offsets of ids (sorted, after prev) to a list
// value as deltas, and returns it with the last offset.
func appendDeltas(out []byte, prev uint64, ids []uint64) ([]byte, uint64) {
	for _, id := range ids {
		off := id & chunkMask
		out = binary.AppendUvarint(out, off-prev)
		prev = off
	}
	return out, prev
}

// setBits sets the bits of ids' offsets (sorted) in bitmap value v,
// growing it.
func setBits(v []byte, ids []uint64) []byte {
	if n := bitmapSize(ids[len(ids)-1] & chunkMask); n > len(v) {
		v = append(v, make([]byte, n-len(v))...)
	}
	for _, id := range ids {
		off := id & chunkMask
		v[1+off/8] |= 1 << (off % 8)
	}
	return v
}
