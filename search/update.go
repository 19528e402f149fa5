package search

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"looprig/rig"
)

// Stats say what an Update did.
type Stats struct {
	// Sessions is how many sessions' journals had grown and were read;
	// Purged how many sessions were dropped (gone from the store).
	Sessions, Purged int
	// Records and Lines are the journal records read and the lines they
	// gave.
	Records, Lines int64
	// Rebuilt: the index was emptied first (damaged, or mostly deleted
	// sessions' blocks).
	Rebuilt bool
}

// commitBytes is how much line text a catch-up writes before it commits
// and goes on in a new transaction: a rebuild of gigabytes of journals
// never holds them all in one.
const commitBytes = 32 << 20

// Session is a session of the store as a listing shows it, for Update.
type Session struct {
	ID uuid.UUID
	// Epoch is its lease's latest epoch: every tenure that may append to
	// its journal begins with a new one.
	Epoch uint64
	// Unheld: no process holds its lease (idle, crashed), so its journal
	// cannot grow until one does, with a new epoch.
	Unheld bool
}

// Update brings the index up to date with the sessions of the store: it
// drops the sessions it holds that are not among them (deleted) and reads,
// for each one whose journal grew since it last looked, the records it has
// not read yet. Whether a journal grew is one tip read, skipped for a
// session that was unheld at the same epoch when the index last read it
// to its tip and still is. progress, when set, is called after each
// session read with how many of the sessions to read are done.
//
// An index found damaged on the way is rebuilt (a note to Options.Notes)
// and brought up to date from scratch.
func (ix *Index) Update(ctx context.Context, sessions []Session, progress func(done, total int)) (Stats, error) {
	st, err := ix.update(ctx, sessions, progress)
	var corrupt *CorruptError
	if !errors.As(err, &corrupt) {
		return st, err
	}
	ix.note("search: %v; rebuilding it", corrupt)
	if err := ix.Reset(ctx); err != nil {
		return st, err
	}
	st, err = ix.update(ctx, sessions, progress)
	st.Rebuilt = true
	return st, err
}

func (ix *Index) update(ctx context.Context, sessions []Session, progress func(done, total int)) (st Stats, err error) {
	defer ix.recoverCorrupt(&err)
	states, err := ix.states()
	if err != nil {
		return st, err
	}
	if dead, made := ix.deadBlocks(); dead > 1024 && dead*2 > made {
		// Mostly deleted sessions' blocks, whose postings stay until a
		// rebuild: rebuild.
		if err := ix.Reset(ctx); err != nil {
			return st, err
		}
		states, st.Rebuilt = map[uuid.UUID]*storedState{}, true
	}
	want := make(map[uuid.UUID]bool, len(sessions))
	var grown []Session
	settled := map[uuid.UUID]*sessionState{}
	for _, ses := range sessions {
		want[ses.ID] = true
		if err := ix.plan(ctx, ses, states, &grown, settled); err != nil {
			return st, err
		}
	}
	var gone []uuid.UUID
	for id := range states {
		if !want[id] {
			gone = append(gone, id)
		}
	}
	if err := ix.purge(gone); err != nil {
		return st, err
	}
	st.Purged = len(gone)
	written, _, err := ix.readGrown(ctx, states, grown, settled, 0, &st, progress)
	if err != nil {
		return st, err
	}
	if len(states) == 0 && written >= compactAfter {
		// A rebuild: compacted once, rather than left at its peak size.
		return st, ix.compact(ctx)
	}
	return st, nil
}

// updateSession indexes what the journal of one session has past what
// the index holds: for the process that holds the session and journals
// it (its host, between turns), so that a search finds the index up to
// date. Unlike Update it leaves every other session as it is (no purge,
// no rebuild for deleted sessions' blocks). With limit > 0 it stops at the
// first commit after writing limit bytes of lines; more then says the
// journal has more to read, for a caller that lets others have the index
// (Close, then open it again) between slices.
func (ix *Index) updateSession(ctx context.Context, ses Session, limit int) (st Stats, more bool, err error) {
	defer ix.recoverCorrupt(&err)
	var prior *storedState
	err = ix.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketSessions).Get([]byte(ses.ID.String()))
		if v == nil {
			return nil
		}
		var err error
		if prior, err = decodeStateHead(v); err != nil {
			return &CorruptError{Path: ix.path, Err: fmt.Errorf("session %s: %w", ses.ID, err)}
		}
		return nil
	})
	if err != nil {
		return st, false, err
	}
	states := map[uuid.UUID]*storedState{}
	if prior != nil {
		states[ses.ID] = prior
	}
	var grown []Session
	settled := map[uuid.UUID]*sessionState{}
	if err := ix.plan(ctx, ses, states, &grown, settled); err != nil {
		return st, false, err
	}
	if len(grown) == 0 && len(settled) == 0 {
		return st, false, nil
	}
	_, more, err = ix.readGrown(ctx, states, grown, settled, limit, &st, nil)
	return st, more, err
}

// plan puts session ses among what a catch-up reads (grown) or only
// saves (settled), as its growth since its stored state in states says;
// a replaced journal's state leaves states (read again from its start).
func (ix *Index) plan(ctx context.Context, ses Session, states map[uuid.UUID]*storedState, grown *[]Session, settled map[uuid.UUID]*sessionState) error {
	g, err := ix.growth(ctx, ses, states[ses.ID])
	if err != nil {
		return err
	}
	switch g {
	case grew:
		*grown = append(*grown, ses)
	case replaced:
		delete(states, ses.ID)
		*grown = append(*grown, ses)
	case settles:
		s, err := ix.fullState(ses.ID, states[ses.ID])
		if err != nil {
			return err
		}
		s.Epoch, s.Settled = ses.Epoch, true
		settled[ses.ID] = s
	}
	return nil
}

// growth is what a session's journal did since the index last read it.
type growth int

const (
	unchanged growth = iota
	grew             // past what the index holds (or new to it)
	replaced         // shorter than what was read: another journal, dropped, to read again
	settles          // read to its tip, and now unheld: settled until its lease moves
)

// growth tells what session ses's journal did since the index read it to
// h (nil: never), a tip read unless it is settled at the same epoch and
// still unheld. A replaced journal's index entry is dropped here.
func (ix *Index) growth(ctx context.Context, ses Session, h *storedState) (growth, error) {
	if h != nil && h.settled && ses.Unheld && h.epoch == ses.Epoch {
		return unchanged, nil
	}
	tip, err := rig.JournalTip(ctx, ix.store, ses.ID)
	if err != nil {
		return unchanged, fmt.Errorf("search: read the journal tip of session %s: %w", ses.ID, err)
	}
	switch {
	case h == nil && tip == 0:
		return unchanged, nil
	case h == nil || tip > h.seq:
		return grew, nil
	case tip < h.seq:
		if err := ix.purge([]uuid.UUID{ses.ID}); err != nil {
			return unchanged, err
		}
		return replaced, nil
	case ses.Unheld:
		return settles, nil
	}
	return unchanged, nil
}

// fullState decodes the whole of session id's stored state h.
func (ix *Index) fullState(id uuid.UUID, h *storedState) (*sessionState, error) {
	s, err := h.full()
	if err != nil {
		return nil, &CorruptError{Path: ix.path, Err: fmt.Errorf("session %s: %w", id, err)}
	}
	return s, nil
}

// readGrown reads sessions grown past what the index holds (prior: the
// stored states, none for a session new to it), saving the states of
// settled with them, and returns how much line text it wrote. With
// limit > 0 it stops at the first commit after limit bytes: more says so.
func (ix *Index) readGrown(ctx context.Context, prior map[uuid.UUID]*storedState, grown []Session, settled map[uuid.UUID]*sessionState, limit int, st *Stats, progress func(done, total int)) (written int, more bool, err error) {
	w := ix.newWriter()
	w.limit = limit
	defer func() {
		if r := recover(); r != nil {
			w.rollback()
			panic(r) // recoverCorrupt reports it
		}
		if err != nil {
			w.rollback()
		}
	}()
	if len(settled) > 0 {
		if err := w.begin(); err != nil {
			return 0, false, err
		}
		maps.Copy(w.dirty, settled)
	}
	ss := make([]*sessionState, len(grown))
	for i, ses := range grown {
		if prior[ses.ID] == nil {
			ss[i] = &sessionState{}
		} else if ss[i], err = ix.fullState(ses.ID, prior[ses.ID]); err != nil {
			return 0, false, err
		}
		// Read to the tip, unheld: settled until its lease moves.
		ss[i].Epoch, ss[i].Settled = ses.Epoch, ses.Unheld
	}
	err = w.catchUp(ctx, grown, ss, st, progress)
	if errors.Is(err, errSliceWritten) {
		return w.written, true, nil
	}
	if err != nil {
		return 0, false, err
	}
	if err := w.commit(); err != nil {
		return 0, false, err
	}
	return w.written, false, nil
}

// states reads every session's state, its head only (storedState).
func (ix *Index) states() (map[uuid.UUID]*storedState, error) {
	out := map[uuid.UUID]*storedState{}
	err := ix.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSessions).ForEach(func(k, v []byte) error {
			id, err := uuid.ParseBytes(k)
			if err != nil {
				return &CorruptError{Path: ix.path, Err: fmt.Errorf("session key %q: %w", k, err)}
			}
			st, err := decodeStateHead(v)
			if err != nil {
				return &CorruptError{Path: ix.path, Err: fmt.Errorf("session %s: %w", id, err)}
			}
			out[id] = st
			return nil
		})
	})
	return out, err
}

// deadBlocks returns the blocks deleted since the last rebuild and the
// blocks ever made.
func (ix *Index) deadBlocks() (dead, made uint64) {
	_ = ix.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyDead); len(v) == 8 {
			dead = binary.BigEndian.Uint64(v)
		}
		made = tx.Bucket(bucketBlocks).Sequence()
		return nil
	})
	return dead, made
}

// purge drops sessions ids: their state and their blocks. Their postings
// stay, naming blocks that are no more, until a rebuild.
func (ix *Index) purge(ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	return ix.db.Update(func(tx *bolt.Tx) error {
		sb, bb, mb := tx.Bucket(bucketSessions), tx.Bucket(bucketBlocks), tx.Bucket(bucketMeta)
		var dead uint64
		if v := mb.Get(keyDead); len(v) == 8 {
			dead = binary.BigEndian.Uint64(v)
		}
		for _, id := range ids {
			s := &sessionState{}
			if v := sb.Get([]byte(id.String())); v != nil {
				var err error
				if s, err = decodeState(v); err != nil {
					return &CorruptError{Path: ix.path, Err: fmt.Errorf("session %s: %w", id, err)}
				}
			}
			for _, b := range s.Blocks {
				if err := bb.Delete(blockKey(b)); err != nil {
					return err
				}
			}
			dead += uint64(len(s.Blocks))
			if err := sb.Delete([]byte(id.String())); err != nil {
				return err
			}
		}
		return mb.Put(keyDead, binary.BigEndian.AppendUint64(nil, dead))
	})
}

func blockKey(id uint64) []byte { return binary.BigEndian.AppendUint64(nil, id) }

// writer writes a catch-up in transactions of about commitBytes of
// lines each (one for a few sessions' growth, many for a rebuild): the
// blocks written, the postings they add, merged into the grams bucket
// when it commits, and the states of the sessions read, saved then.
type writer struct {
	ix      *Index
	tx      *bolt.Tx       // nil between transactions
	pending []pendingBlock // compressing, not stored yet (settle)
	posts   notedPostings
	bytes   int // line text of the transaction
	written int // line text of all of them
	limit   int // stop after the commit that passes it (0: never)
	dirty   map[uuid.UUID]*sessionState
}

func (ix *Index) newWriter() *writer {
	return &writer{ix: ix, dirty: map[uuid.UUID]*sessionState{}}
}

// begin starts a transaction unless one is open.
func (w *writer) begin() error {
	if w.tx != nil {
		return nil
	}
	tx, err := w.ix.db.Begin(true)
	if err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	w.tx, w.ix.wrote = tx, true
	if w.ix.grams == nil {
		w.ix.grams = newGramSet()
	}
	return nil
}

func (w *writer) rollback() {
	w.pending = nil // each compression ends on its own, its block dropped
	if w.tx != nil {
		w.tx.Rollback()
		w.tx = nil
	}
}

// commit merges the postings, saves the sessions' states and commits.
func (w *writer) commit() error {
	if w.tx == nil {
		return nil
	}
	if err := w.settle(0); err != nil {
		return err
	}
	if err := w.flushPostings(); err != nil {
		return err
	}
	sb := w.tx.Bucket(bucketSessions)
	for id, s := range w.dirty {
		v, err := encodeState(s)
		if err != nil {
			return fmt.Errorf("search index: %w", err)
		}
		if err := sb.Put([]byte(id.String()), v); err != nil {
			return fmt.Errorf("search index: %w", err)
		}
	}
	err := w.tx.Commit()
	w.tx, w.bytes = nil, 0
	clear(w.dirty)
	if err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	return nil
}

// flushPostings merges the transaction's postings into the grams bucket,
// in key order.
func (w *writer) flushPostings() error {
	gb := w.tx.Bucket(bucketGrams)
	// Posting lists grow in place: pages filled more than bbolt's half
	// waste less.
	gb.FillPercent = 0.9
	err := w.posts.each(func(g uint32, ids []uint64) error {
		for len(ids) > 0 {
			chunk := uint32(ids[0] >> chunkShift)
			n := 1
			for n < len(ids) && uint32(ids[n]>>chunkShift) == chunk {
				n++
			}
			key := gramKey(g, chunk)
			v, err := mergePostings(gb.Get(key), chunk, ids[:n])
			if err != nil {
				return &CorruptError{Path: w.ix.path, Err: err}
			}
			if err := gb.Put(key, v); err != nil {
				return fmt.Errorf("search index: %w", err)
			}
			ids = ids[n:]
		}
		return nil
	})
	w.posts.reset()
	return err
}

// putBlock stores the lines of block id (0: a new one, whose id it
// returns) and notes the trigrams of lines[from:] as postings.
func (w *writer) putBlock(sess uuid.UUID, id uint64, lines []Line, from int) (uint64, error) {
	bb := w.tx.Bucket(bucketBlocks)
	bb.FillPercent = 1 // keys only ever grow
	if id == 0 {
		var err error
		if id, err = bb.NextSequence(); err != nil {
			return 0, fmt.Errorf("search index: %w", err)
		}
	}
	// The block is compressed while its trigrams are noted, and while
	// the next block's are (the two are most of a catch-up's writing,
	// and independent), then stored (settle). The compression gets its
	// own copy of the lines: a sealed block's slice takes the next
	// block's lines at once (openBlock.store).
	encoded := make(chan []byte, 1)
	own, enc := slices.Clone(lines), w.ix.encoder()
	go func() { encoded <- encodeBlock(enc, sess, own) }()
	w.pending = append(w.pending, pendingBlock{id: id, body: encoded})
	for _, l := range lines[from:] {
		w.ix.grams.add(l.Text)
		w.bytes += len(l.Text)
		w.written += len(l.Text)
	}
	w.posts.note(id, w.ix.grams.take())
	if err := w.settle(blocksInFlight); err != nil {
		return 0, err
	}
	return id, nil
}

// pendingBlock is a block being compressed, to be stored under id.
type pendingBlock struct {
	id   uint64
	body <-chan []byte
}

// blocksInFlight is how many blocks a catch-up compresses at once while
// it goes on reading: the one it noted last and the one before.
const blocksInFlight = 2

// settle stores the blocks being compressed, in the order they were
// put, until at most keep are left in flight. Everything that reads
// blocks in the transaction, and its commit, settles them all first.
func (w *writer) settle(keep int) error {
	bb := w.tx.Bucket(bucketBlocks)
	for len(w.pending) > keep {
		p := w.pending[0]
		w.pending = w.pending[1:]
		if err := bb.Put(blockKey(p.id), <-p.body); err != nil {
			return fmt.Errorf("search index: %w", err)
		}
	}
	return nil
}

// readBlock decodes block id's lines.
func (w *writer) readBlock(id uint64) ([]Line, error) {
	if err := w.settle(0); err != nil {
		return nil, err
	}
	v := w.tx.Bucket(bucketBlocks).Get(blockKey(id))
	if v == nil {
		return nil, &CorruptError{Path: w.ix.path, Err: fmt.Errorf("block %d is missing", id)}
	}
	_, body, err := decodeHeader(v)
	if err != nil {
		return nil, &CorruptError{Path: w.ix.path, Err: err}
	}
	// The lines' texts are a string of their own: safe past the
	// transaction.
	lines, err := decodeLines(w.ix.decoder(), nil, body)
	if err != nil {
		return nil, &CorruptError{Path: w.ix.path, Err: err}
	}
	return lines, nil
}

// SessionsOfLeases are the sessions of a listing of leases
// (rig.ListLeases), for Update: a session whose lease is held, or whose
// state could not be told, may grow.
func SessionsOfLeases(leases []rig.SessionLease) []Session {
	out := make([]Session, 0, len(leases))
	for _, l := range leases {
		id, err := uuid.Parse(l.ID)
		if err != nil {
			continue
		}
		out = append(out, Session{ID: id, Epoch: l.Epoch, Unheld: !l.Held})
	}
	return out
}

// SessionsOf are the sessions of a listing, for Update. A session whose
// lease state the listing could not tell counts as held.
func SessionsOf(infos []rig.SessionInfo) []Session {
	out := make([]Session, 0, len(infos))
	for _, in := range infos {
		id, err := uuid.Parse(in.ID)
		if err != nil {
			continue
		}
		unheld := (in.State == rig.StateIdle || in.State == rig.StateCrashed) && in.Holder == nil &&
			!strings.HasPrefix(in.Reason, rig.LeaseUnknownReason)
		out = append(out, Session{ID: id, Epoch: in.Epoch, Unheld: unheld})
	}
	return out
}
