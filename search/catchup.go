package search

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/google/uuid"

	"looprig/rig"
)

// batch is lines one session's journal gave, from the reader of a
// catch-up to its writer: the reading (decoding records, rendering
// output) and the writing (compressing blocks, postings, bbolt) run side
// by side.
type batch struct {
	i     int // the session's index in the catch-up
	lines []Line
	// x is the reader's state of the session after these lines (its
	// fields the extractor keeps).
	x    sessionState
	recs int64
	end  bool // the session's last batch
	err  error
}

// errSliceWritten: a catch-up with a limit (writer.limit) committed past
// it and stopped, with more to read.
var errSliceWritten = errors.New("search: slice written")

// batchLines is how many lines a batch holds at most.
const batchLines = 4096

// catchUp reads sessions ses (whose states are ss) after what the index
// holds, committing whenever the transaction holds commitBytes of lines,
// and adds to st what it read.
func (w *writer) catchUp(ctx context.Context, ses []Session, ss []*sessionState, st *Stats, progress func(done, total int)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan batch, 4)
	xs := make([]sessionState, len(ss))
	for i, s := range ss {
		xs[i] = *s
		xs[i].Agents = maps.Clone(s.Agents)
	}
	go w.ix.read(ctx, ses, xs, ch)
	defer func() {
		cancel()
		for range ch { // let the reader end
		}
	}()
	var open *openBlock
	for b := range ch {
		if b.err != nil {
			return b.err
		}
		s := ss[b.i]
		if open == nil || open.i != b.i {
			if err := w.begin(); err != nil {
				return err
			}
			w.dirty[ses[b.i].ID] = s
			var err error
			if open, err = w.openBlock(b.i, ses[b.i].ID, s); err != nil {
				return err
			}
		}
		for _, l := range b.lines {
			if err := open.add(l); err != nil {
				return err
			}
		}
		// The extractor's fields, as the reader left them.
		blocks, nopen, epoch, settled := s.Blocks, s.Open, s.Epoch, s.Settled
		*s = b.x
		s.Blocks, s.Open, s.Epoch, s.Settled = blocks, nopen, epoch, settled
		st.Records += b.recs
		st.Lines += int64(len(b.lines))
		if b.end {
			if err := open.store(false); err != nil {
				return err
			}
			open = nil
			st.Sessions++
			if progress != nil {
				progress(b.i+1, len(ses))
			}
		}
		if w.bytes >= commitBytes || w.limit > 0 && w.written >= w.limit {
			if open != nil {
				if err := open.store(false); err != nil {
					return err
				}
			}
			if err := w.commit(); err != nil {
				return err
			}
			if w.limit > 0 && w.written >= w.limit {
				return errSliceWritten
			}
			if err := w.begin(); err != nil {
				return err
			}
			if open != nil {
				w.dirty[ses[b.i].ID] = s
			}
		}
	}
	return ctx.Err()
}

// openBlock is the block of a session that lines go to: its lines so far,
// and from which the postings are still to note.
type openBlock struct {
	w     *writer
	i     int
	id    uuid.UUID
	s     *sessionState
	block uint64 // 0: not stored yet
	lines []Line
	from  int
	size  int
}

func (w *writer) openBlock(i int, id uuid.UUID, s *sessionState) (*openBlock, error) {
	o := &openBlock{w: w, i: i, id: id, s: s}
	if s.Open > 0 && len(s.Blocks) > 0 {
		o.block = s.Blocks[len(s.Blocks)-1]
		var err error
		if o.lines, err = w.readBlock(o.block); err != nil {
			return nil, err
		}
		o.from = len(o.lines)
		for _, l := range o.lines {
			o.size += len(l.Text)
		}
	}
	return o, nil
}

func (o *openBlock) add(l Line) error {
	o.lines = append(o.lines, l)
	o.size += len(l.Text)
	if len(o.lines) >= blockLines || o.size >= blockBytes {
		return o.store(true)
	}
	return nil
}

// store writes the block; sealed, the next line begins another.
func (o *openBlock) store(seal bool) error {
	if len(o.lines) == o.from && !seal {
		return nil
	}
	isNew := o.block == 0
	var err error
	if o.block, err = o.w.putBlock(o.id, o.block, o.lines, o.from); err != nil {
		return err
	}
	if isNew {
		o.s.Blocks = append(o.s.Blocks, o.block)
	}
	o.from, o.s.Open = len(o.lines), len(o.lines)
	if seal {
		o.lines, o.from, o.block, o.size, o.s.Open = o.lines[:0], 0, 0, 0, 0
	}
	return nil
}

// read reads sessions ses after the sequences of their states xs (its
// own copies, which it updates) and sends their lines to ch in batches,
// session after session; it closes ch when done, or after an error (sent).
func (ix *Index) read(ctx context.Context, ses []Session, xs []sessionState, ch chan<- batch) {
	defer close(ch)
	for i := range ses {
		if err := ix.readOne(ctx, i, ses[i].ID, &xs[i], ch); err != nil {
			select {
			case ch <- batch{err: err}:
			case <-ctx.Done():
			}
			return
		}
	}
}

func (ix *Index) readOne(ctx context.Context, i int, id uuid.UUID, x *sessionState, ch chan<- batch) error {
	b := batch{i: i}
	send := func(end bool) error {
		b.x, b.end = *x, end
		b.x.Agents = maps.Clone(x.Agents)
		select {
		case ch <- b:
		case <-ctx.Done():
			return ctx.Err()
		}
		b = batch{i: i, lines: make([]Line, 0, batchLines)}
		return nil
	}
	ex := &extractor{st: x, emit: func(l Line) { b.lines = append(b.lines, l) }}
	rr, err := rig.ReadRecords(ctx, ix.store, id, x.Seq)
	if err != nil {
		return fmt.Errorf("search: read session %s: %w", id, err)
	}
	defer rr.Close()
	for rr.Next() {
		rec := rr.Record()
		ex.record(rec)
		x.Seq = rec.Seq
		b.recs++
		if len(b.lines) >= batchLines {
			if err := send(false); err != nil {
				return err
			}
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("search: read session %s: %w", id, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return send(true)
}
