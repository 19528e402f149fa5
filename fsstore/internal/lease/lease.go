// Package lease implements fsstore's named leases with flock(2) and epoch
// files.
//
// A lease name maps (in the caller) to two paths: a lock file, which is only
// ever a flock target, and an epoch file holding
// {"epoch":N,"pid":..,"host":..,"acquired":..}. A grant is an exclusive flock
// on the inode that the lock path names, plus epoch N+1 written durably to
// the epoch file. The kernel drops a flock when its holder dies, so a
// crashed holder frees the name at once; the epoch file keeps the fencing
// epoch across releases and crashes.
//
// Lock files are never deleted or rewritten by Acquire or Release. Only
// Break replaces one (rename of a new, already-locked inode over it); the
// old holder then holds a lock on an unlinked inode, which its watchdog
// notices.
//
// Everything here is for one host: flock on network filesystems does not
// exclude other hosts, and the caller is expected to refuse those.
package lease

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofrs/flock"
	"golang.org/x/sys/unix"

	"looprig/fsstore/internal/fsutil"
	"looprig/internal/procstart"
	"looprig/rig/storage"
)

// DefaultWatchdog is the loss check period when Options.Watchdog is 0.
const DefaultWatchdog = 500 * time.Millisecond

// maxReplacedRetries bounds how often Acquire retries when the lock path
// was replaced between its open and its lock.
const maxReplacedRetries = 32

// watchdogGuardWait bounds how long the watchdog waits for the directory
// guard to read the successor's epoch after seeing a replaced lock file.
const watchdogGuardWait = time.Second

// ErrClosed is returned by Acquire and Break on a closed Manager.
var ErrClosed = errors.New("lease manager is closed")

// Options configures a Manager.
type Options struct {
	// Watchdog is the loss check period; DefaultWatchdog if 0.
	Watchdog time.Duration
	// PID and Host identify the holder in epoch files; os.Getpid and
	// os.Hostname if zero.
	PID  int
	Host string
	// Now stamps grants; time.Now if nil.
	Now func() time.Time
	// Changed, if not nil, is called after every change others can see
	// (an epoch file written by a grant or a break, a lock released), so
	// the store can advance its change stamp.
	Changed func()
}

// Manager grants leases and watches them for loss. It is safe for
// concurrent use.
//
// Loss watchdog: one goroutine per Manager checks every live lease of the
// Manager each Watchdog period, and at once when a lease's files change
// (inotify on Linux, on each lease's own lock and epoch files; without an
// inotify instance, dnotify on the bell Break rings: bell.go). Then the
// period is notifiedPoll at least, so an idle holder wakes up seldom, and
// other holders' grants and releases do not wake it. It is started by the
// first grant, exits by itself when no lease is live (so an idle Manager
// owns no goroutine), and is stopped for good by Close.
type Manager struct {
	period  time.Duration
	pid     int
	host    string
	now     func() time.Time
	changed func()

	mu      sync.Mutex
	closed  bool
	running bool
	stop    chan struct{}
	wg      sync.WaitGroup
	live    map[*Lease]struct{}
	// probe is what probes learnt of the lock table (per platform: see
	// probe_linux.go, probe_darwin.go).
	probe probeState
	// lockInodes are the inode numbers of the lock files probes saw, for
	// LockTableStamp.
	lockInodes map[uint64]struct{}
	// notify tells the running watchdog of changes in the directories of
	// the live leases (nil: not available); unwatched is set when a
	// lease's directory could not be watched, so the watchdog polls at its
	// period.
	notify    *notifier
	unwatched bool
	// rounds counts the watchdog's wakeups (tests).
	rounds atomic.Int64
	// holders watches the deaths of the holders probes saw (made at the
	// first probe; holders_linux.go).
	holdersOnce sync.Once
	holders     *holderWatch
}

// notifiedPoll is the watchdog's period while change notification covers
// every live lease: a check after an event catches a loss at once, the
// period only what notification could miss.
//
// Only what notification cannot see needs it (a parent of a lease's
// directory renamed; a network filesystem, whose changes on other
// machines inotify misses, is refused by the store): each idle host wakes
// for it, so it is long. At a minute, the wake (this check, the hand-over
// poll's and the runtime's around them, about 0.4 ms of CPU) cost 1,000
// idle hosts 0.7% of a core together; at ten minutes, under 0.1%.
const notifiedPoll = 10 * time.Minute

// NewManager returns a Manager with the given options.
func NewManager(opts Options) *Manager {
	m := &Manager{
		period:  opts.Watchdog,
		pid:     opts.PID,
		host:    opts.Host,
		now:     opts.Now,
		changed: opts.Changed,
		stop:    make(chan struct{}),
		live:    make(map[*Lease]struct{}),
		probe:   newProbeState(),
	}
	if m.period <= 0 {
		m.period = DefaultWatchdog
	}
	if m.pid == 0 {
		m.pid = os.Getpid()
	}
	if m.host == "" {
		m.host, _ = os.Hostname()
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.changed == nil {
		m.changed = func() {}
	}
	return m
}

// Close stops the watchdog and makes later Acquire and Break calls fail
// with ErrClosed. Leases stay held until released; after Close their loss
// is no longer detected. Close is idempotent.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.stop)
	m.mu.Unlock()
	m.wg.Wait()
	m.holdersOnce.Do(func() {}) // none made from now on
	if m.holders != nil {
		m.holders.close()
	}
	return nil
}

func (m *Manager) holder() storage.Holder {
	h := storage.Holder{PID: m.pid, Host: m.host, Acquired: m.now().UTC()}
	if m.pid == os.Getpid() {
		self := procstart.Self()
		h.Started, h.Boot = self.Ticks, self.Boot
	}
	return h
}

// Acquire takes the lease name, whose lock and epoch files are lockPath and
// epochPath; missing parent directories are created 0700. It never waits
// for a holder: a held name is refused with *storage.LeaseHeldError
// carrying the holder's epoch and identity from the epoch file. An epoch
// file that cannot be parsed fails the Acquire with *storage.CorruptError
// and is left as it is.
func (m *Manager) Acquire(ctx context.Context, name, lockPath, epochPath string) (*Lease, error) {
	if err := m.checkOpen(); err != nil {
		return nil, err
	}
	if err := prepareDirs(lockPath, epochPath); err != nil {
		return nil, fmt.Errorf("acquire lease %q: %w", name, err)
	}
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if attempt == maxReplacedRetries {
			return nil, fmt.Errorf("acquire lease %q: lock file %s was replaced %d times in a row while locking it", name, lockPath, attempt)
		}
		// A fresh descriptor per attempt: never shared between attempts
		// or leases.
		fl, held, err := tryLockFile(lockPath, lockFlags)
		if err != nil && (errors.Is(err, unix.EROFS) || errors.Is(err, os.ErrPermission)) {
			// A read-only store: say so, not only the system's word.
			err = &storage.NotWritableError{Name: name, Path: lockPath, Err: err}
		}
		if err != nil {
			return nil, fmt.Errorf("acquire lease %q: %w", name, err)
		}
		if held {
			return nil, heldError(name, epochPath)
		}
		// The path may have been replaced (by Break) between our open and
		// our lock: then we locked an orphan inode. Cheap check before the
		// guard; it is repeated under the guard.
		if _, same, err := pathNamesLock(fl, lockPath); err != nil || !same {
			fl.Close()
			if err != nil {
				return nil, fmt.Errorf("acquire lease %q: %w", name, err)
			}
			continue
		}
		l, retry, err := m.grant(ctx, name, lockPath, epochPath, fl)
		if retry {
			continue
		}
		return l, err
	}
}

// grant turns a locked file into a lease: under the directory guard it
// re-verifies the inode, reads epoch N and durably writes N+1. On any
// failure, or when it reports retry, fl is closed (dropping the lock).
func (m *Manager) grant(ctx context.Context, name, lockPath, epochPath string, fl *flock.Flock) (_ *Lease, retry bool, err error) {
	defer func() {
		if err != nil || retry {
			fl.Close()
		}
	}()
	g, err := lockDir(ctx, filepath.Dir(lockPath))
	if err != nil {
		return nil, false, fmt.Errorf("acquire lease %q: %w", name, err)
	}
	defer g.unlock()
	id, same, err := pathNamesLock(fl, lockPath)
	if err != nil {
		return nil, false, fmt.Errorf("acquire lease %q: %w", name, err)
	}
	if !same {
		return nil, true, nil
	}
	n, _, err := readEpochFile(name, epochPath)
	if err != nil {
		return nil, false, wrapAcquire(name, err)
	}
	next, err := nextEpoch(name, epochPath, n)
	if err != nil {
		return nil, false, err
	}
	h := m.holder()
	if err := writeEpochFile(epochPath, g.dirFDFor(epochPath), next, h); err != nil {
		return nil, false, fmt.Errorf("acquire lease %q: write epoch file: %w", name, err)
	}
	m.changed()
	// A holder still listening (its lock file was removed by hand) has
	// lost the lease to this grant: its bell tells it (bell.go).
	ringBell(lockPath)
	l := m.newLease(name, lockPath, epochPath, fl, id, next, h)
	if err := m.register(l); err != nil {
		return nil, false, err // the deferred close drops the lock
	}
	return l, false, nil
}

// Break takes the lease name by force, whether it is held, free or was
// never used: it creates a new lock file next to lockPath, locks it, and
// under the directory guard renames it over lockPath and writes the next
// epoch. A previous holder keeps a lock on the now unlinked inode; its
// watchdog reports LossReplaced, told at once by the lease's bell
// (bell.go) where it watches that. The epoch file is read before anything
// is replaced, so a corrupt epoch file fails Break without side effects.
//
// If writing the new epoch fails after the rename, the old holder has still
// lost the lock file (its watchdog fires) but no new epoch was granted;
// Break returns the error and holds nothing.
func (m *Manager) Break(ctx context.Context, name, lockPath, epochPath string) (_ *Lease, err error) {
	if err := m.checkOpen(); err != nil {
		return nil, err
	}
	if err := prepareDirs(lockPath, epochPath); err != nil {
		return nil, fmt.Errorf("break lease %q: %w", name, err)
	}
	tmpPath, fl, err := createTempLockFile(lockPath)
	if err != nil {
		return nil, fmt.Errorf("break lease %q: %w", name, err)
	}
	renamed := false
	defer func() {
		if err != nil {
			if !renamed {
				unix.Unlink(tmpPath)
			}
			fl.Close()
		}
	}()
	g, err := lockDir(ctx, filepath.Dir(lockPath))
	if err != nil {
		return nil, fmt.Errorf("break lease %q: %w", name, err)
	}
	defer g.unlock()
	var st unix.Stat_t
	if err := unix.Lstat(lockPath, &st); err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("break lease %q: %s: %w", name, lockPath, ErrUnsafeFile)
	} else if err != nil && err != unix.ENOENT {
		return nil, fmt.Errorf("break lease %q: lstat %s: %w", name, lockPath, err)
	}
	n, _, err := readEpochFile(name, epochPath)
	if err != nil {
		return nil, wrapBreak(name, err)
	}
	next, err := nextEpoch(name, epochPath, n)
	if err != nil {
		return nil, err
	}
	if err := os.Rename(tmpPath, lockPath); err != nil {
		return nil, fmt.Errorf("break lease %q: %w", name, err)
	}
	renamed = true
	// The old holder has lost the lock file: whatever follows, its bell
	// rings once this returns (after the new epoch, when it is written).
	defer ringBell(lockPath)
	if err := fsutil.Fsync(g.fd, g.dir); err != nil {
		return nil, fmt.Errorf("break lease %q: %w", name, err)
	}
	h := m.holder()
	if err := writeEpochFile(epochPath, g.dirFDFor(epochPath), next, h); err != nil {
		return nil, fmt.Errorf("break lease %q: lock file replaced but epoch not advanced: %w", name, err)
	}
	m.changed()
	fst, err := statLock(fl)
	if err != nil {
		return nil, fmt.Errorf("break lease %q: fstat: %w", name, err)
	}
	l := m.newLease(name, lockPath, epochPath, fl, idOfSys(fst), next, h)
	if err := m.register(l); err != nil {
		return nil, err // the deferred close drops the lock
	}
	return l, nil
}

func (g *dirGuard) dirFDFor(path string) int {
	if filepath.Dir(path) == g.dir {
		return g.fd
	}
	return -1
}

func prepareDirs(lockPath, epochPath string) error {
	if err := mkdirAll(filepath.Dir(lockPath)); err != nil {
		return err
	}
	if d := filepath.Dir(epochPath); d != filepath.Dir(lockPath) {
		return mkdirAll(d)
	}
	return nil
}

func heldError(name, epochPath string) error {
	// If the epoch file is unreadable the name is still held: report that,
	// with an unknown epoch (0). The corruption surfaces on the next grant.
	n, h, err := readEpochFile(name, epochPath)
	if err != nil {
		return &storage.LeaseHeldError{Name: name}
	}
	return &storage.LeaseHeldError{Name: name, HolderEpoch: n, Holder: h}
}

func wrapAcquire(name string, err error) error {
	var ce *storage.CorruptError
	if errors.As(err, &ce) {
		return err
	}
	return fmt.Errorf("acquire lease %q: %w", name, err)
}

func wrapBreak(name string, err error) error {
	var ce *storage.CorruptError
	if errors.As(err, &ce) {
		return err
	}
	return fmt.Errorf("break lease %q: %w", name, err)
}

func (m *Manager) checkOpen() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	return nil
}

// register adds l to the watched set and starts the watchdog if needed.
func (m *Manager) register(l *Lease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.live[l] = struct{}{}
	if !m.running {
		m.running = true
		m.notify, m.unwatched = newNotifier(), false
		m.wg.Add(1)
		go m.watch(m.notify)
	}
	if m.notify == nil || !m.notify.watch(l.lockPath, l.epochPath) {
		m.unwatched = true
	}
	if m.notify != nil {
		// A loss between the grant and the watches made no event: check
		// once now.
		m.notify.poke()
	}
	return nil
}

// pollPeriod is the watchdog's period now. The caller holds m.mu.
func (m *Manager) pollPeriodLocked() time.Duration {
	if m.notify != nil && !m.unwatched {
		return max(m.period, notifiedPoll)
	}
	return m.period
}

func (m *Manager) unregister(l *Lease) {
	m.mu.Lock()
	delete(m.live, l)
	if len(m.live) == 0 && m.notify != nil {
		// The last lease went: the watchdog's next round ends it, now
		// rather than at its poll period (a release makes no event on the
		// files it watches).
		m.notify.poke()
	}
	m.mu.Unlock()
}

func (m *Manager) watch(n *notifier) {
	defer m.wg.Done()
	var changes <-chan struct{}
	if n != nil {
		defer n.close()
		changes = n.changes
	}
	m.mu.Lock()
	t := time.NewTimer(m.pollPeriodLocked())
	m.mu.Unlock()
	defer t.Stop()
	var coalesce time.Duration
	var settle *time.Timer // reused: an asleep host's wakes allocate nothing here
	if n != nil {
		coalesce = n.coalesce()
	}
	if coalesce > 0 {
		settle = time.NewTimer(coalesce)
		settle.Stop()
		defer settle.Stop()
	}
	var batch []*Lease
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		case <-changes:
			if settle != nil {
				// The signals that follow this one within coalesce
				// are one check.
				settle.Reset(coalesce)
				select {
				case <-m.stop:
					return
				case <-settle.C:
				}
				select {
				case <-changes:
				default:
				}
			}
		}
		m.rounds.Add(1)
		m.mu.Lock()
		if len(m.live) == 0 {
			m.running, m.notify = false, nil
			m.mu.Unlock()
			return
		}
		batch = batch[:0]
		for l := range m.live {
			batch = append(batch, l)
		}
		t.Reset(m.pollPeriodLocked())
		m.mu.Unlock()
		for _, l := range batch {
			select {
			case <-m.stop:
				return
			default:
			}
			if n != nil && !n.rewatchEpoch(l.epochPath) {
				m.mu.Lock()
				m.unwatched = true
				m.mu.Unlock()
			}
			l.check(m.stop)
		}
		clear(batch)
	}
}

// Lease is one grant. It implements storage.Lease and
// storage.LossReporter.
//
// The lease owns one open file description of the lock file, which carries
// the flock. A Lease that is dropped without Release keeps the name held
// until the process exits.
type Lease struct {
	m         *Manager
	name      string
	lockPath  string
	epochPath string
	epoch     uint64
	holder    storage.Holder
	id        fileID // the locked inode

	mu    sync.Mutex
	fl    *flock.Flock // holds the locked descriptor; nil once released
	lost  chan struct{}
	cause error // nil until lost

	// epochSeen is the epoch file as the watchdog last read it naming
	// this grant's epoch (zero: not read, or changed too recently to tell
	// the next change by): a check that finds it so reads nothing. Only
	// the watchdog's goroutine uses it.
	epochSeen epochStamp
}

// epochStamp is what a stat of an epoch file says of its content: any
// rename over it or write to it changes its inode or its change time.
type epochStamp struct {
	id          fileID
	size, ctime int64
}

// stampOf is st's epochStamp when its change is old enough to be told
// from the next one (fsutil.Settled); ok is false otherwise.
func stampOf(st *unix.Stat_t, now time.Time) (s epochStamp, ok bool) {
	ctime := time.Unix(st.Ctim.Unix())
	if !fsutil.Settled(ctime, now) {
		return epochStamp{}, false
	}
	return epochStamp{id: idOf(st), size: st.Size, ctime: ctime.UnixNano()}, true
}

var (
	_ storage.Lease        = (*Lease)(nil)
	_ storage.LossReporter = (*Lease)(nil)
)

func (m *Manager) newLease(name, lockPath, epochPath string, fl *flock.Flock, id fileID, epoch uint64, h storage.Holder) *Lease {
	return &Lease{
		m: m, name: name, lockPath: lockPath, epochPath: epochPath,
		epoch: epoch, holder: h, id: id, fl: fl, lost: make(chan struct{}),
	}
}

// Name returns the lease name.
func (l *Lease) Name() string { return l.name }

// Epoch returns the epoch of this grant; it never changes.
func (l *Lease) Epoch() uint64 { return l.epoch }

// Holder returns the holder identity written with this grant.
func (l *Lease) Holder() storage.Holder { return l.holder }

// Lost is closed exactly once: on Release, or when the watchdog sees the
// lock file replaced or the epoch file changed.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// LostCause returns nil while the lease is valid, then a
// *storage.LeaseLostError saying why it was lost.
func (l *Lease) LostCause() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cause
}

// markLost records cause and closes Lost, unless already lost. The caller
// holds l.mu.
func (l *Lease) markLostLocked(reason storage.LossReason, newEpoch uint64) {
	if l.cause != nil {
		return
	}
	l.cause = &storage.LeaseLostError{Name: l.name, Epoch: l.epoch, Reason: reason, NewEpoch: newEpoch}
	close(l.lost)
}

// Release gives the lease up: it closes Lost (reason LossReleased unless it
// was lost before) and unlocks and closes this lease's own descriptor. It
// never touches the lock file itself, so it cannot free a later holder,
// whose lock is on another file description (and after a Break, another
// inode). Release is idempotent and returns nil after loss.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	fl := l.fl
	l.fl = nil
	l.markLostLocked(storage.LossReleased, 0)
	l.mu.Unlock()
	if fl == nil {
		return nil
	}
	l.m.unregister(l)
	err := fl.Close()
	l.m.changed()
	if err != nil && !errors.Is(err, unix.EINTR) {
		return fmt.Errorf("release lease %q: unlock: %w", l.name, err)
	}
	return nil
}

// check is one watchdog look at l. Only definite observations lose the
// lease; transient errors (EMFILE, EIO on a read) are ignored until the
// next period.
func (l *Lease) check(stop <-chan struct{}) {
	l.mu.Lock()
	held := l.fl != nil && l.cause == nil
	l.mu.Unlock()
	if !held {
		return
	}
	// The lock path names the locked inode, or the lock was replaced
	// (renamed over, unlinked). An inode a path names is linked, so no
	// fstat of the descriptor is needed (it allocated a FileInfo a check).
	var pst unix.Stat_t
	replaced := false
	switch err := unix.Lstat(l.lockPath, &pst); {
	case err == unix.ENOENT:
		replaced = true
	case err != nil:
		return
	default:
		replaced = idOf(&pst) != l.id
	}
	if replaced {
		l.lose(storage.LossReplaced, l.successorEpoch(stop))
		return
	}
	// The epoch file as it was when it last named our epoch: nothing to
	// read. A host woken by its neighbours' grants (dnotify) wakes for
	// each, and reading and parsing the file each time was most of the
	// garbage an asleep host gathers (808 bytes a check).
	var est unix.Stat_t
	seen, settled := epochStamp{}, false
	if unix.Lstat(l.epochPath, &est) == nil {
		seen, settled = stampOf(&est, time.Now())
		if settled && seen == l.epochSeen {
			return
		}
	}
	l.epochSeen = epochStamp{}
	n, _, err := readEpochFile(l.name, l.epochPath)
	var ce *storage.CorruptError
	if errors.As(err, &ce) {
		// looprig replaces the file by rename, so a torn read is somebody
		// writing it in place (truncate, then write): what it says once
		// written is the cause, if it says anything.
		select {
		case <-stop:
			return
		case <-time.After(tornEpochWait):
		}
		n, _, err = readEpochFile(l.name, l.epochPath)
	}
	switch {
	case errors.As(err, &ce):
		l.lose(storage.LossUnknown, 0) // cannot vouch for our epoch any more
	case err != nil:
		return
	case n > l.epoch:
		l.lose(storage.LossEpochAdvanced, n)
	case n != l.epoch:
		// Epoch file deleted (n == 0) or rolled back: the fence is gone.
		l.lose(storage.LossUnknown, 0)
	case settled:
		// Read after the stat: what was read is the stat's file or a
		// later one, and a later one's stamp differs from seen.
		l.epochSeen = seen
	}
}

// tornEpochWait is how long the watchdog waits to read again an epoch
// file it found torn.
const tornEpochWait = 20 * time.Millisecond

// successorEpoch reads the epoch after a replacement. Break holds the
// directory guard from its rename to its epoch write, so reading under the
// guard sees the breaker's epoch, not the one before it.
func (l *Lease) successorEpoch(stop <-chan struct{}) uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), watchdogGuardWait)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	g, err := lockDir(ctx, filepath.Dir(l.lockPath))
	if err == nil {
		defer g.unlock()
	}
	n, _, err := readEpochFile(l.name, l.epochPath)
	if err != nil || n <= l.epoch {
		return 0
	}
	return n
}

func (l *Lease) lose(reason storage.LossReason, newEpoch uint64) {
	l.mu.Lock()
	l.markLostLocked(reason, newEpoch)
	l.mu.Unlock()
	l.m.unregister(l)
}
