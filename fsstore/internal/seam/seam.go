// Package seam holds fsstore's test seams: named points on the write paths
// of ledgers, epoch files and KV files where a test can stop the process
// (to prove that a crash at that point recovers), make a write fail (to
// prove that a full disk is a typed error that loses nothing), or see and
// hold every sync (to prove that nothing is acknowledged before the sync
// that makes it durable).
//
// Nothing in looprig sets a hook. In production every seam costs one
// atomic load of a nil pointer. Tests in the fsstore tree set one with Set,
// typically in a helper process that they expect to die at a point (see
// fsstore/faulttest).
package seam

import (
	"os"
	"sync/atomic"
)

// Point names a step of a write path.
type Point string

// The points, in the order a write path passes them.
const (
	// LedgerWrite: a batch of frames is about to be written to a ledger
	// file (one pwrite). A hook error here is the write's error, after
	// half of the batch was written (a short write, as on a full disk).
	LedgerWrite Point = "ledger.write"
	// LedgerWritten: the batch is written, fdatasync has not run.
	LedgerWritten Point = "ledger.written"
	// LedgerSynced: fdatasync returned; no appender is acknowledged yet.
	LedgerSynced Point = "ledger.synced"

	// EpochTempWritten: the next epoch is in a synced temp file next to
	// the epoch file, not renamed yet (so not granted).
	EpochTempWritten Point = "epoch.temp-written"
	// EpochRenamed: the temp file was renamed over the epoch file; the
	// directory is not fsynced yet and the grant not returned.
	EpochRenamed Point = "epoch.renamed"

	// KVTempWritten: a KV value (a catalog entry; also FORMAT) is in a
	// synced temp file, not renamed yet.
	KVTempWritten Point = "kv.temp-written"
	// KVRenamed: the temp file was renamed over the key's file; the
	// directory is not fsynced yet.
	KVRenamed Point = "kv.renamed"

	// Fsync: the fsync (fcntl F_FULLFSYNC on Darwin) of the file or
	// directory at path is about to run, on every write path: what the
	// hooks of the points above see is what was made durable, in order.
	// A hook error is the sync's error (as EIO would be), and the sync
	// does not run.
	Fsync Point = "sync.fsync"
	// DataSync: the fdatasync of the file at path (a ledger) is about to
	// run; a hook error is its error, as for Fsync.
	DataSync Point = "sync.datasync"
)

// Hook is called at each point with the file the step writes. What it
// returns is injected where the point says so (LedgerWrite, Fsync,
// DataSync) and ignored elsewhere. It may stop the process, or block (a
// sync held while a test looks at what was acknowledged meanwhile).
type Hook func(p Point, path string) error

var hook atomic.Pointer[Hook]

// Set installs h (nil removes the hook) and returns a function that puts
// the previous hook back. Only tests call it.
func Set(h Hook) (restore func()) {
	var p *Hook
	if h != nil {
		p = &h
	}
	old := hook.Swap(p)
	return func() { hook.Store(old) }
}

// At passes point p for the file at path.
func At(p Point, path string) error {
	h := hook.Load()
	if h == nil {
		return nil
	}
	return (*h)(p, path)
}

// WriteAt is f.WriteAt(b, off) behind the LedgerWrite point: when the hook
// returns an error, only the first half of b is written and the error is
// returned with that count, as a write that ran out of space would.
func WriteAt(f *os.File, b []byte, off int64) (int, error) {
	if h := hook.Load(); h != nil {
		if err := (*h)(LedgerWrite, f.Name()); err != nil {
			n, _ := f.WriteAt(b[:len(b)/2], off)
			return n, err
		}
	}
	return f.WriteAt(b, off)
}
