package journal

import (
	"time"
)

// Option configures Open.
type Option func(*options)

type options struct {
	clock       func() time.Time
	maxBatch    int
	maxBatchLen int
}

// WithClock sets the clock that stamps records (default time.Now).
func WithClock(clock func() time.Time) Option {
	return func(o *options) { o.clock = clock }
}

// WithMaxBatch bounds how many records (default 1024) and payload bytes
// (default 8 MiB) one ledger Append may carry. A batch always holds at
// least one record.
func WithMaxBatch(records, bytes int) Option {
	return func(o *options) {
		if records > 0 {
			o.maxBatch = records
		}
		if bytes > 0 {
			o.maxBatchLen = bytes
		}
	}
}
