package search

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"
	bolt "go.etcd.io/bbolt"
)

// Filter narrows a search.
type Filter struct {
	// Sessions, when not nil, are the only sessions searched.
	Sessions map[uuid.UUID]bool
	// Since, when set, drops lines older than it.
	Since time.Time
	// Kinds, when not empty, are the only kinds of lines searched.
	Kinds []Kind
	// Context is how many lines of the same turn to give before and after
	// each hit (within the block of lines that holds it).
	Context int
}

// Hit is a line that matched.
type Hit struct {
	Session uuid.UUID
	Line
	// Match are the byte ranges of Text that matched (none when they
	// cannot be told).
	Match [][2]int
	// Before and After are lines of the same turn around it (Filter's
	// Context).
	Before, After []Line
}

// Search calls fn with each line that matches q and f, in the order the
// lines were indexed (each session's in journal order), until fn returns
// an error (returned as it is). Call Update first: Search reads the index
// as it is.
func (ix *Index) Search(ctx context.Context, q *Query, f Filter, fn func(Hit) error) (err error) {
	defer ix.recoverCorrupt(&err)
	return ix.db.View(func(tx *bolt.Tx) error {
		ids, all, err := ix.candidates(tx, q)
		if err != nil {
			return err
		}
		bb := tx.Bucket(bucketBlocks)
		v := &verifier{ix: ix, q: q, f: f, fn: fn, dec: ix.decoder(), cache: ix.cache, keep: !all}
		if all {
			c := bb.Cursor()
			for k, b := c.First(); k != nil; k, b = c.Next() {
				if len(k) != 8 {
					return &CorruptError{Path: ix.path, Err: fmt.Errorf("a block key of %d bytes", len(k))}
				}
				if err := v.add(ctx, binary.BigEndian.Uint64(k), b); err != nil {
					return err
				}
			}
			return v.flush()
		}
		for _, id := range ids {
			b := bb.Get(blockKey(id))
			if b == nil {
				continue // a deleted session's
			}
			if err := v.add(ctx, id, b); err != nil {
				return err
			}
		}
		return v.flush()
	})
}

// verifier checks the candidate blocks of a search, a batch at a time:
// the blocks of a batch are decompressed and scanned side by side (one
// goroutine per core, up to maxVerifiers), and their hits given to fn in
// the blocks' order.
type verifier struct {
	ix    *Index
	q     *Query
	f     Filter
	fn    func(Hit) error
	dec   *zstd.Decoder
	cache *BlockCache // nil: none
	// keep: the blocks decompressed go into the cache. Not those of a
	// query that reads every block: a thousand sessions' blocks are
	// forty times what the cache holds, and would only push each other
	// out.
	keep   bool
	blocks []storedBlock
}

// storedBlock is a block of a verifier's batch, its bytes valid in the
// transaction.
type storedBlock struct {
	id uint64
	b  []byte
}

// verifyBatch is how many blocks a verifier checks at a time.
const verifyBatch = 32

// maxVerifiers bounds the goroutines that check blocks.
const maxVerifiers = 4

// add takes a stored block; those of other sessions than the filter's,
// or older than it, are skipped unread.
func (v *verifier) add(ctx context.Context, id uint64, b []byte) error {
	h, _, err := decodeHeader(b)
	if err != nil {
		return &CorruptError{Path: v.ix.path, Err: err}
	}
	if v.f.Sessions != nil && !v.f.Sessions[h.session] || !v.f.Since.IsZero() && h.last.Before(v.f.Since) {
		return nil
	}
	v.blocks = append(v.blocks, storedBlock{id, b})
	if len(v.blocks) < verifyBatch {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return v.flush()
}

// flush checks the batch and gives its hits to fn, in order.
func (v *verifier) flush() error {
	n := len(v.blocks)
	if n == 0 {
		return nil
	}
	hits := make([][]Hit, n)
	errs := make([]error, n)
	check := func(i int, sc *scratch) {
		hits[i], errs[i] = v.check(v.blocks[i], sc)
	}
	workers := min(runtime.GOMAXPROCS(0), maxVerifiers, n)
	if workers <= 1 {
		var sc scratch
		for i := range n {
			check(i, &sc)
		}
	} else {
		var wg sync.WaitGroup
		var next atomic.Int64
		for range workers {
			wg.Go(func() {
				var sc scratch
				for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
					check(i, &sc)
				}
			})
		}
		wg.Wait()
	}
	v.blocks = v.blocks[:0]
	for i := range n {
		if errs[i] != nil {
			return errs[i]
		}
		for _, h := range hits[i] {
			if err := v.fn(h); err != nil {
				return err
			}
		}
	}
	return nil
}

// scratch is a checking goroutine's reusable space.
type scratch struct {
	refs []lineRef
	buf  []byte
}

// check returns the hits of stored block sb: decompressed, or as the
// cache has it.
func (v *verifier) check(sb storedBlock, sc *scratch) ([]Hit, error) {
	h, body, err := decodeHeader(sb.b)
	if err != nil {
		return nil, &CorruptError{Path: v.ix.path, Err: err}
	}
	raw, refs, err := v.decode(sb, body, sc)
	if err != nil {
		return nil, err
	}
	var out []Hit
	err = matchBlock(v.q, v.f, h.session, raw, refs, func(h Hit) error {
		out = append(out, h)
		return nil
	})
	return out, err
}

// decode returns the text and line ranges of stored block sb, whose body
// (after its header) is body: the cache's, or decompressed into sc's
// buffers (and then cached).
func (v *verifier) decode(sb storedBlock, body []byte, sc *scratch) ([]byte, []lineRef, error) {
	var sum uint64
	if v.cache != nil {
		sum = v.cache.sum(sb.b)
		if c, ok := v.cache.get(sb.id, sum); ok {
			return c.raw, c.refs, nil
		}
	}
	var err error
	if sc.refs, sc.buf, err = decodeRefs(v.dec, sc.refs[:0], body, sc.buf); err != nil {
		return nil, nil, &CorruptError{Path: v.ix.path, Err: err}
	}
	if v.cache != nil && v.keep {
		v.cache.put(sb.id, sum, sc.buf, sc.refs)
	}
	return sc.buf, sc.refs, nil
}

// matchBlock calls fn for each line of a block (decompressed: raw, its
// lines refs) that matches.
func matchBlock(q *Query, f Filter, sess uuid.UUID, raw []byte, refs []lineRef, fn func(Hit) error) error {
	kinds := len(f.Kinds) > 0
	return scanBlock(q, raw, refs, func(i int) error {
		r := refs[i]
		if kinds && !slices.Contains(f.Kinds, r.kind) || !f.Since.IsZero() && time.UnixMilli(r.ms).Before(f.Since) {
			return nil
		}
		l := r.line(raw)
		ok, m := q.Match(l.Text)
		if !ok {
			return nil
		}
		h := Hit{Session: sess, Line: l, Match: m}
		for j := i - 1; j >= 0 && j >= i-f.Context && refs[j].turn == r.turn; j-- {
			h.Before = append(h.Before, refs[j].line(raw))
		}
		slices.Reverse(h.Before)
		for j := i + 1; j < len(refs) && j <= i+f.Context && refs[j].turn == r.turn; j++ {
			h.After = append(h.After, refs[j].line(raw))
		}
		return fn(h)
	})
}

// candidates returns the blocks q's trigram formula accepts, ascending;
// all when it cannot narrow (every block is a candidate).
func (ix *Index) candidates(tx *bolt.Tx, q *Query) ([]uint64, bool, error) {
	if !q.grams.narrows() {
		return nil, true, nil
	}
	r := postingsReader{ix: ix, c: tx.Bucket(bucketGrams).Cursor(), read: map[uint32][]uint64{}}
	ids, err := r.eval(q.grams)
	return ids, false, err
}

// postingsReader evaluates a gramQuery against the index's postings,
// reading each trigram's once.
type postingsReader struct {
	ix   *Index
	c    *bolt.Cursor
	read map[uint32][]uint64 // the blocks of each trigram read; not to be changed
}

// blocks are the ids of the blocks holding trigram g, ascending.
func (r *postingsReader) blocks(g uint32) ([]uint64, error) {
	if ids, ok := r.read[g]; ok {
		return ids, nil
	}
	prefix := binary.BigEndian.AppendUint32(nil, g)
	var ids []uint64
	for k, v := r.c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = r.c.Next() {
		if len(k) != gramKeyLen {
			return nil, &CorruptError{Path: r.ix.path, Err: fmt.Errorf("posting key %x", k)}
		}
		var err error
		if ids, err = decodePostings(ids, binary.BigEndian.Uint32(k[len(prefix):]), v); err != nil {
			return nil, &CorruptError{Path: r.ix.path, Err: err}
		}
	}
	r.read[g] = ids
	return ids, nil
}

// eval returns the ids of the blocks q accepts, ascending, in storage of
// its own. q narrows (gramAll is not asked of it).
func (r *postingsReader) eval(q *gramQuery) ([]uint64, error) {
	lists := make([][]uint64, 0, len(q.grams)+len(q.subs))
	for i := range len(q.grams) + len(q.subs) {
		var ids []uint64
		var err error
		if i < len(q.grams) {
			ids, err = r.blocks(q.grams[i])
		} else {
			ids, err = r.eval(q.subs[i-len(q.grams)])
		}
		if err != nil {
			return nil, err
		}
		if q.op == gramAnd && len(ids) == 0 {
			return nil, nil // a term no block holds: none holds them all
		}
		lists = append(lists, ids)
	}
	if len(lists) == 0 {
		return nil, nil
	}
	slices.SortFunc(lists, func(a, b []uint64) int { return len(a) - len(b) })
	out := slices.Clone(lists[0])
	for _, l := range lists[1:] {
		if q.op == gramOr {
			out = unite(out, l)
			continue
		}
		out = intersect(out, l)
		if len(out) == 0 {
			break
		}
	}
	return out, nil
}

// intersect returns the ids in both sorted a and b, in a's storage.
func intersect(a, b []uint64) []uint64 {
	out := a[:0]
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j < len(b) && b[j] == x {
			out = append(out, x)
		}
	}
	return out
}

// unite returns the ids in sorted a or b, sorted, in new storage.
func unite(a, b []uint64) []uint64 {
	out := make([]uint64, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		case b[j] < a[i]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i, j = i+1, j+1
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// Find brings the index up to date with sessions (Update) and searches q
// (Search), as a command does. An index a search finds damaged is rebuilt
// (a note to Options.Notes) and searched again, after restart (when set)
// is called: fn may have been given some hits of the first search.
func (ix *Index) Find(ctx context.Context, sessions []Session, q *Query, f Filter, progress func(done, total int), restart func(), fn func(Hit) error) (Stats, error) {
	st, err := ix.Update(ctx, sessions, progress)
	if err != nil {
		return st, err
	}
	err = ix.Search(ctx, q, f, fn)
	var corrupt *CorruptError
	if !errors.As(err, &corrupt) {
		return st, err
	}
	ix.note("search: %v; rebuilding it", corrupt)
	if err := ix.Reset(ctx); err != nil {
		return st, err
	}
	if st, err = ix.Update(ctx, sessions, progress); err != nil {
		return st, err
	}
	st.Rebuilt = true
	if restart != nil {
		restart()
	}
	return st, ix.Search(ctx, q, f, fn)
}
