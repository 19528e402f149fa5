package journal

import (
	"time"
)

// Option configures Open.
type Option func(*options)

type options struct {
	clock        func() time.Time
	flushTimeout time.Duration
}

// DefaultFlushTimeout bounds one flush of the journal (one ledger Append
// carrying a group of records) when WithFlushTimeout does not say
// otherwise: far above any store's own bound (natsstore's operations
// time out after seconds), it only ever ends a store call that hangs.
const DefaultFlushTimeout = time.Minute

// WithFlushTimeout bounds each flush (d <= 0 means DefaultFlushTimeout).
// A flush runs on a context of its own, which no caller's cancellation
// ends (the records of the others in its group ride on it), with this
// deadline: a store that honours its context (natsstore, and fsstore while
// it waits for another process's lock on the ledger) returns by then, and
// the journal latches the failure like any failed append, so the session
// faults instead of hanging. What a store does not bound itself (a
// pwrite or fdatasync stuck in the kernel) no deadline can end.
func WithFlushTimeout(d time.Duration) Option {
	return func(o *options) { o.flushTimeout = d }
}

// One ledger Append carries at most maxBatch records and, unless it holds
// a single record, at most maxBatchLen payload bytes.
const (
	maxBatch    = 1024
	maxBatchLen = 8 << 20
)

// WithClock sets the clock that stamps records (default time.Now).
func WithClock(clock func() time.Time) Option {
	return func(o *options) { o.clock = clock }
}
