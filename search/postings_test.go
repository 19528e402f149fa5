package search

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// A chunk's postings merge to the sorted set of every block id given,
// whether the new ids come after the ones it has (a catch-up: appended
// without decoding them) or among them (a session indexed again), and a
// value that does not decode is refused, not merged.
func TestMergePostings(t *testing.T) {
	const chunk = 3
	base := uint64(chunk) << chunkShift
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var want []uint64
		var v []byte
		for range 1 + rng.IntN(6) {
			var ids []uint64
			lo := uint64(0)
			if round%2 == 0 && len(want) > 0 {
				lo = want[len(want)-1] - base + 1 // after every one: the append path
			}
			for range 1 + rng.IntN(20) {
				if span := (1<<chunkShift - lo); span > 0 {
					ids = append(ids, base+lo+rng.Uint64N(span))
				}
			}
			if len(ids) == 0 {
				continue
			}
			slices.Sort(ids)
			ids = slices.Compact(ids)
			var err error
			if v, err = mergePostings(v, chunk, ids); err != nil {
				t.Fatal(err)
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
			if last, n, err := lastPosting(v); err != nil || n != len(want) || base+last != want[len(want)-1] {
				t.Fatalf("round %d: lastPosting = %d, %d, %v; want %d, %d", round, last, n, err, want[len(want)-1]-base, len(want))
			}
		}
	}
	if _, err := mergePostings([]byte{0x80}, chunk, []uint64{base + 1}); err == nil {
		t.Error("a torn varint was merged")
	}
}

// A line's trigrams are those of its lower-cased text, ASCII or not.
func TestGramSetFoldsCase(t *testing.T) {
	g := newGramSet()
	for _, s := range []string{"EADDRINUSE on Port 8080", "Ünïcode ÄBC straße", "ab", "MiXeD\tTAB", "ΣΊΣΥΦΟΣ"} {
		g.add(s)
		got := slices.Sorted(slices.Values(g.take()))
		want := slices.Sorted(slices.Values(trigrams(s)))
		if !slices.Equal(got, want) {
			t.Errorf("%q: trigrams %v, want %v (those of %q)", s, got, want, lower(s))
		}
	}
}
