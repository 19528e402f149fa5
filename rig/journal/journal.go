// Package journal holds looprig's journal records (fence, event, command),
// the fenced SessionJournal writer and read-only replayers.
//
// A session journal is one storage.Ledger, written only by the holder of the
// session's lease. Opening it appends a fence carrying the lease epoch at
// the tip seen once; from then on the writer tracks the tip in memory and
// never re-reads it, so a successor's fence makes every later append of a
// stale writer a compare-and-swap conflict, and nothing of the stale writer
// lands after the successor's fence.
//
// Each ledger payload is a versioned JSON record:
//
//	{"v":1,"kind":"fence","epoch":3,"at":"2026-07-15T10:00:00.123456789Z"}
//	{"v":1,"kind":"event","loop_id":"…","event":{"v":1,"type":"TurnStarted","data":{…}},"at":"…"}
//	{"v":1,"kind":"command","command":{"name":"submit","loop_id":"…","input":"…"},"at":"…"}
//
// Readers fail closed on anything unknown (*RecordDecodeError). Records
// written by earlier versions may carry an idempotency id, a string field
// "id" after "kind"; readers accept it and ignore it, and nothing writes it
// any more.
package journal

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"looprig/rig/event"
	"looprig/rig/storage"
)

// SessionJournal is the fenced, group-committing writer of one journal. It
// is safe for concurrent use.
//
// Appends from many goroutines are group-committed without a background
// goroutine: the first caller to find no flush in flight becomes the leader
// and sends everything queued in one ledger Append; callers arriving
// meanwhile queue, and when the flush ends the oldest queued caller is
// promoted to lead the next one. Sequences are assigned in flush order. A
// failing flush fails every record in it.
//
// Contexts: an append's ctx is checked on entry and bounds its wait while
// its record is queued (a cancelled record leaves the queue, nothing is
// written). Once the record's flush has started the call waits for the
// ledger: the flush runs without the leader's cancellation, so one caller
// giving up can neither fail the other records of its batch nor leave the
// tip unknown.
//
// Errors fall in two groups. Latched (the journal is done; Err reports it and
// every later append returns it): *JournalLeaseLostError, *FencedError,
// *AppendError. Not latched (that call fails, the journal carries on):
// *event.EphemeralError, *event.EncodeError, *InvalidRecordError,
// *storage.PayloadTooLargeError, and the caller's context error while its
// record is still queued.
type SessionJournal struct {
	ledger   storage.Ledger
	name     string
	lease    storage.Lease
	epoch    uint64
	fenceSeq uint64
	opts     options

	mu       sync.Mutex
	tip      uint64
	err      error
	queue    []*pending
	flushing bool

	// Group-commit gathering (see gather): the size, end and duration of
	// the last flush.
	lastBatch int
	lastEnd   time.Time
	lastFlush time.Duration
	arrivals  atomic.Uint64 // records ever queued
}

type pstate uint8

const (
	stQueued    pstate = iota
	stPromoted         // queue head, told to lead the next flush
	stInFlight         // in a flush
	stDone             // seq or err set
	stCancelled        // left the queue on its caller's context
)

type pending struct {
	content []byte
	state   pstate
	seq     uint64
	err     error
	wake    chan struct{} // cap 1: done or promoted
}

// Open starts a writer's tenure on the journal name: it reads the tip once
// and appends fence{lease.Epoch()} at exactly that tip. A conflict there (a
// concurrent writer) is *FencedError; a lost lease is *JournalLeaseLostError.
// The journal does not own the lease: releasing it stays the caller's job.
func Open(ctx context.Context, ledger storage.Ledger, name string, lease storage.Lease, opts ...Option) (*SessionJournal, error) {
	j := &SessionJournal{
		ledger: ledger,
		name:   name,
		lease:  lease,
		epoch:  lease.Epoch(),
		opts:   options{clock: time.Now},
	}
	for _, o := range opts {
		o(&j.opts)
	}
	if j.epoch == 0 {
		return nil, &InvalidRecordError{Name: name, Reason: "lease epoch 0"}
	}
	if err := j.lostErr(); err != nil {
		return nil, err
	}
	tip, err := ledger.Tip(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("journal %q: read tip: %w", name, err)
	}
	content, err := encodeContent(KindFence, j.epoch, "", nil, nil)
	if err != nil {
		return nil, err
	}
	if err := ledger.Append(ctx, name, tip, appendAt(content, j.opts.clock())); err != nil {
		return nil, j.classify(err, tip, 1)
	}
	j.tip, j.fenceSeq = tip+1, tip+1
	return j, nil
}

// Name returns the ledger name.
func (j *SessionJournal) Name() string { return j.name }

// Epoch returns the lease epoch written in this writer's fence.
func (j *SessionJournal) Epoch() uint64 { return j.epoch }

// FenceSeq returns the sequence of this writer's fence.
func (j *SessionJournal) FenceSeq() uint64 { return j.fenceSeq }

// Tip returns the sequence of the last record this writer committed (its
// fence right after Open).
func (j *SessionJournal) Tip() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.tip
}

// Err returns the latched error, nil while the journal is healthy.
func (j *SessionJournal) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// AppendEvent appends an enduring event and returns its sequence once it is
// durable. loopID must be set for loop-scope events and empty for
// session-scope ones. Ephemeral events are refused with
// *event.EphemeralError and nothing is appended.
func (j *SessionJournal) AppendEvent(ctx context.Context, loopID string, ev event.Event) (uint64, error) {
	if err := event.CheckDurable(ev); err != nil {
		return 0, err
	}
	if err := checkScope(loopID, ev); err != nil {
		return 0, &InvalidRecordError{Name: j.name, Reason: err.Error()}
	}
	content, err := encodeContent(KindEvent, 0, loopID, ev, nil)
	if err != nil {
		return 0, err
	}
	return j.append(ctx, content)
}

// AppendCommand appends the audit record of a command, like AppendEvent.
func (j *SessionJournal) AppendCommand(ctx context.Context, cmd Command) (uint64, error) {
	content, err := j.commandContent(cmd)
	if err != nil {
		return 0, err
	}
	return j.append(ctx, content)
}

// CheckCommand returns the error AppendCommand would return for cmd
// before it appends anything (*InvalidRecordError,
// *storage.PayloadTooLargeError), nil if there is none. It appends
// nothing.
func (j *SessionJournal) CheckCommand(cmd Command) error {
	_, err := j.commandContent(cmd)
	return err
}

// commandContent is the content of cmd's record, checked.
func (j *SessionJournal) commandContent(cmd Command) ([]byte, error) {
	if err := cmd.validate(); err != nil {
		return nil, &InvalidRecordError{Name: j.name, Reason: err.Error()}
	}
	content, err := encodeContent(KindCommand, 0, "", nil, &cmd)
	if err != nil {
		return nil, err
	}
	if n := len(content) + atSuffixMax; n > storage.MaxPayload {
		return nil, &storage.PayloadTooLargeError{Name: j.name, Size: n, Max: storage.MaxPayload}
	}
	return content, nil
}

// lostErr checks the lease without blocking.
func (j *SessionJournal) lostErr() error {
	select {
	case <-j.lease.Lost():
		return &JournalLeaseLostError{Name: j.name, Epoch: j.epoch, Cause: storage.LostCause(j.name, j.lease)}
	default:
		return nil
	}
}

// classify turns a failed ledger Append at expected into the journal error.
func (j *SessionJournal) classify(err error, expected uint64, count int) error {
	var le *JournalLeaseLostError
	if errors.As(err, &le) {
		return err
	}
	var ce *storage.ConflictError
	if errors.As(err, &ce) {
		return &FencedError{Name: j.name, Epoch: j.epoch, Expected: expected, Actual: ce.Actual, Err: err}
	}
	return &AppendError{Name: j.name, Expected: expected, Count: count, Err: err}
}

func (j *SessionJournal) append(ctx context.Context, content []byte) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if n := len(content) + atSuffixMax; n > storage.MaxPayload {
		return 0, &storage.PayloadTooLargeError{Name: j.name, Size: n, Max: storage.MaxPayload}
	}
	p := &pending{content: content, wake: make(chan struct{}, 1)}

	lost := j.lostErr() // outside the lock: LostCause may take the lease's own locks
	j.mu.Lock()
	if j.err == nil && lost != nil {
		j.err = lost
	}
	if j.err != nil {
		err := j.err
		j.mu.Unlock()
		return 0, err
	}

	j.queue = append(j.queue, p)
	j.arrivals.Add(1)
	if !j.flushing {
		j.flushing = true
		j.lead(ctx) // unlocks
		return p.seq, p.err
	}
	j.mu.Unlock()

	ctxDone := ctx.Done()
	for {
		select {
		case <-p.wake:
			if p.state == stDone {
				// Set before the wake-up and never changed after: no
				// need to contend for the lock with the next leader.
				return p.seq, p.err
			}
			j.mu.Lock()
			switch p.state {
			case stDone:
				j.mu.Unlock()
				return p.seq, p.err
			case stPromoted:
				j.lead(ctx) // unlocks
				return p.seq, p.err
			}
			j.mu.Unlock()
		case <-ctxDone:
			j.mu.Lock()
			if p.state == stQueued {
				for i, q := range j.queue {
					if q == p {
						j.queue = append(j.queue[:i], j.queue[i+1:]...)
						break
					}
				}
				p.state = stCancelled
				j.mu.Unlock()
				return 0, ctx.Err()
			}
			// Already in a flush (or about to lead one): wait for it.
			j.mu.Unlock()
			ctxDone = nil
		}
	}
}

// lead flushes the head of the queue in one ledger Append. It is called with
// j.mu held, j.flushing set and the caller's record at the queue head, and
// returns with j.mu released and the caller's record done.
func (j *SessionJournal) lead(ctx context.Context) {
	j.gather()
	n, size := 0, 0
	for n < len(j.queue) && n < maxBatch {
		l := len(j.queue[n].content) + atSuffixMax
		if n > 0 && size+l > maxBatchLen {
			break
		}
		size += l
		n++
	}
	batch := j.queue[:n:n]
	if n == len(j.queue) {
		j.queue = nil
	} else {
		j.queue = append([]*pending(nil), j.queue[n:]...)
	}
	for _, p := range batch {
		p.state = stInFlight
	}
	expected := j.tip
	at := j.opts.clock()
	j.mu.Unlock()

	payloads := make([][]byte, n)
	for i, p := range batch {
		payloads[i] = appendAt(p.content, at)
	}
	flushStart := time.Now()
	err := j.lostErr()
	if err == nil {
		// One caller giving up must not fail the others' records (nor
		// latch the journal), so the flush ignores cancellation; it has a
		// deadline of its own (WithFlushTimeout), so that a store call
		// that hangs fails the journal rather than every caller with it.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), j.flushTimeout())
		aerr := j.ledger.Append(fctx, j.name, expected, payloads...)
		cancel()
		if aerr != nil {
			err = j.classify(aerr, expected, n)
		}
	}

	j.mu.Lock()
	if err != nil {
		if j.err == nil {
			j.err = err
		}
		j.finishLocked(batch, 0, j.err)
		j.finishLocked(j.queue, 0, j.err)
		j.queue = nil
	} else {
		j.tip = expected + uint64(n)
		j.finishLocked(batch, expected+1, nil)
	}
	j.lastBatch, j.lastEnd = n, time.Now()
	j.lastFlush = j.lastEnd.Sub(flushStart)
	if len(j.queue) > 0 {
		head := j.queue[0]
		head.state = stPromoted
		signal(head.wake)
	} else {
		j.flushing = false
	}
	j.mu.Unlock()
}

// flushTimeout bounds one flush.
func (j *SessionJournal) flushTimeout() time.Duration {
	if j.opts.flushTimeout > 0 {
		return j.opts.flushTimeout
	}
	return DefaultFlushTimeout
}

// finishLocked completes ps with sequences from first (when err is nil) or
// with err.
func (j *SessionJournal) finishLocked(ps []*pending, first uint64, err error) {
	for i, p := range ps {
		if err != nil {
			p.err = err
		} else {
			p.seq = first + uint64(i)
		}
		p.content = nil
		p.state = stDone
		signal(p.wake)
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// String describes the writer, for logs.
func (j *SessionJournal) String() string {
	return "journal " + strconv.Quote(j.name) + " epoch " + strconv.FormatUint(j.epoch, 10)
}
