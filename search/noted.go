package search

import "slices"

// notedPostings are the postings a transaction noted, merged into the
// grams bucket when it commits: one entry per trigram of each block
// written, the trigram in the high 32 bits and the block's index in ids
// in the low. Appending an entry is all a block's trigrams cost while the
// catch-up reads; they are grouped by trigram once, at the commit, by a
// radix sort. (A map of trigram to list cost a map assignment and a list
// growth per entry: with blocks of 128 lines, a third of a rebuild.)
type notedPostings struct {
	entries []uint64
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
		p.entries = append(p.entries, uint64(g)<<32|i)
	}
}

// each calls fn for each trigram noted, in ascending order, with the ids
// of the blocks that hold it, sorted and without repeats (a block stored
// again, its lines grown, is noted again). ids is reused after fn returns.
func (p *notedPostings) each(fn func(g uint32, ids []uint64) error) error {
	p.sortByGram()
	var ids []uint64
	for i := 0; i < len(p.entries); {
		g := uint32(p.entries[i] >> 32)
		ids = ids[:0]
		for ; i < len(p.entries) && uint32(p.entries[i]>>32) == g; i++ {
			ids = append(ids, p.ids[uint32(p.entries[i])])
		}
		if !slices.IsSorted(ids) {
			slices.Sort(ids)
		}
		ids = slices.Compact(ids)
		if err := fn(g, ids); err != nil {
			return err
		}
	}
	return nil
}

// sortByGram sorts the entries by trigram (24 bits: three passes of a
// stable LSD radix sort, a byte each), each trigram's in the order noted.
func (p *notedPostings) sortByGram() {
	if cap(p.scratch) < len(p.entries) {
		p.scratch = make([]uint64, len(p.entries), cap(p.entries))
	}
	src, dst := p.entries, p.scratch[:len(p.entries)]
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
	p.entries, p.scratch = src, dst
}

// reset forgets the noted postings, keeping their memory.
func (p *notedPostings) reset() {
	p.entries, p.ids = p.entries[:0], p.ids[:0]
}
