package search

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

// A chunk's postings merge to the sorted set of every block id given,
// whether the new ids come after the ones it has (a catch-up: appended
// without decoding them) or among them (a session indexed again), in
// whichever form is smaller (a list of a few, a bitmap of many), and a
// value that does not decode is refused, not merged.
func TestMergePostings(t *testing.T) {
	const chunk = 3
	base := uint64(chunk) << chunkShift
	rng := rand.New(rand.NewPCG(1, 2))
	forms := map[byte]int{}
	for round := range 400 {
		var want []uint64
		var v []byte
		dense := round%4 >= 2 // many ids close together: a bitmap
		for range 1 + rng.IntN(6) {
			var ids []uint64
			lo := uint64(0)
			if round%2 == 0 && len(want) > 0 {
				lo = want[len(want)-1] - base + 1 // after every one: the append path
			}
			count, span := 1+rng.IntN(20), uint64(1<<chunkShift)-lo
			if dense {
				count, span = 1+rng.IntN(600), min(span, 700)
			}
			for range count {
				if span > 0 {
					ids = append(ids, base+lo+rng.Uint64N(span))
				}
			}
			if len(ids) == 0 {
				continue
			}
			slices.Sort(ids)
			ids = slices.Compact(ids)
			old, before := v, slices.Clone(v)
			var err error
			if v, err = mergePostings(v, chunk, ids); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(old, before) {
				t.Fatalf("round %d: the old value was modified (it may be bbolt's memory map)", round)
			}
			want = append(want, ids...)
			slices.Sort(want)
			want = slices.Compact(want)
			got, err := decodePostings(nil, chunk, v)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("round %d: merged %v, want %v", round, got, want)
			}
			last := want[len(want)-1] - base
			if size := bitmapSize(last); v[0] == postingsList && len(v) > size || v[0] == postingsBitmap && len(v) != size {
				t.Fatalf("round %d: %d ids up to %d stored in form %d in %d bytes; a bitmap is %d", round, len(want), last, v[0], len(v), size)
			}
		}
		forms[v[0]]++
	}
	if forms[postingsList] == 0 || forms[postingsBitmap] == 0 {
		t.Errorf("values in each form: %v; want both", forms)
	}
	pastEnd := append([]byte{postingsBitmap}, make([]byte, 1<<chunkShift/8+1)...)
	pastEnd[len(pastEnd)-1] = 1
	for _, bad := range [][]byte{nil, {postingsList, 0x80}, {7, 1}, binary.AppendUvarint([]byte{postingsList}, 1<<chunkShift), pastEnd} {
		if _, err := mergePostings(bad, chunk, []uint64{base + 1}); err == nil && bad != nil {
			t.Errorf("value %x was merged", bad)
		}
		if _, err := decodePostings(nil, chunk, bad); err == nil {
			t.Errorf("value %x was decoded", bad)
		}
	}
}

// A line's grams are the trigrams of its lower-cased text, ASCII or not,
// and, marked wordStart, those that begin a word: at the line's start or
// after a byte that is not a word character (and, in a line that was not
// ASCII, at and after each k and i, which the Kelvin sign and İ became).
func TestGramSetFoldsCase(t *testing.T) {
	g := newGramSet()
	for _, c := range []struct {
		line  string
		words []string
	}{
		{"EADDRINUSE on Port 8080", []string{"ead", "on ", "por", "808"}},
		{"id=dea12f3c took", []string{"id=", "dea", "too"}},
		{"MiXeD\tTAB", []string{"mix", "tab"}},
		{"_x9 a_b", []string{"_x9", "a_b"}},
		{"ab", nil},
		{"Ünïcode ÄBC straße", []string{"n\xc3\xaf", "cod", "bc ", "str"}},
		{"ΣΊΣΥΦΟΣ", nil},
		{"a\u212Abc", []string{"akb", "kbc"}},
		{"skip İt", []string{"ski", "kip", "ip ", "p i"}},
	} {
		g.add(c.line)
		got := slices.Sorted(slices.Values(g.take()))
		want := trigrams(c.line)
		for _, w := range c.words {
			want = append(want, wordStart|uint32(w[0])<<16|uint32(w[1])<<8|uint32(w[2]))
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%q: grams %v, want %v (the trigrams of %q and words beginning %q)", c.line, got, want, lower(c.line), c.words)
		}
	}
}

// The postings a transaction notes come out grouped by gram, in
// ascending order (a word's start after every trigram), each with the
// sorted ids of the blocks that hold it, a block noted twice (stored
// again, grown) named once.
func TestNotedPostings(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var p notedPostings
	for round := range 3 { // reset keeps the memory, not the entries
		want := map[uint32][]uint64{}
		for range 300 {
			id := 1 + rng.Uint64N(200)
			var grams []uint32
			for range rng.IntN(40) {
				g := rng.Uint32N(1 << 24)
				if rng.IntN(2) == 0 {
					g = rng.Uint32N(50) << 16 // some trigrams in many blocks
				}
				if rng.IntN(4) == 0 {
					g |= wordStart // kept apart, given after every trigram
				}
				if !slices.Contains(grams, g) {
					grams = append(grams, g)
				}
			}
			p.note(id, grams)
			for _, g := range grams {
				want[g] = append(want[g], id)
			}
		}
		var prev int64 = -1
		seen := 0
		err := p.each(func(g uint32, ids []uint64) error {
			if int64(g) <= prev {
				t.Fatalf("round %d: trigram %x after %x", round, g, prev)
			}
			prev = int64(g)
			w := slices.Compact(slices.Sorted(slices.Values(want[g])))
			if !slices.Equal(ids, w) {
				t.Fatalf("round %d: trigram %x: ids %v, want %v", round, g, ids, w)
			}
			seen++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if seen != len(want) {
			t.Fatalf("round %d: %d trigrams given, want %d", round, seen, len(want))
		}
		p.reset()
	}
}
