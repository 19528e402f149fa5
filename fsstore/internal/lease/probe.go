package lease

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"looprig/rig/storage"
)

// ErrProbeUnsupported is wrapped by the errors of Probe and LockTableStamp
// when the kernel's lock table cannot be read (Linux: /proc/locks is not
// mounted; Darwin has none, so there LockTableStamp always fails with it).
// They then refuse to answer rather than guess.
var ErrProbeUnsupported = errors.New("the kernel's lock table (/proc/locks) is unavailable, so whether a lease is held cannot be told without taking its lock")

// ProbeRequest names one lease for ProbeMany.
type ProbeRequest struct {
	Name, LockPath, EpochPath string
}

// Probe reports whether the lease is held and its latest epoch and holder,
// without taking any lock, so it can never make a concurrent Acquire fail.
// See ProbeMany.
func (m *Manager) Probe(ctx context.Context, name, lockPath, epochPath string) (storage.LeaseStatus, error) {
	st, err := m.ProbeMany(ctx, []ProbeRequest{{Name: name, LockPath: lockPath, EpochPath: epochPath}}, nil)
	if err != nil {
		return storage.LeaseStatus{}, err
	}
	return st[0], nil
}

// ProbeMany probes many leases.
//
// The epoch and holder come from the epoch file (absent: epoch 0). Held is
// asked of the kernel without taking any lock, so a probe cannot make a
// concurrent Acquire fail, and without writing anything:
//
//   - Linux: from /proc/locks, read once for all the names and only if at
//     least one lock file exists: the name is held when a granted (not
//     waiting) FLOCK entry names the inode of the lock file, on its device
//     (probe_linux.go). If it cannot be read the error wraps
//     ErrProbeUnsupported.
//   - Darwin: with fcntl(F_GETLK) on a read-only descriptor of each lock
//     file: there flock(2) and fcntl locks share one lock list per file,
//     so F_GETLK reports a flock held through any other open file
//     description, this process's own included (probe_darwin.go).
//
// A lease whose lock file exists and whose epoch file names a holder is
// first offered to vouch, when set (storage.ProbeOptions.Vouch): one it
// vouches for is held (storage.VouchHeld) or free (storage.VouchGone: its
// holder's process is gone, and its lock with it), and the kernel is not
// asked about it. On Linux a listing whose leases with a lock file are all
// vouched for then reads no /proc/locks,
// whose first read in a while waits for an RCU grace period (the kernel
// takes its lock list's percpu rwsem for writing): about 10 ms.
//
// An unreadable epoch file fails the whole call with *storage.CorruptError.
//
// The result is a snapshot: Held and Epoch are read at slightly different
// instants and may straddle a concurrent grant.
func (m *Manager) ProbeMany(ctx context.Context, reqs []ProbeRequest, vouch func(context.Context, string, storage.Holder) storage.Vouched) ([]storage.LeaseStatus, error) {
	out := make([]storage.LeaseStatus, len(reqs))
	var pend []pendingProbe
	want := make(map[uint64]struct{})
	files := readProbeFiles(ctx, reqs) // in parallel for many
	for i, r := range reqs {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i].Name = r.Name
		n, h, err := files[i].epoch, files[i].holder, files[i].epochErr
		if err != nil {
			return nil, wrapProbe(r.Name, err)
		}
		out[i].Epoch, out[i].Holder = n, h
		st := files[i].lock
		if err := files[i].lockErr; err != nil {
			if err == unix.ENOENT {
				continue // never locked
			}
			return nil, fmt.Errorf("probe lease %q: %w", r.Name, &fs.PathError{Op: "lstat", Path: r.LockPath, Err: err})
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue // Acquire refuses to lock such a path; nobody holds it
		}
		pend = append(pend, pendingProbe{i: i, dev: uint64(st.Dev), ino: uint64(st.Ino), dir: filepath.Dir(r.LockPath)})
		want[uint64(st.Ino)] = struct{}{}
	}
	m.noteLockInodes(want)
	if vouch != nil {
		pend = vouchFor(ctx, reqs, pend, out, vouch)
	}
	if len(pend) > 0 {
		if err := m.probeHeld(ctx, reqs, pend, want, out); err != nil {
			return nil, err
		}
	}
	if w := m.holderWatch(); w != nil {
		w.note(out, m.host)
	}
	return out, nil
}

// holderWatch returns the Manager's watch of holders' deaths, made at the
// first call; nil once the Manager is closed.
func (m *Manager) holderWatch() *holderWatch {
	m.holdersOnce.Do(func() { m.holders = newHolderWatch() })
	return m.holders
}

// HolderStamp counts the deaths of the holders of leases a probe of this
// Manager saw held (a pid's process descriptor, on Linux), without reading
// the lock table. ok is false when it cannot tell: no process descriptors
// here, or a held lease whose holder it could not watch (see
// holders_linux.go); LockTableStamp then stands in.
func (m *Manager) HolderStamp() (deaths uint64, ok bool) {
	w := m.holderWatch()
	if w == nil {
		return 0, false
	}
	return w.stamp()
}

// vouchWorkers bounds the vouches asked at once.
const vouchWorkers = 16

// vouchFor asks vouch, concurrently, about each pending lease whose epoch
// file names a holder, marks those it vouches held for held in out, leaves
// those whose holder it says is gone free, and returns the others, still
// pending.
func vouchFor(ctx context.Context, reqs []ProbeRequest, pend []pendingProbe, out []storage.LeaseStatus, vouch func(context.Context, string, storage.Holder) storage.Vouched) []pendingProbe {
	vouched := make([]storage.Vouched, len(pend))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(vouchWorkers, len(pend)) {
		wg.Go(func() {
			for k := range next {
				i := pend[k].i
				vouched[k] = vouch(ctx, reqs[i].Name, out[i].Holder)
			}
		})
	}
	for k, p := range pend {
		if out[p.i].Holder.PID > 0 {
			next <- k
		}
	}
	close(next)
	wg.Wait()
	rest := pend[:0]
	for k, p := range pend {
		switch vouched[k] {
		case storage.VouchHeld:
			out[p.i].Held = true
		case storage.VouchGone:
			// out[p.i].Held stays false: the lock went with its holder.
		default:
			rest = append(rest, p)
		}
	}
	return rest
}

// pendingProbe is a lease of ProbeMany whose lock file exists: reqs[i],
// its lock file's inode (dev, ino) as lstat saw it, in directory dir.
// probeHeld (per platform) sets out[i].Held for each.
type pendingProbe struct {
	i   int
	dev uint64
	ino uint64
	dir string
}

func wrapProbe(name string, err error) error {
	var ce *storage.CorruptError
	if errors.As(err, &ce) {
		return err
	}
	return fmt.Errorf("probe lease %q: %w", name, err)
}

// maxLockInodes bounds the lock files LockTableStamp watches.
const maxLockInodes = 1 << 20

// WatchLockFiles adds the inode numbers of lock files to those
// LockTableStamp watches. Probes add the lock files they see.
func (m *Manager) WatchLockFiles(inodes map[uint64]struct{}) { m.noteLockInodes(inodes) }

// WatchesLockFiles reports whether WatchLockFiles or a probe told the
// Manager which lock files to watch (perhaps none).
func (m *Manager) WatchesLockFiles() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lockInodes != nil
}

// noteLockInodes remembers the inode numbers of lock files a probe saw, for
// LockTableStamp. The set is copied on write: LockTableStamp reads the map
// it took under the lock after letting go of it, so a published map is
// never changed.
func (m *Manager) noteLockInodes(inodes map[uint64]struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lockInodes != nil && containsAll(m.lockInodes, inodes) {
		return
	}
	var next map[uint64]struct{}
	if m.lockInodes == nil || len(m.lockInodes)+len(inodes) > maxLockInodes {
		next = make(map[uint64]struct{}, len(inodes))
	} else {
		next = make(map[uint64]struct{}, len(m.lockInodes)+len(inodes))
		for ino := range m.lockInodes {
			next[ino] = struct{}{}
		}
	}
	for ino := range inodes {
		next[ino] = struct{}{}
	}
	m.lockInodes = next
}

func containsAll(set, sub map[uint64]struct{}) bool {
	for ino := range sub {
		if _, ok := set[ino]; !ok {
			return false
		}
	}
	return true
}
