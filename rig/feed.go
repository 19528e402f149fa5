package rig

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"looprig/rig/event"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// replayChunk and replayBytes bound what one FeedReader.Next reads from a
// journal: at most replayChunk events, and no more once their records'
// payloads reach replayBytes (the event that reaches it is the last). A
// journal of 64 KiB output checkpoints thus comes in chunks of about 16
// events, not 1,024 (64 MiB): what a reader holds for a chunk it has not
// passed on yet is bounded in bytes, and a host's forwarder counts it in
// its output budget (host/subscriptions.go, forward).
const (
	replayChunk = 1024
	replayBytes = 1 << 20
)

// replayReaders bounds the journal chunks read at once in this process:
// each holds, while it is read, a read buffer of the backend (fsstore's
// is 1 MiB) and the chunk it decodes, which its reader then counts where
// it keeps it (a host, in its output budget). A host whose 32 clients
// subscribe from the start of a long journal at once reads 4 chunks at a
// time, not 32.
var replayReaders = make(chan struct{}, 4)

// followHook, when set, runs at two points of a Session's feed: "subscribed"
// (its hub subscription is open, the journal not read yet) and "replayed"
// (the journal read is over, the live part not begun). Tests widen those
// windows.
var followHook atomic.Pointer[func(stage string)]

func runFollowHook(stage string) {
	if h := followHook.Load(); h != nil {
		(*h)(stage)
	}
}

// OpenFeed implements Feed for a session of this process: a hub
// subscription, opened first, and the journal after after, read before
// what the subscription delivers (which repeats the events journaled
// meanwhile; the Follower skips them). A subscription that falls behind
// ends the reading with *FellBehindError; the session stopping ends it
// with ErrFollowEnded once everything was read.
func (s *Session) OpenFeed(_ context.Context, after uint64) (FeedReader, error) {
	sub := s.hub.Subscribe(hub.Filter{AllLoops: true})
	runFollowHook("subscribed")
	return &sessionFeed{store: s.rig.store, name: s.name, sub: sub, next: after, replaying: true}, nil
}

type sessionFeed struct {
	store     storage.Ledger
	name      string
	sub       *hub.Subscription
	next      uint64 // the journal is read after it
	replaying bool
}

func (r *sessionFeed) Next(ctx context.Context) ([]event.Envelope, error) {
	if r.replaying {
		batch, last, more, err := readEventChunk(ctx, r.store, r.name, r.next)
		if err != nil {
			return nil, err
		}
		r.next = last
		if !more {
			r.replaying = false
			runFollowHook("replayed")
		}
		if len(batch) > 0 {
			return batch, nil
		}
	}
	batch, ok, err := r.sub.Next(ctx, 0)
	switch {
	case err != nil:
		return nil, err
	case ok:
		return batch, nil
	}
	if err := r.sub.Err(); err != nil {
		return nil, &FellBehindError{Err: err}
	}
	return nil, ErrFollowEnded
}

func (r *sessionFeed) Close() error {
	r.sub.Close()
	return nil
}

// JournalFeed returns the Feed of session id read from its journal alone,
// for a session no process here serves: what is journaled is read, and
// the journal looked at every poll for more. Its readings never end on
// their own (a session stopped may be restored). poll must be positive.
func JournalFeed(store storage.Store, id uuid.UUID, poll time.Duration) Feed {
	return journalFeed{store: store, name: storage.SessionName(id.String()), poll: poll}
}

type journalFeed struct {
	store storage.Store
	name  string
	poll  time.Duration
}

func (j journalFeed) OpenFeed(_ context.Context, after uint64) (FeedReader, error) {
	if j.poll <= 0 {
		return nil, fmt.Errorf("follow %s: poll interval %v is not positive", j.name, j.poll)
	}
	return &journalReader{feed: j, next: after}, nil
}

type journalReader struct {
	feed journalFeed
	next uint64
}

func (r *journalReader) Next(ctx context.Context) ([]event.Envelope, error) {
	for {
		batch, last, _, err := readEventChunk(ctx, r.feed.store, r.feed.name, r.next)
		if err != nil && !IsNotFound(err) {
			return nil, err
		}
		r.next = max(r.next, last)
		if len(batch) > 0 {
			return batch, nil
		}
		if err := waitForGrowth(ctx, r.feed.store, r.feed.name, r.next, r.feed.poll); err != nil {
			return nil, err
		}
	}
}

// ReadNow implements TipReader: the next chunk journaled, none at the
// tip (or when there is no journal yet).
func (r *journalReader) ReadNow(ctx context.Context) ([]event.Envelope, error) {
	batch, last, _, err := readEventChunk(ctx, r.feed.store, r.feed.name, r.next)
	if err != nil && !IsNotFound(err) {
		return nil, err
	}
	r.next = max(r.next, last)
	return batch, nil
}

func (r *journalReader) Close() error { return nil }

// readEventChunk reads up to replayChunk events of journal name after
// sequence after, stopping after the one whose payload brings the chunk's
// to replayBytes or more. last is the sequence of the last record read (fences and
// commands count), more whether the chunk stopped short of the tip the
// reader saw.
func readEventChunk(ctx context.Context, store storage.Ledger, name string, after uint64) (batch []event.Envelope, last uint64, more bool, err error) {
	select {
	case replayReaders <- struct{}{}:
		defer func() { <-replayReaders }()
	case <-ctx.Done():
		return nil, after, false, ctx.Err()
	}
	rp, err := journal.NewEventReplayer(ctx, store, name, after)
	if err != nil {
		return nil, after, false, err
	}
	defer rp.Close()
	size := 0
	for len(batch) < replayChunk && size < replayBytes {
		if !rp.Next() {
			return batch, max(after, rp.LastSeq()), false, rp.Err()
		}
		batch = append(batch, rp.Envelope())
		size += rp.Size()
	}
	return batch, rp.LastSeq(), true, nil
}

// waitForGrowth waits until journal name's tip is past after, looking
// every poll; it returns ctx's error when ctx ends first.
func waitForGrowth(ctx context.Context, store storage.Ledger, name string, after uint64, poll time.Duration) error {
	timer := time.NewTimer(poll)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		tip, err := store.Tip(ctx, name)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && !IsNotFound(err):
			return err
		case tip > after:
			return nil
		}
		timer.Reset(poll)
	}
}
