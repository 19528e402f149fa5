package rigtest

import (
	"context"
	"strings"
	"sync"
	"testing"

	"looprig/rig/journal"
	"looprig/rig/storage"
)

// faultStore wraps a backend's store for the suite: it injects faults into
// Append, Acquire and Probe, and wraps every lease it grants (Acquire,
// Break) so that the suite can count and order releases. Everything else,
// ProbeMany included, goes straight to the wrapped store.
type faultStore struct {
	storage.Store

	mu        sync.Mutex
	onAppend  func(name string, expected uint64, payloads [][]byte) error
	onAcquire func(name string) error
	onProbe   func(name string) error
	onTip     func(name string)
	onGet     func(ctx context.Context, key string) // called before every Get; may block
	onRelease func(name string) error               // called after every Release; its error is the Release's
	deafNew   bool                                  // new grants hide their loss (deafened)
	grants    map[string][]*trackedLease            // every grant, per name, in order
	ops       []leaseOp                             // grants and releases, in order
	ledgers   map[string]bool                       // every ledger appended to
}

type leaseOp struct {
	op    string // "acquire", "break", "release"
	name  string
	epoch uint64
}

func newFaultStore(s storage.Store) *faultStore {
	return &faultStore{Store: s, grants: map[string][]*trackedLease{}, ledgers: map[string]bool{}}
}

// setGetHook installs fn, called before every Get of the KV reaches the
// store (it may block, as a read on a dropped connection does).
func (f *faultStore) setGetHook(fn func(ctx context.Context, key string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onGet = fn
}

// Get implements storage.KV, after the Get hook.
func (f *faultStore) Get(ctx context.Context, key string) (storage.Entry, error) {
	f.mu.Lock()
	hook := f.onGet
	f.mu.Unlock()
	if hook != nil {
		hook(ctx, key)
	}
	return f.Store.Get(ctx, key)
}

// setAppendFault installs fn, called before every Append reaches the store;
// a non-nil error fails that Append without touching the store.
func (f *faultStore) setAppendFault(fn func(name string, expected uint64, payloads [][]byte) error) {
	f.mu.Lock()
	f.onAppend = fn
	f.mu.Unlock()
}

// setReleaseFault installs fn, called once a lease was released; a
// non-nil error is what Release returns (the lease is released all the
// same, as after a release whose acknowledgement was lost).
func (f *faultStore) setReleaseFault(fn func(name string) error) {
	f.mu.Lock()
	f.onRelease = fn
	f.mu.Unlock()
}

// setAcquireFault installs fn, called before every Acquire.
func (f *faultStore) setAcquireFault(fn func(name string) error) {
	f.mu.Lock()
	f.onAcquire = fn
	f.mu.Unlock()
}

// setProbeFault installs fn, called before every Probe; a non-nil error
// fails that Probe.
func (f *faultStore) setProbeFault(fn func(name string) error) {
	f.mu.Lock()
	f.onProbe = fn
	f.mu.Unlock()
}

// failAppendOnce fails the first Append to name at expected, once.
func (f *faultStore) failAppendOnce(name string, expected uint64) {
	var once sync.Once
	f.setAppendFault(func(n string, e uint64, _ [][]byte) error {
		if n != name || e != expected {
			return nil
		}
		var err error
		once.Do(func() { err = errInjected })
		return err
	})
}

// failAppendAt fails every Append to name at expected.
func (f *faultStore) failAppendAt(name string, expected uint64) {
	f.setAppendFault(func(n string, e uint64, _ [][]byte) error {
		if n == name && e == expected {
			return errInjected
		}
		return nil
	})
}

// onRecord runs fn on every record an Append carries (decoded), before the
// Append reaches the store; fn's error fails the Append.
func (f *faultStore) onRecord(fn func(name string, rec journal.Record) error) {
	f.setAppendFault(func(name string, expected uint64, payloads [][]byte) error {
		for i, p := range payloads {
			rec, err := journal.DecodeRecord(expected+1+uint64(i), p)
			if err != nil {
				continue
			}
			if err := fn(name, rec); err != nil {
				return err
			}
		}
		return nil
	})
}

// setTipHook installs fn, called before every Tip reaches the store.
func (f *faultStore) setTipHook(fn func(name string)) {
	f.mu.Lock()
	f.onTip = fn
	f.mu.Unlock()
}

func (f *faultStore) Tip(ctx context.Context, name string) (uint64, error) {
	f.mu.Lock()
	hook := f.onTip
	f.mu.Unlock()
	if hook != nil {
		hook(name)
	}
	return f.Store.Tip(ctx, name)
}

func (f *faultStore) Append(ctx context.Context, name string, expected uint64, payloads ...[]byte) error {
	f.mu.Lock()
	hook := f.onAppend
	f.ledgers[name] = true
	f.mu.Unlock()
	if hook != nil {
		if err := hook(name, expected, payloads); err != nil {
			return err
		}
	}
	return f.Store.Append(ctx, name, expected, payloads...)
}

// sessionLedgers returns the names of the ledgers of sessions the store
// was asked to append to, or granted a lease of: the journals a test made
// through it, whether or not a catalog entry lists them.
func (f *faultStore) sessionLedgers() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for n := range f.ledgers {
		out = append(out, n)
	}
	for n := range f.grants {
		if strings.HasPrefix(n, "sessions/") {
			out = append(out, n)
		}
	}
	return out
}

func (f *faultStore) Acquire(ctx context.Context, name string) (storage.Lease, error) {
	f.mu.Lock()
	hook := f.onAcquire
	f.mu.Unlock()
	if hook != nil {
		if err := hook(name); err != nil {
			return nil, err
		}
	}
	l, err := f.Store.Acquire(ctx, name)
	if err != nil {
		return nil, err
	}
	return f.track("acquire", name, l), nil
}

// Break forwards to the wrapped store and tracks the grant.
func (f *faultStore) Break(ctx context.Context, name string) (storage.Lease, error) {
	l, err := f.Store.Break(ctx, name)
	if err != nil {
		return nil, err
	}
	return f.track("break", name, l), nil
}

// Probe forwards to the wrapped store, unless a probe fault fails it.
func (f *faultStore) Probe(ctx context.Context, name string) (storage.LeaseStatus, error) {
	f.mu.Lock()
	hook := f.onProbe
	f.mu.Unlock()
	if hook != nil {
		if err := hook(name); err != nil {
			return storage.LeaseStatus{}, err
		}
	}
	return f.Store.Probe(ctx, name)
}

func (f *faultStore) track(op, name string, l storage.Lease) *trackedLease {
	tl := &trackedLease{Lease: l, f: f, name: name}
	f.mu.Lock()
	tl.deaf = f.deafNew && op == "acquire"
	f.grants[name] = append(f.grants[name], tl)
	f.ops = append(f.ops, leaseOp{op: op, name: name, epoch: l.Epoch()})
	f.mu.Unlock()
	return tl
}

// names lists the names granted (Acquire or Break) that start with prefix,
// in the order of their first grant.
func (f *faultStore) names(prefix string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	seen := map[string]bool{}
	for _, op := range f.ops {
		if op.op != "release" && strings.HasPrefix(op.name, prefix) && !seen[op.name] {
			seen[op.name] = true
			out = append(out, op.name)
		}
	}
	return out
}

// latest returns the latest grant of name, nil if none.
func (f *faultStore) latest(name string) *trackedLease {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.grants[name]
	if len(g) == 0 {
		return nil
	}
	return g[len(g)-1]
}

// stats counts the grants of name and how many of them were released
// (first Release call).
func (f *faultStore) stats(name string) (acquired, released int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range f.grants[name] {
		acquired++
		if l.calls > 0 {
			released++
		}
	}
	return acquired, released
}

// releases returns the release operations in order.
func (f *faultStore) releases() []leaseOp {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []leaseOp
	for _, op := range f.ops {
		if op.op == "release" {
			out = append(out, op)
		}
	}
	return out
}

// checkBalanced fails the test unless every grant of every name starting
// with prefix was released.
func (f *faultStore) checkBalanced(t testing.TB, prefix string) {
	t.Helper()
	for _, n := range f.names(prefix) {
		if a, r := f.stats(n); a != r {
			t.Errorf("lease %s: %d grant(s), %d released", n, a, r)
		}
	}
}

// crash makes the latest grant of name vanish as if its holder had died:
// the lease is released in the store, but the holder is not told and its
// own later Release is still counted as its release.
func (f *faultStore) crash(t testing.TB, name string) {
	t.Helper()
	l := f.latest(name)
	if l == nil {
		t.Fatalf("no grant of %s to crash", name)
	}
	if err := l.Lease.Release(context.Background()); err != nil {
		t.Fatalf("crash %s: %v", name, err)
	}
}

// trackedLease records Release calls of the lease it wraps.
type trackedLease struct {
	storage.Lease
	f     *faultStore
	name  string
	calls int  // guarded by f.mu
	deaf  bool // guarded by f.mu: hide the loss from the holder
}

var never = make(chan struct{})

// setDeaf makes the leases Acquire grants from now on hide their loss from
// their holder (or stops doing so), modelling a holder whose loss
// notification is late, e.g. a watchdog that has not fired yet.
func (f *faultStore) setDeaf(deaf bool) {
	f.mu.Lock()
	f.deafNew = deaf
	f.mu.Unlock()
}

// Lost is the wrapped lease's, unless the lease was deafened.
func (l *trackedLease) Lost() <-chan struct{} {
	l.f.mu.Lock()
	deaf := l.deaf
	l.f.mu.Unlock()
	if deaf {
		return never
	}
	return l.Lease.Lost()
}

func (l *trackedLease) Release(ctx context.Context) error {
	l.f.mu.Lock()
	l.calls++
	if l.calls == 1 {
		l.f.ops = append(l.f.ops, leaseOp{op: "release", name: l.name, epoch: l.Lease.Epoch()})
	}
	hook := l.f.onRelease
	l.f.mu.Unlock()
	err := l.Lease.Release(ctx)
	if hook != nil && err == nil {
		err = hook(l.name)
	}
	return err
}

func (l *trackedLease) releaseCalls() int {
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	return l.calls
}

// LostCause forwards the wrapped lease's loss cause.
func (l *trackedLease) LostCause() error {
	l.f.mu.Lock()
	deaf := l.deaf
	l.f.mu.Unlock()
	if deaf {
		return nil
	}
	return storage.LostCause(l.name, l.Lease)
}
