package fsstore

import (
	"context"

	"looprig/fsstore/internal/lease"
	"looprig/rig/storage"
)

// Acquire implements storage.Leaser: flock on leases/<name>.lock, then the
// next epoch written to leases/<name>.epoch. A held name is refused at once
// with *storage.LeaseHeldError; a crashed holder's lock is gone with its
// process, so the next Acquire succeeds without waiting.
func (s *Store) Acquire(ctx context.Context, name string) (storage.Lease, error) {
	if err := storage.ValidateName(name); err != nil {
		return nil, err
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	lockPath, epochPath := s.leasePaths(name)
	l, err := s.leases.Acquire(ctx, name, lockPath, epochPath)
	if err != nil {
		return nil, err
	}
	s.track(name, l)
	return l, nil
}

// Break takes name by force from a wedged holder (`looprig lease break`):
// the lock file is replaced, so the old holder's watchdog reports the loss,
// and the caller holds name at the next epoch. The old holder's next
// ledger append conflicts once the new holder has appended its fence.
func (s *Store) Break(ctx context.Context, name string) (storage.Lease, error) {
	if err := storage.ValidateName(name); err != nil {
		return nil, err
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	lockPath, epochPath := s.leasePaths(name)
	l, err := s.leases.Break(ctx, name, lockPath, epochPath)
	if err != nil {
		return nil, err
	}
	s.track(name, l)
	return l, nil
}

// Probe implements storage.LeaseProber without taking any lock.
func (s *Store) Probe(ctx context.Context, name string) (storage.LeaseStatus, error) {
	if err := storage.ValidateName(name); err != nil {
		return storage.LeaseStatus{}, err
	}
	if err := ctxErr(ctx); err != nil {
		return storage.LeaseStatus{}, err
	}
	lockPath, epochPath := s.leasePaths(name)
	return s.leases.Probe(ctx, name, lockPath, epochPath)
}

// ProbeMany probes many names at once. On Linux it reads the kernel's lock
// table once: listing thousands of sessions costs one /proc/locks read,
// not thousands, and none when a vouch (storage.WithVouch) answers for
// every name with a lock file (its holder serves it, or is gone). On Darwin it asks fcntl(F_GETLK) of each lock file.
func (s *Store) ProbeMany(ctx context.Context, names []string, opts ...storage.ProbeOption) ([]storage.LeaseStatus, error) {
	reqs := make([]lease.ProbeRequest, len(names))
	for i, name := range names {
		if err := storage.ValidateName(name); err != nil {
			return nil, err
		}
		lockPath, epochPath := s.leasePaths(name)
		reqs[i] = lease.ProbeRequest{Name: name, LockPath: lockPath, EpochPath: epochPath}
	}
	return s.leases.ProbeMany(ctx, reqs, storage.NewProbeOptions(opts).Vouch)
}

// track remembers this Store's live grant of name, whose epoch stamps the
// ledger frames this Store writes under that name.
func (s *Store) track(name string, l *lease.Lease) {
	s.mu.Lock()
	s.held[name] = l
	s.mu.Unlock()
}

// writerEpoch is the epoch of this Store's live grant of name, 0 if none.
func (s *Store) writerEpoch(name string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.held[name]
	if l == nil {
		return 0
	}
	select {
	case <-l.Lost():
		delete(s.held, name)
		return 0
	default:
		return l.Epoch()
	}
}
