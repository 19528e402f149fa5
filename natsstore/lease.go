package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"looprig/internal/procstart"
	"looprig/rig/storage"
)

// Leases.
//
// Each name has one record in the P-leases bucket, never deleted:
//
//	{"epoch":N,"state":"held"|"expired","pid":..,"host":..,"acquired":..,
//	 "expires":..,"owner":"<presence id>","broken":bool}
//
// A grant reads the record and, if the name is free, writes epoch N+1 with
// state "held" by compare-and-swap on the record's revision (create when
// there is no record): of racing grants exactly one write lands, so epochs
// are unique and strictly increasing, and survive release and crashes
// because the record is never removed. Break writes N+1 the same way
// whatever the record says.
//
// The holder renews the record (same epoch, expires = now + TTL) every
// third of the TTL. It measures its own deadline on the monotonic clock from
// the moment it sent its last confirmed write, minus a margin; when that
// passes without a confirmed renewal its Lost closes (self-fencing). Since
// the expiry it wrote is that send time + TTL, the holder has always fenced
// itself before the record expires. A failed compare-and-swap on renewal
// means another grant replaced the record: Lost closes at once.
//
// Release writes state "expired" with the epoch kept, by compare-and-swap,
// only while the record still holds the lease's own epoch: a release can
// never free a later holder.
//
// A name is free when its record is "expired", or "held" with an expiry
// more than the allowed clock skew in the past, or — with presence, the
// default — "held" by a Store that no longer holds it: every Store answers
// on P.presence.<id> whether it holds a (name, epoch). A holder whose
// connection is gone (crashed process, closed Store) gets no responders
// from the server, and is free at once; one that does not answer in time
// counts as holding until its expiry. Because of that, a Store with
// presence treats any disconnect from the server as the loss of all its
// leases (another Store may already have taken them), and a restarted or
// unreachable server costs every holder its leases. WithoutPresence
// trades fast crash detection for leases that ride out disconnects shorter
// than the TTL.
//
// A grant (or Break) that replaces a live-looking record tells its former
// owner through the presence subject, so a broken holder notices at once
// rather than at its next renewal.

const (
	stateHeld    = "held"
	stateExpired = "expired"
)

type leaseRecord struct {
	Epoch    uint64    `json:"epoch"`
	State    string    `json:"state"`
	PID      int       `json:"pid"`
	Host     string    `json:"host"`
	Acquired time.Time `json:"acquired"`
	Expires  time.Time `json:"expires"`
	Owner    string    `json:"owner"`
	Broken   bool      `json:"broken,omitempty"`
	// Started and Boot: storage.Holder's, where known.
	Started uint64 `json:"started,omitempty"`
	Boot    string `json:"boot,omitempty"`
}

func (r *leaseRecord) holder() storage.Holder {
	return storage.Holder{PID: r.PID, Host: r.Host, Acquired: r.Acquired, Started: r.Started, Boot: r.Boot}
}

// readRecord returns name's lease record and its NATS revision; nil when
// the name was never granted.
func (s *Store) readRecord(ctx context.Context, name string) (*leaseRecord, uint64, error) {
	e, err := s.leaseKV.Get(ctx, encodeName(name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, ctxErr(ctx, fmt.Errorf("natsstore: read lease %q: %w", name, err))
	}
	r, err := parseRecord(name, e.Value())
	if err != nil {
		return nil, 0, err
	}
	return r, e.Revision(), nil
}

func parseRecord(name string, v []byte) (*leaseRecord, error) {
	var r leaseRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, &storage.CorruptError{Name: name, Offset: -1, Reason: "unreadable lease record", Err: err}
	}
	if r.Epoch == 0 || (r.State != stateHeld && r.State != stateExpired) {
		return nil, &storage.CorruptError{Name: name, Offset: -1, Reason: fmt.Sprintf("lease record with epoch %d and state %q", r.Epoch, r.State)}
	}
	return &r, nil
}

// live reports whether r still holds name.
func (s *Store) live(ctx context.Context, name string, r *leaseRecord) bool {
	if r.State != stateHeld {
		return false
	}
	if time.Now().After(r.Expires.Add(s.o.skew)) {
		return false
	}
	if !s.o.presence {
		return true
	}
	if r.Owner == s.id {
		return s.holdsLocal(name, r.Epoch)
	}
	if r.Owner == "" {
		return true
	}
	// A holder that has just died may still have a subscription the server
	// has not dropped yet: ask again before concluding anything.
	wait := min(max(s.o.leaseTTL/8, 100*time.Millisecond), 2*time.Second)
	for _, d := range []time.Duration{wait / 4, wait / 2, wait} {
		rctx, cancel := context.WithTimeout(ctx, d)
		reply, err := s.nc.RequestWithContext(rctx, s.presenceSubj+r.Owner, fmt.Appendf(nil, "probe %d %s", r.Epoch, name))
		cancel()
		switch {
		case err == nil:
			return string(reply.Data) == "held"
		case errors.Is(err, nats.ErrNoResponders):
			return false
		case ctx.Err() != nil:
			return true
		}
	}
	return true // silent: a hung holder holds until its expiry
}

// notifyRevoked tells the former owner of name that a later grant replaced
// its epoch, so that it re-reads the record now.
func (s *Store) notifyRevoked(owner, name string, epoch uint64) {
	if owner == "" {
		return
	}
	if owner == s.id {
		s.wakeLocal(name)
		return
	}
	_ = s.nc.Publish(s.presenceSubj+owner, fmt.Appendf(nil, "revoke %d %s", epoch, name))
}

// onPresence answers probes of this Store's leases and takes revocations.
func (s *Store) onPresence(m *nats.Msg) {
	op, rest, _ := strings.Cut(string(m.Data), " ")
	epochText, name, _ := strings.Cut(rest, " ")
	epoch, err := strconv.ParseUint(epochText, 10, 64)
	if err != nil {
		return
	}
	switch op {
	case "probe":
		s.mu.Lock()
		frozen := s.hooks.frozen
		s.mu.Unlock()
		if frozen || m.Reply == "" {
			return
		}
		answer := "free"
		if s.holdsLocal(name, epoch) {
			answer = "held"
		}
		_ = m.Respond([]byte(answer))
	case "revoke":
		s.wakeLocal(name)
	}
}

func (s *Store) holdsLocal(name string, epoch uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.held[name] {
		if l.epoch == epoch && !l.isLost() {
			return true
		}
	}
	return false
}

func (s *Store) wakeLocal(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.held[name] {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

func (s *Store) register(l *lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("natsstore: store is closed")
	}
	s.held[l.name] = append(s.held[l.name], l)
	return nil
}

func (s *Store) unregister(l *lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ls := s.held[l.name]
	for i, x := range ls {
		if x == l {
			ls = append(ls[:i], ls[i+1:]...)
			break
		}
	}
	if len(ls) == 0 {
		delete(s.held, l.name)
	} else {
		s.held[l.name] = ls
	}
}

// onDisconnect: with presence, a Store that lost its connection may
// already have been judged dead by others, so all its leases are lost.
func (s *Store) onDisconnect() {
	if !s.o.presence {
		return
	}
	s.mu.Lock()
	var all []*lease
	for _, ls := range s.held {
		all = append(all, ls...)
	}
	s.mu.Unlock()
	for _, l := range all {
		l.lose(storage.LossUnknown, 0)
	}
}

// Acquire implements storage.Leaser.
func (s *Store) Acquire(ctx context.Context, name string) (storage.Lease, error) {
	return s.grant(ctx, name, false)
}

// Break implements storage.Breaker: name is granted at the next epoch
// whatever its record says; the former holder loses its lease (at once
// when it can be told, else at its next renewal).
func (s *Store) Break(ctx context.Context, name string) (storage.Lease, error) {
	return s.grant(ctx, name, true)
}

func (s *Store) grant(ctx context.Context, name string, force bool) (storage.Lease, error) {
	octx, cancel, err := s.nameOpCtx(ctx, name)
	if err != nil {
		return nil, err
	}
	defer cancel()
	key := encodeName(name)
	for range casRetries {
		prev, rev, err := s.readRecord(octx, name)
		if err != nil {
			return nil, err
		}
		if !force && prev != nil && s.live(octx, name, prev) {
			return nil, &storage.LeaseHeldError{Name: name, HolderEpoch: prev.Epoch, Holder: prev.holder()}
		}
		epoch := uint64(1)
		if prev != nil {
			epoch = prev.Epoch + 1
		}
		l := &lease{
			s: s, name: name, key: key, epoch: epoch,
			lost: make(chan struct{}), wake: make(chan struct{}, 1), done: make(chan struct{}),
		}
		l.ctx, l.cancel = context.WithCancel(context.Background())
		// Registered before the write, so that a probe of this epoch never
		// hears "free" from us while the write is in flight.
		if err := s.register(l); err != nil {
			return nil, err
		}
		sent := time.Now()
		l.rec = leaseRecord{
			Epoch: epoch, State: stateHeld, PID: s.o.pid, Host: s.o.host,
			Acquired: sent.UTC(), Expires: sent.Add(s.o.leaseTTL).UTC(), Owner: s.id, Broken: force,
		}
		if s.o.pid == os.Getpid() {
			self := procstart.Self()
			l.rec.Started, l.rec.Boot = self.Ticks, self.Boot
		}
		val, _ := json.Marshal(&l.rec)
		var newRev uint64
		if prev == nil {
			newRev, err = s.leaseKV.Create(octx, key, val)
		} else {
			newRev, err = s.leaseKV.Update(octx, key, val, rev)
		}
		if err != nil {
			l.cancel()
			close(l.done) // never ran
			s.unregister(l)
			if isCASFailure(err) {
				continue // another grant or a renewal came first: look again
			}
			return nil, ctxErr(ctx, fmt.Errorf("natsstore: acquire %q: %w", name, err))
		}
		l.rev = newRev
		go l.run(sent)
		if prev != nil && prev.State == stateHeld {
			s.notifyRevoked(prev.Owner, name, prev.Epoch)
		}
		return l, nil
	}
	return nil, fmt.Errorf("natsstore: acquire %q: gave up after %d concurrent changes", name, casRetries)
}

// Probe implements storage.LeaseProber. It only reads: a probe never
// makes an Acquire fail.
func (s *Store) Probe(ctx context.Context, name string) (storage.LeaseStatus, error) {
	octx, cancel, err := s.nameOpCtx(ctx, name)
	if err != nil {
		return storage.LeaseStatus{}, err
	}
	defer cancel()
	r, _, err := s.readRecord(octx, name)
	if err != nil || r == nil {
		return storage.LeaseStatus{Name: name}, err
	}
	return storage.LeaseStatus{Name: name, Held: s.live(octx, name, r), Epoch: r.Epoch, Holder: r.holder()}, nil
}

// ProbeMany probes many names at once (rig.ListSessions uses it): for a
// few names one Probe each, for many one scan of the lease bucket (a
// single consumer streaming every record) instead of a read per name.
// Presence is then asked, concurrently, only of records that look held.
// A vouch is not asked: presence is the server's word, not a guess.
func (s *Store) ProbeMany(ctx context.Context, names []string, _ ...storage.ProbeOption) ([]storage.LeaseStatus, error) {
	for _, n := range names {
		if err := storage.ValidateName(n); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]storage.LeaseStatus, len(names))
	errs := make([]error, len(names))
	parallel := func(fn func(i int)) {
		var wg sync.WaitGroup
		next := make(chan int)
		for range min(len(names), 16) {
			wg.Go(func() {
				for i := range next {
					fn(i)
				}
			})
		}
		for i := range names {
			next <- i
		}
		close(next)
		wg.Wait()
	}
	if len(names) <= 32 {
		parallel(func(i int) { out[i], errs[i] = s.Probe(ctx, names[i]) })
		return out, errors.Join(errs...)
	}
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	values, err := s.scanLeases(octx)
	if err != nil {
		return nil, err
	}
	recs := make([]*leaseRecord, len(names))
	for i, n := range names {
		out[i].Name = n
		v, ok := values[encodeName(n)]
		if !ok {
			continue
		}
		r, err := parseRecord(n, v)
		if err != nil {
			errs[i] = err
			continue
		}
		recs[i] = r
		out[i].Epoch, out[i].Holder = r.Epoch, r.holder()
	}
	parallel(func(i int) {
		if recs[i] != nil && recs[i].State == stateHeld {
			out[i].Held = s.live(octx, names[i], recs[i])
		}
	})
	return out, errors.Join(errs...)
}

// scanLeases reads every lease record: encoded key → value.
func (s *Store) scanLeases(ctx context.Context) (map[string][]byte, error) {
	w, err := s.leaseKV.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, ctxErr(ctx, fmt.Errorf("natsstore: scan leases: %w", err))
	}
	defer w.Stop()
	out := map[string][]byte{}
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, ctxErr(ctx, errors.New("natsstore: scan leases: the scan stopped early"))
			}
			if e == nil {
				return out, nil
			}
			out[e.Key()] = e.Value()
		case <-ctx.Done():
			return nil, ctxErr(ctx, fmt.Errorf("natsstore: scan leases: %w", ctx.Err()))
		}
	}
}

// lease is one grant.
type lease struct {
	s     *Store
	name  string
	key   string
	epoch uint64
	lost  chan struct{}
	wake  chan struct{} // re-read the record now (a revocation)
	done  chan struct{} // closed when run returns
	// ctx is cancelled by Release and Close: it stops the heartbeat and
	// any renewal in flight.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	cause    *storage.LeaseLostError
	rev      uint64      // NATS revision of our last write
	rec      leaseRecord // what we last wrote
	released bool        // Release found the record no longer ours, or wrote "expired"
}

func (l *lease) Epoch() uint64         { return l.epoch }
func (l *lease) Lost() <-chan struct{} { return l.lost }

// LostCause implements storage.LossReporter.
func (l *lease) LostCause() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cause == nil {
		return nil
	}
	c := *l.cause
	return &c
}

func (l *lease) isLost() bool {
	select {
	case <-l.lost:
		return true
	default:
		return false
	}
}

// lose closes Lost once, with the first cause.
func (l *lease) lose(reason storage.LossReason, newEpoch uint64) {
	l.mu.Lock()
	if l.cause != nil {
		l.mu.Unlock()
		return
	}
	l.cause = &storage.LeaseLostError{Name: l.name, Epoch: l.epoch, Reason: reason, NewEpoch: newEpoch}
	close(l.lost)
	l.mu.Unlock()
	l.s.unregister(l)
}

func (l *lease) stopHeartbeat() {
	l.cancel()
	<-l.done
}

// run is the lease's heartbeat: renewals every TTL/3, the self-fence at
// the deadline, and re-reads when woken.
func (l *lease) run(sent time.Time) {
	defer close(l.done)
	s := l.s
	ttl := s.o.leaseTTL
	margin := min(ttl/10, 250*time.Millisecond)
	interval := ttl / 3
	retry := max(ttl/20, 5*time.Millisecond)
	deadline := sent.Add(ttl - margin)
	renew := time.NewTimer(interval)
	defer renew.Stop()
	fence := time.NewTimer(time.Until(deadline))
	defer fence.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-l.lost:
			return
		case <-fence.C:
			l.lose(storage.LossUnknown, 0) // renewal not confirmed in time
			return
		case <-l.wake:
			l.check()
		case <-renew.C:
			s.mu.Lock()
			frozen := s.hooks.frozen
			s.mu.Unlock()
			if frozen {
				renew.Reset(interval)
				continue
			}
			t := time.Now()
			switch l.renew(t, deadline) {
			case renewed:
				deadline = t.Add(ttl - margin)
				fence.Reset(time.Until(deadline))
				renew.Reset(interval)
			case renewAgain:
				renew.Reset(0)
			case renewFailed:
				renew.Reset(retry)
			case renewLost:
				return
			}
		}
	}
}

type renewResult int

const (
	renewed renewResult = iota
	renewAgain
	renewFailed
	renewLost
)

func (l *lease) renew(sent, deadline time.Time) renewResult {
	s := l.s
	ctx, cancel := context.WithDeadline(l.ctx, deadline)
	defer cancel()
	ctx, cancel2 := context.WithTimeout(ctx, s.o.timeout)
	defer cancel2()
	l.mu.Lock()
	rec, rev := l.rec, l.rev
	l.mu.Unlock()
	rec.Expires = sent.Add(s.o.leaseTTL).UTC()
	val, _ := json.Marshal(&rec)
	newRev, err := s.leaseKV.Update(ctx, l.key, val, rev)
	switch {
	case err == nil:
		l.mu.Lock()
		l.rec, l.rev = rec, newRev
		l.mu.Unlock()
		return renewed
	case isCASFailure(err):
		if l.check() {
			return renewAgain // our own earlier write had landed: adopted
		}
		return renewLost
	default:
		return renewFailed
	}
}

// check re-reads the record: a later epoch means the lease is lost. It
// reports whether the lease is still ours (adopting the record's revision
// when our own write is there).
func (l *lease) check() bool {
	s := l.s
	ctx, cancel := context.WithTimeout(l.ctx, s.o.timeout)
	defer cancel()
	r, rev, err := s.readRecord(ctx, l.name)
	if err != nil {
		return !l.isLost() // cannot tell: renewals and the fence decide
	}
	switch {
	case r == nil || r.Epoch < l.epoch:
		l.lose(storage.LossUnknown, 0)
	case r.Epoch > l.epoch:
		reason := storage.LossEpochAdvanced
		if r.Broken && r.Epoch == l.epoch+1 {
			reason = storage.LossReplaced
		}
		l.lose(reason, r.Epoch)
	case r.State == stateHeld && r.Owner == s.id:
		l.mu.Lock()
		if rev > l.rev {
			l.rev, l.rec = rev, *r
		}
		l.mu.Unlock()
		return !l.isLost()
	default:
		l.lose(storage.LossUnknown, 0)
	}
	return false
}

// Release implements storage.Lease: the heartbeat stops, Lost closes, and
// the record goes to state "expired" (epoch kept) if it still holds this
// lease's epoch. Idempotent; works after loss; never frees a later grant.
func (l *lease) Release(ctx context.Context) error {
	l.stopHeartbeat()
	l.lose(storage.LossReleased, 0)
	l.mu.Lock()
	done := l.released
	l.mu.Unlock()
	if done {
		return nil
	}
	s := l.s
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	for range casRetries {
		r, rev, err := s.readRecord(octx, l.name)
		if err != nil {
			return err
		}
		if r == nil || r.Epoch != l.epoch || r.State != stateHeld {
			break // a later grant (or nobody) holds it: nothing of ours to free
		}
		nr := *r
		nr.State, nr.Expires = stateExpired, time.Now().UTC()
		val, _ := json.Marshal(&nr)
		if _, err = s.leaseKV.Update(octx, l.key, val, rev); err == nil {
			break
		}
		if !isCASFailure(err) {
			return ctxErr(ctx, fmt.Errorf("natsstore: release %q: %w", l.name, err))
		}
	}
	l.mu.Lock()
	l.released = true
	l.mu.Unlock()
	return nil
}
