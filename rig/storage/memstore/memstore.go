// Package memstore is the in-memory reference backend of the rig/storage
// contracts: the oracle the conformance suite (storetest) is checked
// against, and the store runtime tests use when they need no disk.
//
// A *Store owns, in memory and for the life of the value only:
//   - leases with per-name fencing epochs (storage.Leaser, storage.LeaseProber),
//     plus a forced takeover (storage.Breaker) modelling `looprig lease break`;
//   - append-only ledgers with compare-and-swap on the tip (storage.Ledger);
//   - a revisioned key-value store (storage.KV, storage.ChildLister).
//
// It follows every rule written in rig/storage exactly and is safe for
// concurrent use. For tests it adds fault injection on Append
// (SetAppendFault) and lease bookkeeping (LeaseStats). Nothing is persisted:
// "durable" means "visible to every later call on the same *Store".
package memstore

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"looprig/rig/storage"
)

// Store is an in-memory storage.Store. The zero value is not usable; call New.
type Store struct {
	pid  int
	host string

	mu          sync.Mutex
	leases      map[string]*leaseState
	ledgers     map[string][][]byte // index i holds seq i+1; payloads are never mutated
	kv          map[string]storage.Entry
	appendFault func(name string, expected uint64) error
	changes     uint64 // KV and lease changes, for ChangeStamp
	blobs       map[storage.Digest]*memBlob
}

var _ storage.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	host, _ := os.Hostname()
	return &Store{
		pid:     os.Getpid(),
		host:    host,
		leases:  make(map[string]*leaseState),
		ledgers: make(map[string][][]byte),
		kv:      make(map[string]storage.Entry),
	}
}

// LocalDir returns "": a memstore keeps no files (storage.Store).
func (s *Store) LocalDir() string { return "" }

// leaseState is everything the store remembers about one lease name. It is
// kept after release so epochs are never reused.
type leaseState struct {
	epoch    uint64         // latest epoch granted, 0 if never granted
	holder   storage.Holder // latest grantee
	cur      *lease         // live grant, nil when the name is free
	acquired int            // successful grants (Acquire and Break)
	released int            // leases whose Release was called (first call only)
}

func (s *Store) state(name string) *leaseState {
	st := s.leases[name]
	if st == nil {
		st = &leaseState{}
		s.leases[name] = st
	}
	return st
}

func ctxErr(ctx context.Context, op, name string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: %s %q: %w", op, name, err)
	}
	return nil
}

// check validates name and ctx, in that order of cheapness.
func check(ctx context.Context, op, name string) error {
	if err := ctxErr(ctx, op, name); err != nil {
		return err
	}
	return storage.ValidateName(name)
}

// --- leases ---------------------------------------------------------------

// Acquire grants name at the next epoch, or returns *storage.LeaseHeldError
// at once when it is held.
func (s *Store) Acquire(ctx context.Context, name string) (storage.Lease, error) {
	if err := check(ctx, "acquire", name); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state(name)
	if st.cur != nil {
		return nil, &storage.LeaseHeldError{Name: name, HolderEpoch: st.epoch, Holder: st.holder}
	}
	return s.grantLocked(name, st), nil
}

// Break is the forced takeover of name: the live grant, if any, is lost
// with reason storage.LossReplaced (its NewEpoch set to the new grant's
// epoch), and the caller is granted name at the next epoch. Break works on
// a free name too; it then behaves like Acquire.
func (s *Store) Break(ctx context.Context, name string) (storage.Lease, error) {
	if err := check(ctx, "break", name); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state(name)
	if old := st.cur; old != nil {
		old.loseLocked(storage.LossReplaced, st.epoch+1)
		st.cur = nil
	}
	return s.grantLocked(name, st), nil
}

func (s *Store) grantLocked(name string, st *leaseState) *lease {
	st.epoch++
	s.changes++
	st.holder = storage.Holder{PID: s.pid, Host: s.host, Acquired: time.Now()}
	st.acquired++
	l := &lease{s: s, name: name, epoch: st.epoch, lost: make(chan struct{})}
	st.cur = l
	return l
}

// Probe reports whether name is held and its latest epoch and holder. It
// takes nothing and never makes an Acquire fail.
func (s *Store) Probe(ctx context.Context, name string) (storage.LeaseStatus, error) {
	if err := check(ctx, "probe", name); err != nil {
		return storage.LeaseStatus{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ls := storage.LeaseStatus{Name: name}
	if st := s.leases[name]; st != nil {
		ls.Held = st.cur != nil
		ls.Epoch = st.epoch
		ls.Holder = st.holder
	}
	return ls, nil
}

// ProbeMany implements storage.LeaseProber: every name is probed under one
// lock, so the statuses are one consistent snapshot. Probes cost nothing
// here: a vouch is never asked.
func (s *Store) ProbeMany(ctx context.Context, names []string, _ ...storage.ProbeOption) ([]storage.LeaseStatus, error) {
	for _, name := range names {
		if err := check(ctx, "probe", name); err != nil {
			return nil, err
		}
	}
	out := make([]storage.LeaseStatus, len(names))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, name := range names {
		out[i] = storage.LeaseStatus{Name: name}
		if st := s.leases[name]; st != nil {
			out[i].Held, out[i].Epoch, out[i].Holder = st.cur != nil, st.epoch, st.holder
		}
	}
	return out, nil
}

// LeaseStats reports, for name, how many grants succeeded (Acquire and
// Break) and how many of those leases have been released. A lease counts as
// released on the first call of its Release, whether or not it had already
// been lost (a broken lease that its holder then releases counts); further
// calls do not count. A leak-free run ends with acquired == released.
// Unknown names report 0, 0.
func (s *Store) LeaseStats(name string) (acquired, released int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.leases[name]; st != nil {
		return st.acquired, st.released
	}
	return 0, 0
}

// lease is one grant. Its mutable fields are guarded by s.mu.
type lease struct {
	s     *Store
	name  string
	epoch uint64
	lost  chan struct{}

	cause        *storage.LeaseLostError // nil while valid
	releaseCalls int
}

var (
	_ storage.Lease        = (*lease)(nil)
	_ storage.LossReporter = (*lease)(nil)
)

func (l *lease) Epoch() uint64 { return l.epoch }

func (l *lease) Lost() <-chan struct{} { return l.lost }

// Release gives the grant up. It is idempotent, works after loss, and only
// frees the name when this lease is still the live grant. It never blocks,
// so it always takes effect, even on a done context (releases usually run
// in cleanup paths whose context has ended).
func (l *lease) Release(context.Context) error {
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.leases[l.name]
	l.releaseCalls++
	if l.releaseCalls == 1 {
		st.released++
	}
	if st.cur == l {
		st.cur = nil
		s.changes++
	}
	if l.cause == nil {
		l.loseLocked(storage.LossReleased, 0)
	}
	return nil
}

// LostCause returns nil while the lease is valid and a
// *storage.LeaseLostError once Lost is closed.
func (l *lease) LostCause() error {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if l.cause == nil {
		return nil
	}
	c := *l.cause
	return &c
}

func (l *lease) loseLocked(reason storage.LossReason, newEpoch uint64) {
	if l.cause != nil {
		return
	}
	l.cause = &storage.LeaseLostError{Name: l.name, Epoch: l.epoch, Reason: reason, NewEpoch: newEpoch}
	close(l.lost)
}

// --- ledgers --------------------------------------------------------------

// SetAppendFault installs fault, called by every Append whose arguments are
// valid (name, context, payload sizes) before the tip is checked. When it
// returns non-nil, Append returns that error wrapped with %w and changes
// nothing. fault runs without the store's lock held, so it may call the
// store. nil removes the fault.
func (s *Store) SetAppendFault(fault func(name string, expected uint64) error) {
	s.mu.Lock()
	s.appendFault = fault
	s.mu.Unlock()
}

// Append commits payloads at expected+1, expected+2, ... if and only if the
// tip is expected, all together or not at all. Payloads are copied.
func (s *Store) Append(ctx context.Context, name string, expected uint64, payloads ...[]byte) error {
	if err := check(ctx, "append", name); err != nil {
		return err
	}
	for _, p := range payloads {
		if len(p) > storage.MaxPayload {
			return &storage.PayloadTooLargeError{Name: name, Size: len(p), Max: storage.MaxPayload}
		}
	}
	s.mu.Lock()
	fault := s.appendFault
	s.mu.Unlock()
	if fault != nil {
		if err := fault(name, expected); err != nil {
			return fmt.Errorf("memstore: append %q at %d: %w", name, expected, err)
		}
	}
	// Copy outside the lock; a conflict wastes the copies, which is fine.
	copies := make([][]byte, len(payloads))
	for i, p := range payloads {
		copies[i] = append(make([]byte, 0, len(p)), p...)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	recs := s.ledgers[name]
	if tip := uint64(len(recs)); tip != expected {
		return &storage.ConflictError{Name: name, Expected: expected, Actual: tip}
	}
	if len(copies) == 0 {
		return nil // only a tip check; an absent ledger stays absent
	}
	s.ledgers[name] = append(recs, copies...)
	return nil
}

// Read returns a cursor over the records with seq > after, bounded at the
// tip at the time of the call. The cursor stops with the context's error if
// ctx ends while it is walked.
func (s *Store) Read(ctx context.Context, name string, after uint64) (storage.Cursor, error) {
	if err := check(ctx, "read", name); err != nil {
		return nil, err
	}
	s.mu.Lock()
	recs := s.ledgers[name]
	s.mu.Unlock()
	// recs is a snapshot: elements below len(recs) are never written again
	// (appends only write past the end; Delete replaces the map entry).
	c := &cursor{ctx: ctx, name: name, next: after}
	if after < uint64(len(recs)) {
		c.recs = recs[:len(recs):len(recs)]
	}
	return c, nil
}

// Tip returns the seq of the last record of name, 0 when it is empty or absent.
func (s *Store) Tip(ctx context.Context, name string) (uint64, error) {
	if err := check(ctx, "tip", name); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return uint64(len(s.ledgers[name])), nil
}

// Delete removes the ledger name; an absent ledger is not an error.
func (s *Store) Delete(ctx context.Context, name string) error {
	if err := check(ctx, "delete", name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ledgers, name)
	return nil
}

type cursor struct {
	ctx    context.Context
	name   string
	recs   [][]byte // snapshot; recs[i] is seq i+1
	next   uint64   // seq of the record last yielded (starts at after)
	cur    storage.Record
	err    error
	closed bool
}

func (c *cursor) Next() bool {
	c.cur = storage.Record{}
	if c.closed || c.err != nil || c.next >= uint64(len(c.recs)) {
		return false
	}
	if err := ctxErr(c.ctx, "read", c.name); err != nil {
		c.err = err
		return false
	}
	p := c.recs[c.next]
	c.next++
	// Hand out a copy so a caller that scribbles on it cannot corrupt the store.
	c.cur = storage.Record{Seq: c.next, Payload: append(make([]byte, 0, len(p)), p...)}
	return true
}

func (c *cursor) Record() storage.Record { return c.cur }

func (c *cursor) Err() error { return c.err }

func (c *cursor) Close() error {
	c.closed = true
	c.cur = storage.Record{}
	c.recs = nil
	return nil
}

// --- KV -------------------------------------------------------------------

// Get returns the entry of key or *storage.NotFoundError.
func (s *Store) Get(ctx context.Context, key string) (storage.Entry, error) {
	if err := check(ctx, "get", key); err != nil {
		return storage.Entry{}, err
	}
	s.mu.Lock()
	e, ok := s.kv[key]
	s.mu.Unlock()
	if !ok {
		return storage.Entry{}, &storage.NotFoundError{Key: key}
	}
	e.Value = append(make([]byte, 0, len(e.Value)), e.Value...)
	return e, nil
}

// Put stores value under key if its revision is expected (storage.MustNotExist
// for an absent key, storage.AnyRevision for unconditional) and returns the
// new revision: 1 on create, one more on every update.
func (s *Store) Put(ctx context.Context, key string, value []byte, expected uint64) (uint64, error) {
	if err := check(ctx, "put", key); err != nil {
		return 0, err
	}
	if len(value) > storage.MaxPayload {
		return 0, &storage.PayloadTooLargeError{Name: key, Size: len(value), Max: storage.MaxPayload}
	}
	v := append(make([]byte, 0, len(value)), value...)
	s.mu.Lock()
	defer s.mu.Unlock()
	var rev uint64 // current revision, 0 when absent
	if e, ok := s.kv[key]; ok {
		rev = e.Revision
	}
	if expected != storage.AnyRevision && expected != rev {
		return 0, &storage.ConflictError{Name: key, Expected: expected, Actual: rev}
	}
	s.kv[key] = storage.Entry{Key: key, Value: v, Revision: rev + 1}
	s.changes++
	return rev + 1, nil
}

// DeleteKey removes key if its revision is expected or expected is
// storage.AnyRevision. An absent key is not an error with AnyRevision and a
// *storage.ConflictError (Actual 0) with any other expected revision,
// MustNotExist included, as the contract says.
func (s *Store) DeleteKey(ctx context.Context, key string, expected uint64) error {
	if err := check(ctx, "delete key", key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.kv[key]
	if !ok {
		if expected == storage.AnyRevision || expected == storage.MustNotExist {
			return nil
		}
		return &storage.ConflictError{Name: key, Expected: expected, Actual: 0}
	}
	if expected != storage.AnyRevision && expected != e.Revision {
		return &storage.ConflictError{Name: key, Expected: expected, Actual: e.Revision}
	}
	delete(s.kv, key)
	s.changes++
	return nil
}

// ChangeStamp implements storage.ChangeStamper: the number of KV and lease
// changes so far.
func (s *Store) ChangeStamp(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return strconv.FormatUint(s.changes, 10), nil
}

// Children implements storage.ChildLister.
func (s *Store) Children(ctx context.Context, prefix string) ([]string, error) {
	if err := storage.ValidateChildPrefix(prefix); err != nil {
		return nil, err
	}
	keys, err := s.Keys(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range keys {
		seg, _, _ := strings.Cut(k[len(prefix):], "/")
		if len(out) == 0 || out[len(out)-1] != seg {
			out = append(out, seg)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Keys lists the keys that start with prefix, sorted. prefix is not
// validated; "" lists every key.
func (s *Store) Keys(ctx context.Context, prefix string) ([]string, error) {
	if err := ctxErr(ctx, "keys", prefix); err != nil {
		return nil, err
	}
	s.mu.Lock()
	keys := make([]string, 0, len(s.kv))
	for k := range s.kv {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	s.mu.Unlock()
	slices.Sort(keys)
	return keys, nil
}
