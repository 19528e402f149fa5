package rig

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"looprig/rig/journal"
	"looprig/rig/storage"
)

// JournalTip returns the sequence of the last record of session id's
// journal (0: no journal). A damaged journal is the backend's
// *storage.CorruptError.
func JournalTip(ctx context.Context, store storage.Store, id uuid.UUID) (uint64, error) {
	tip, err := store.Tip(ctx, storage.SessionName(id.String()))
	if IsNotFound(err) {
		return 0, nil
	}
	return tip, err
}

// SessionExists reports whether session id has a journal or a catalog
// entry in store (a damaged entry counts: it exists), with its journal's
// tip.
func SessionExists(ctx context.Context, store storage.Store, id uuid.UUID) (exists bool, tip uint64, err error) {
	if tip, err = JournalTip(ctx, store, id); err != nil || tip > 0 {
		return err == nil, tip, err
	}
	_, err = store.Get(ctx, storage.CatalogKey(id.String()))
	if IsNotFound(err) {
		return false, 0, nil
	}
	return err == nil, 0, err
}

// ReadRecords returns a reader of session id's journal records after
// sequence after (0 for all), read-only and bounded at the tip it sees
// first (see journal.Replayer). The caller closes it.
func ReadRecords(ctx context.Context, store storage.Store, id uuid.UUID, after uint64) (*RecordReader, error) {
	rp, err := journal.NewReplayer(ctx, store, storage.SessionName(id.String()), after)
	if err != nil {
		return nil, err
	}
	return &RecordReader{session: id.String(), rp: rp}, nil
}

// ReadEvents returns a reader of session id's journaled events after
// sequence after (0 for all), fences and commands skipped (see
// journal.EventReplayer). The caller closes it.
func ReadEvents(ctx context.Context, store storage.Store, id uuid.UUID, after uint64) (*journal.EventReplayer, error) {
	return journal.NewEventReplayer(ctx, store, storage.SessionName(id.String()), after)
}

// FollowRecords calls fn for every record of session id's journal after
// sequence after, then for each record appended later, looking at the tip
// every poll, until ctx ends (then it returns nil), fn returns an error
// (returned as it is), or reading the journal fails (that error, as the
// reader or the store gave it). Records come in sequence order, each once.
// This is `looprig log --follow`, which shows fences and commands too; a
// presenter that follows a session's events uses Follow. poll must be
// positive.
func FollowRecords(ctx context.Context, store storage.Store, id uuid.UUID, after uint64, poll time.Duration, fn func(Record) error) error {
	if poll <= 0 {
		return fmt.Errorf("follow session %s: poll interval %v is not positive", id, poll)
	}
	name := storage.SessionName(id.String())
	last := after
	for {
		var fnErr, err error
		last, fnErr, err = readRecordsTo(ctx, store, id, last, fn)
		switch {
		case fnErr != nil:
			return fnErr
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return err
		}
		if err := waitForGrowth(ctx, store, name, last, poll); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// readRecordsTo calls fn for the records of session id after after, up to
// the tip, and returns the sequence of the last record read, fn's error
// and the reader's.
func readRecordsTo(ctx context.Context, store storage.Store, id uuid.UUID, after uint64, fn func(Record) error) (last uint64, fnErr, err error) {
	rp, err := ReadRecords(ctx, store, id, after)
	if err != nil {
		return after, nil, err
	}
	defer rp.Close()
	for rp.Next() {
		if err := fn(rp.Record()); err != nil {
			return rp.LastSeq(), err, nil
		}
	}
	return rp.LastSeq(), nil, rp.Err()
}
