package journal

import (
	"time"
)

// Option configures Open.
type Option func(*options)

type options struct {
	clock func() time.Time
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
