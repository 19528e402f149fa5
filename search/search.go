package search

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
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
		var lines []Line
		var buf []byte
		visit := func(v []byte) error {
			h, body, err := decodeHeader(v)
			if err != nil {
				return &CorruptError{Path: ix.path, Err: err}
			}
			if f.Sessions != nil && !f.Sessions[h.session] || !f.Since.IsZero() && h.last.Before(f.Since) {
				return nil
			}
			if lines, buf, err = decodeLines(lines[:0], body, buf); err != nil {
				return &CorruptError{Path: ix.path, Err: err}
			}
			return matchBlock(q, f, h.session, lines, fn)
		}
		if all {
			c := bb.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := visit(v); err != nil {
					return err
				}
			}
			return nil
		}
		for i, id := range ids {
			if i%64 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			v := bb.Get(blockKey(id))
			if v == nil {
				continue // a deleted session's
			}
			if err := visit(v); err != nil {
				return err
			}
		}
		return nil
	})
}

// matchBlock calls fn for each line of a block that matches.
func matchBlock(q *Query, f Filter, sess uuid.UUID, lines []Line, fn func(Hit) error) error {
	for i, l := range lines {
		if len(f.Kinds) > 0 && !slices.Contains(f.Kinds, l.Kind) || !f.Since.IsZero() && l.At.Before(f.Since) {
			continue
		}
		ok, m := q.Match(l.Text)
		if !ok {
			continue
		}
		h := Hit{Session: sess, Line: l, Match: m}
		for j := i - 1; j >= 0 && j >= i-f.Context && lines[j].Turn == l.Turn; j-- {
			h.Before = append(h.Before, lines[j])
		}
		slices.Reverse(h.Before)
		for j := i + 1; j < len(lines) && j <= i+f.Context && lines[j].Turn == l.Turn; j++ {
			h.After = append(h.After, lines[j])
		}
		if err := fn(h); err != nil {
			return err
		}
	}
	return nil
}

// candidates returns the blocks that hold every trigram of q, ascending;
// all when q has none (every block is a candidate).
func (ix *Index) candidates(tx *bolt.Tx, q *Query) ([]uint64, bool, error) {
	if len(q.grams) == 0 {
		return nil, true, nil
	}
	lists := make([][]uint64, 0, len(q.grams))
	c := tx.Bucket(bucketGrams).Cursor()
	for _, g := range q.grams {
		prefix := []byte{byte(g >> 16), byte(g >> 8), byte(g)}
		var ids []uint64
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(k) != 7 {
				return nil, false, &CorruptError{Path: ix.path, Err: fmt.Errorf("posting key %x", k)}
			}
			var err error
			if ids, err = decodePostings(ids, binary.BigEndian.Uint32(k[3:]), v); err != nil {
				return nil, false, &CorruptError{Path: ix.path, Err: err}
			}
		}
		if len(ids) == 0 {
			return nil, false, nil
		}
		lists = append(lists, ids)
	}
	slices.SortFunc(lists, func(a, b []uint64) int { return len(a) - len(b) })
	out := lists[0]
	for _, l := range lists[1:] {
		out = intersect(out, l)
		if len(out) == 0 {
			break
		}
	}
	return out, false, nil
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
