package search

import "slices"

// notedPostings are the postings a transaction noted, merged into the
// grams bucket when it commits: one entry per gram of each block written,
// the gram in the high 32 bits and the block's index in ids in the low.
// Appending an entry is all a block's grams cost while the catch-up
// reads; they are grouped by gram once, at the commit, by a radix sort.
// (A map of gram to list cost a map assignment and a list growth per
// entry: with blocks of 128 lines, a third of a rebuild.) The grams
// marked wordStart are kept apart (starts), so that each list sorts on
// the 24 bits of a trigram: three passes, not four over all.
type notedPostings struct {
	entries []uint64 // trigrams
	starts  []uint64 // trigrams that begin a word, marked wordStart
	ids     []uint64 // block ids, by the index the entries name
	scratch []uint64 // the radix sort's other half, kept between commits
}

// note notes that block id holds grams.
func (p *notedPostings) note(id uint64, grams []uint32) {
	if len(grams) == 0 {
		return
	}
	i := uint64(len(p.ids))
	p.ids = append(p.ids, id)
	if cap(p.entries)-len(p.entries) < len(grams) {
		// Doubled, not grown by append's quarter: a commit notes
		// millions, each growth a copy of all.
		p.entries = slices.Grow(p.entries, max(len(grams), len(p.entries)))
	}
	for _, g := range grams {
		if g&wordStart != 0 {
			p.starts = append(p.starts, uint64(g)<<32|i)
			continue
		}
		p.entries = append(p.entries, uint64(g)<<32|i)
	}
}

// each calls fn for each gram noted, in ascending order, with the ids
// of the blocks that hold it, sorted and without repeats (a block stored
// again, its lines grown, is noted again). ids is reused after fn returns.
func (p *notedPostings) each(fn func(g uint32, ids []uint64) error) error {
	p.entries = p.sortByTrigram(p.entries)
	p.starts = p.sortByTrigram(p.starts)
	var ids []uint64
	for _, entries := range [][]uint64{p.entries, p.starts} { // wordStart's above every trigram
		for i := 0; i < len(entries); {
			g := uint32(entries[i] >> 32)
			ids = ids[:0]
			for ; i < len(entries) && uint32(entries[i]>>32) == g; i++ {
				ids = append(ids, p.ids[uint32(entries[i])])
			}
			if !slices.IsSorted(ids) {
				slices.Sort(ids)
			}
			ids = slices.Compact(ids)
			if err := fn(g, ids); err != nil {
				return err
			}
		}
	}
	return nil
}

// sortByTrigram sorts entries, whose grams have the same wordStart bit,
// by their trigram (24 bits: three passes of a stable LSD radix sort, a
// byte each), each trigram's in the order noted. It returns the sorted
// entries, in entries' memory or scratch's (which becomes the other).
func (p *notedPostings) sortByTrigram(entries []uint64) []uint64 {
	if cap(p.scratch) < len(entries) {
		p.scratch = make([]uint64, len(entries), cap(entries))
	}
	src, dst := entries, p.scratch[:len(entries)]
	for shift := uint(32); shift < 56; shift += 8 {
		var count [257]int
		for _, e := range src {
			count[int(byte(e>>shift))+1]++
		}
		for b := 1; b < len(count); b++ {
			count[b] += count[b-1]
		}
		for _, e := range src {
			k := byte(e >> shift)
			dst[count[k]] = e
			count[k]++
		}
		src, dst = dst, src
	}
	// Three passes: the sorted entries are in what was scratch.
	p.scratch = dst[:0]
	return src
}

// reset forgets the noted postings, keeping their memory.
func (p *notedPostings) reset() {
	p.entries, p.starts, p.ids = p.entries[:0], p.starts[:0], p.ids[:0]
}
