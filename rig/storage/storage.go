// Package storage holds the leaf contracts every looprig backend implements:
// exclusive leases with fencing epochs, probes and forced takeovers (Leaser,
// Lease, LeaseProber, Breaker), ordered compare-and-swap ledgers (Ledger,
// Cursor) and a small revisioned key-value store whose keys form a tree
// (KV, ChildLister). Store bundles them all. The package also owns the
// typed errors of those contracts and the name grammar shared by all of
// them.
//
// The package has no dependencies beyond the standard library. Backends live
// elsewhere (memstore, fsstore, natsstore); storetest checks that a backend
// honours every rule written here.
package storage

import (
	"context"
	"time"
)

// MaxPayload is the largest ledger payload or KV value every backend must
// accept. Larger ones are refused with *PayloadTooLargeError.
const MaxPayload = 1 << 20

// Leaser grants exclusive, named leases.
//
// Acquire never waits for a holder: when the name is held it returns
// *LeaseHeldError at once, carrying the holder's epoch. Epochs start at 1,
// strictly increase per name across grants, survive release and crashes, and
// are never reused.
type Leaser interface {
	Acquire(ctx context.Context, name string) (Lease, error)
}

// Lease is one grant of a name.
//
// Lost closes exactly once: on Release, on a forced takeover, or when the
// backend notices the grant is no longer valid. Release is idempotent, works
// after loss, and never frees a later holder's grant.
type Lease interface {
	Epoch() uint64
	Lost() <-chan struct{}
	Release(ctx context.Context) error
}

// LossReporter is implemented by leases that can say why Lost closed.
// LostCause returns nil while the lease is valid and a *LeaseLostError after.
type LossReporter interface {
	LostCause() error
}

// LostCause returns why lease was lost, or nil while it is still valid.
// For a lease that does not report causes it returns a *LeaseLostError
// with an unknown reason once Lost is closed.
func LostCause(name string, lease Lease) error {
	if r, ok := lease.(LossReporter); ok {
		return r.LostCause()
	}
	select {
	case <-lease.Lost():
		return &LeaseLostError{Name: name, Epoch: lease.Epoch(), Reason: LossUnknown}
	default:
		return nil
	}
}

// Holder identifies the process that holds (or last held) a lease.
type Holder struct {
	PID      int       `json:"pid"`
	Host     string    `json:"host"`
	Acquired time.Time `json:"acquired"`
	// Started is the holder process's start as its kernel counts it
	// (clock ticks since boot) and Boot the boot it counts from (the
	// kernel's boot_id): with PID they name the process whatever the wall
	// clock did since, so a process that got the pid after the holder
	// died is told from it (looprig/internal/procstart). Zero where
	// unknown: not Linux, or a grant by a looprig from before they were
	// recorded.
	Started uint64 `json:"started,omitempty"`
	Boot    string `json:"boot,omitempty"`
}

// LeaseStatus is what a probe sees of a name.
type LeaseStatus struct {
	Name string
	// Held reports whether some process holds the name right now.
	Held bool
	// Epoch is the latest epoch granted for the name (0 if never granted).
	Epoch uint64
	// Holder is the latest grantee; meaningful when Epoch > 0.
	Holder Holder
}

// Breaker takes a name by force from a wedged holder: the current grant
// (if any) is lost and the caller holds the name at the next epoch. Break
// of a free name is an ordinary grant.
type Breaker interface {
	Break(ctx context.Context, name string) (Lease, error)
}

// LeaseProber looks at names without taking them. A probe never makes a
// concurrent Acquire fail.
type LeaseProber interface {
	// Probe reports whether name is held, its latest epoch and holder.
	Probe(ctx context.Context, name string) (LeaseStatus, error)
	// ProbeMany probes many names at once (fsstore: one read of the
	// kernel's lock table), for listings of many sessions. It returns one
	// status per name, in the order of names, each as Probe would report
	// it. An error about any one name may fail the whole call (callers
	// then probe one by one to keep it to that name); an invalid name is
	// *InvalidNameError. No names is no statuses and no error. A store
	// may use or ignore the options (see WithVouch).
	ProbeMany(ctx context.Context, names []string, opts ...ProbeOption) ([]LeaseStatus, error)
}

// ProbeOption changes how ProbeMany probes.
type ProbeOption func(*ProbeOptions)

// ProbeOptions is what ProbeOption values set; a store's ProbeMany reads
// them with NewProbeOptions.
type ProbeOptions struct {
	// Vouch, when set, may be asked of a name whose latest grant names a
	// holder and whose held state would otherwise cost the store more
	// (fsstore: a read of the kernel's lock table, which waits for an RCU
	// grace period, about 10 ms). It may be called concurrently. It is for
	// listings; what it answers is Vouched.
	Vouch func(ctx context.Context, name string, holder Holder) Vouched
}

// Vouched is what a listing's vouch (ProbeOptions.Vouch) knows of a
// name's latest holder by other means than the store.
type Vouched int

const (
	// VouchNothing says nothing: the store probes as usual.
	VouchNothing Vouched = iota
	// VouchHeld: the holder is known to hold the name now (it serves
	// it), and the name is reported held without more. A vouch taken at
	// the instant a holder releases may report it held for that instant,
	// as a probe straddling a release may.
	VouchHeld
	// VouchGone: the holder's process is known to be gone (no such
	// process on its machine, or its pid another process's), and its lock
	// went with it: the name is reported free without more.
	// A grant in progress (a lock taken, its epoch not yet written, which
	// still names the gone holder) is then reported free, as a probe a
	// moment before it would have: a listing, not a grant, and every
	// action on a name goes through Acquire.
	VouchGone
)

// WithVouch sets ProbeOptions.Vouch.
func WithVouch(vouch func(ctx context.Context, name string, holder Holder) Vouched) ProbeOption {
	return func(o *ProbeOptions) { o.Vouch = vouch }
}

// NewProbeOptions applies opts.
func NewProbeOptions(opts []ProbeOption) ProbeOptions {
	var o ProbeOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Ledger stores named, append-only sequences of opaque records.
//
// Sequences are 1-based and contiguous; the tip of a ledger is the sequence
// of its last record, 0 when it is empty. An absent ledger is an empty one.
type Ledger interface {
	// Append commits payloads at expected+1, expected+2, ... if and only if
	// the tip is expected when the append takes effect; otherwise it returns
	// *ConflictError and changes nothing. When Append returns nil every
	// payload is durable. Appending no payloads only checks the tip and
	// never creates a ledger. Payloads are copied; the caller may reuse them.
	Append(ctx context.Context, name string, expected uint64, payloads ...[]byte) error
	// Read returns a cursor over the records with sequence > after (so
	// after = 0 reads everything), bounded at the tip seen when Read was
	// called. after may be past the tip. A cursor opened before a Delete
	// may go on returning what it had.
	Read(ctx context.Context, name string, after uint64) (Cursor, error)
	// Tip returns the sequence of the last record, 0 for an empty ledger.
	Tip(ctx context.Context, name string) (uint64, error)
	// Delete removes the ledger; deleting an absent ledger is not an error.
	Delete(ctx context.Context, name string) error
}

// Record is one ledger entry.
type Record struct {
	Seq     uint64
	Payload []byte
}

// Cursor walks ledger records in sequence order, in the style of
// bufio.Scanner:
//
//	for c.Next() { r := c.Record(); ... }
//	if err := c.Err(); err != nil { ... }
//
// The payload of a Record is valid until the next call to Next or Close.
type Cursor interface {
	Next() bool
	Record() Record
	Err() error
	Close() error
}

// Revision constants for KV.Put and KV.DeleteKey.
const (
	// MustNotExist as the expected revision makes Put create the key only
	// if it is absent.
	MustNotExist uint64 = 0
	// AnyRevision as the expected revision makes Put or DeleteKey
	// unconditional.
	AnyRevision uint64 = ^uint64(0)
)

// Entry is one KV value with its revision. Revisions start at 1 when a key
// is created and increase by one on every Put. A key deleted and created
// again starts at 1 again, so a writer must not hold a revision across a
// delete it did not make.
type Entry struct {
	Key      string
	Value    []byte
	Revision uint64
}

// KV is a small key-value store with per-key revisions, used for the
// session catalog.
type KV interface {
	// Get returns *NotFoundError for an absent key.
	Get(ctx context.Context, key string) (Entry, error)
	// Put stores value if the key's revision is expected (MustNotExist for
	// absent, AnyRevision for unconditional) and returns the new revision;
	// otherwise *ConflictError.
	Put(ctx context.Context, key string, value []byte, expected uint64) (uint64, error)
	// DeleteKey removes the key if its revision is expected (or
	// AnyRevision). An absent key has revision 0: deleting it with
	// AnyRevision or MustNotExist is not an error, with any other expected
	// revision it is a *ConflictError.
	DeleteKey(ctx context.Context, key string, expected uint64) error
	// Keys lists the keys that start with prefix, sorted. The prefix need
	// not be a valid name; "" lists every key.
	Keys(ctx context.Context, prefix string) ([]string, error)
}

// ChildLister lists one level of the tree the KV's keys form, so that a
// listing of many sessions need not read every key below them where the
// backend can do it cheaply (fsstore: one directory read).
type ChildLister interface {
	// Children returns, sorted and without duplicates, the segments s such
	// that a key equals prefix+s or starts with prefix+s+"/". prefix is ""
	// or a valid name followed by "/". A segment whose keys were all
	// deleted may still be returned; a segment with a key under it never
	// goes missing.
	Children(ctx context.Context, prefix string) ([]string, error)
}

// ChangeStamper tells cheaply whether what a listing of sessions reads
// (KV keys and lease states) may have changed, so that a listing shown for
// a long time need not be read again while nothing happens.
type ChangeStamper interface {
	// ChangeStamp returns an opaque stamp of the KV and the leases. Two
	// stamps that are equal mean that between them no key was put or
	// deleted and no lease was granted, released, broken or lost with
	// its holder's death (a holder a probe of this Store saw holding it:
	// a listing probes each session's lease). The converse does not hold: stamps may differ
	// with nothing changed (a backend that cannot tell returns a new stamp
	// every time). Ledger appends are not covered. A change made by a
	// process that died in the middle of it may go unnoticed until the
	// next change, so a caller that shows a listing for long still lists
	// again from time to time. Stamps of different Stores do not compare.
	ChangeStamp(ctx context.Context) (string, error)
}

// DurableStamper gives stamps that compare across processes and over
// time, for a reader that keeps what it listed on disk (the search index
// keeps the sessions it last read, and which were held) and must know,
// from a later process, whether that still holds. It is optional: a
// store without it is listed every time.
type DurableStamper interface {
	// DurableStamp returns a stamp of the KV and the leases. Two stamps
	// of the same store, given by any of its Stores in any processes,
	// are equal only if between them no key was put or deleted and no
	// lease was granted, released or broken. Holders' deaths and ledger
	// appends are not covered: a reader treats a session held when it
	// listed as one whose journal may still grow. ok is false when no
	// stamp can be trusted now (the last change is too recent to be told
	// from the next one); the caller lists. A change made by a process
	// that died in the middle of it may go unnoticed until the next
	// change, so a reader still lists again from time to time.
	DurableStamp(ctx context.Context) (stamp string, ok bool, err error)
}

// KeyWatcher tells a reader of one key when it may have changed, so that
// a process waiting for a key to be put (a live session waiting for a
// request to hand it over) need not read it on a timer while nothing
// happens. It is optional: a store without it is polled.
type KeyWatcher interface {
	// WatchKey returns a channel that receives after key may have been
	// put or deleted (signals are coalesced, and may come with nothing
	// changed), until stop is called. A change between WatchKey and the
	// caller's next read of the key is signalled. An error means the key
	// cannot be watched: poll it.
	WatchKey(key string) (changed <-chan struct{}, stop func(), err error)
}

// Store is the bundle a backend provides to the runtime: leases that can
// be probed and broken, ledgers, a KV that lists one level of its keys and
// tells when it changed, and blobs (workspace checkpoints).
type Store interface {
	Leaser
	LeaseProber
	Breaker
	Ledger
	KV
	ChildLister
	ChangeStamper
	BlobStore
	// LocalDir returns the directory on this machine the store keeps its
	// files in (journals, leases, catalog, or the files a wrapper keeps
	// next to them), or "" when it keeps none here (an in-memory store, a
	// remote server). When not "", it is an absolute path that names an
	// existing directory, and it does not change for the life of the
	// Store. The runtime refuses a workspace root that overlaps it (see
	// rig.PersistenceOverlapError): a turn running there could delete the
	// store.
	LocalDir() string
}
