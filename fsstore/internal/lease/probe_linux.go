package lease

// Lease probing on Linux: the kernel's lock table, /proc/locks.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"looprig/fsstore/internal/fsutil"
	"looprig/rig/storage"
)

// procLocksPath and readProcLocksHook are variables for tests.
var (
	procLocksPath     = "/proc/locks"
	readProcLocksHook func()
)

const (
	// maxProcLocks bounds the bytes read from /proc/locks (about 600k locks).
	maxProcLocks = 64 << 20
	// maxProcLocksLine bounds one line of it (real lines are < 100 bytes).
	maxProcLocksLine = 4 << 10
)

// probeState is what a Manager learns about the lock table.
type probeState struct {
	// lockDevs maps a st_dev seen by stat to the device number the kernel
	// prints for locks on that filesystem in /proc/locks (see heldIn).
	lockDevs map[uint64]devNum
}

func newProbeState() probeState { return probeState{lockDevs: make(map[uint64]devNum)} }

// probeHeld reads /proc/locks once and sets out[p.i].Held for each pending
// lease: held when a granted FLOCK entry names the inode of its lock file.
func (m *Manager) probeHeld(_ context.Context, reqs []ProbeRequest, pend []pendingProbe, want map[uint64]struct{}, out []storage.LeaseStatus) error {
	table, err := readProcLocks(want)
	if err != nil {
		return err
	}
	for _, p := range pend {
		held, err := m.heldIn(table, p.dev, p.ino, p.dir)
		if err != nil {
			return fmt.Errorf("probe lease %q: %w", reqs[p.i].Name, err)
		}
		out[p.i].Held = held
	}
	return nil
}

// devNum is a device number as /proc/locks prints it.
type devNum struct{ major, minor uint32 }

func devOf(dev uint64) devNum { return devNum{major: unix.Major(dev), minor: unix.Minor(dev)} }

// lockEntry is one granted FLOCK entry of /proc/locks.
type lockEntry struct {
	dev devNum
	pid int
}

// lockTable maps inode numbers to the granted FLOCK entries on them.
type lockTable map[uint64][]lockEntry

// heldIn decides whether the inode (dev, ino) is flocked according to
// table.
//
// Normally st_dev from stat equals the device the kernel prints for the
// lock. On some filesystems it does not (btrfs subvolumes report an
// anonymous st_dev; overlayfs reports its own while locks sit on the upper
// layer's inode). When the inode number matches but the device does not,
// the Manager learns, once per st_dev, which device the lock table uses for
// that filesystem by locking a private unlinked temp file next to the lock
// file and finding it in /proc/locks (see calibrate).
func (m *Manager) heldIn(table lockTable, dev, ino uint64, dir string) (bool, error) {
	entries := table[ino]
	if len(entries) == 0 {
		return false, nil
	}
	want := devOf(dev)
	for _, e := range entries {
		if e.dev == want {
			return true, nil
		}
	}
	ld, err := m.lockDev(dev, dir)
	if err != nil {
		return false, err
	}
	if ld == want {
		return false, nil
	}
	for _, e := range entries {
		if e.dev == ld {
			return true, nil
		}
	}
	return false, nil
}

// lockDev returns the /proc/locks device for files whose st_dev is dev.
func (m *Manager) lockDev(dev uint64, dir string) (devNum, error) {
	m.mu.Lock()
	d, ok := m.probe.lockDevs[dev]
	m.mu.Unlock()
	if ok {
		return d, nil
	}
	statDev, d, err := calibrate(dir)
	if err != nil {
		return devNum{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.probe.lockDevs[statDev] = d
	if statDev != dev {
		// dir is on another filesystem than the lock file (a bind mount
		// of the file itself): trust st_dev, and do not calibrate again.
		d = devOf(dev)
		m.probe.lockDevs[dev] = d
	}
	return d, nil
}

// calibrate locks a fresh, immediately unlinked temp file in dir and finds
// it in /proc/locks. It returns the file's st_dev and the device the lock
// table shows for it. The temp file cannot conflict with any lease lock.
func calibrate(dir string) (uint64, devNum, error) {
	var fd int
	for tries := 0; ; tries++ {
		p := filepath.Join(dir, ".probe-"+strconv.FormatUint(rand.Uint64(), 36))
		var err error
		fd, err = fsutil.Open(p, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, fileMode)
		if err == unix.EEXIST && tries < 100 {
			continue
		}
		if err != nil {
			return 0, devNum{}, fmt.Errorf("calibrate lock table: %w", &fs.PathError{Op: "create", Path: p, Err: err})
		}
		unix.Unlink(p)
		break
	}
	defer unix.Close(fd)
	if err := flockRetry(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return 0, devNum{}, fmt.Errorf("calibrate lock table: flock: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, devNum{}, fmt.Errorf("calibrate lock table: fstat: %w", err)
	}
	table, err := readProcLocks(map[uint64]struct{}{uint64(st.Ino): {}})
	if err != nil {
		return 0, devNum{}, err
	}
	entries := table[uint64(st.Ino)]
	pid := os.Getpid()
	for _, e := range entries {
		if e.pid == pid {
			return uint64(st.Dev), e.dev, nil
		}
	}
	if len(entries) == 1 {
		return uint64(st.Dev), entries[0].dev, nil
	}
	return 0, devNum{}, fmt.Errorf("calibrate lock table: cannot find our own lock on inode %d in %s", st.Ino, procLocksPath)
}

// readProcLocks reads /proc/locks once (bounded) and returns the granted
// FLOCK entries on the wanted inode numbers.
func readProcLocks(want map[uint64]struct{}) (lockTable, error) {
	if readProcLocksHook != nil {
		readProcLocksHook()
	}
	f, err := os.Open(procLocksPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProbeUnsupported, err)
	}
	defer f.Close()
	return parseProcLocks(io.LimitReader(f, maxProcLocks+1), want)
}

// parseProcLocks parses lines like
//
//	1: FLOCK  ADVISORY  WRITE 2306 fd:00:1835042 0 EOF
//	2: -> FLOCK  ADVISORY  WRITE 2310 fd:00:1835042 0 EOF
//
// keeping granted FLOCK entries (not "->" waiters) on wanted inodes. The
// device is major:minor in hex, the inode decimal. Input over maxProcLocks
// bytes, or a line over maxProcLocksLine, is an error.
func parseProcLocks(r io.Reader, want map[uint64]struct{}) (lockTable, error) {
	br := bufio.NewReaderSize(r, maxProcLocksLine)
	table := make(lockTable)
	total := 0
	for {
		line, err := br.ReadSlice('\n')
		total += len(line)
		if total > maxProcLocks {
			return nil, fmt.Errorf("%s is larger than %d bytes", procLocksPath, maxProcLocks)
		}
		if err == bufio.ErrBufferFull {
			return nil, fmt.Errorf("%s has a line longer than %d bytes", procLocksPath, maxProcLocksLine)
		}
		if len(line) > 0 {
			if ino, e, ok := parseProcLocksLine(line); ok {
				if _, w := want[ino]; w {
					table[ino] = append(table[ino], e)
				}
			}
		}
		if err == io.EOF {
			return table, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", procLocksPath, err)
		}
	}
}

func parseProcLocksLine(line []byte) (uint64, lockEntry, bool) {
	var fields [6][]byte
	n := 0
	for rest := line; n < len(fields); n++ {
		rest = bytes.TrimLeft(rest, " \t\n")
		if len(rest) == 0 {
			break
		}
		end := bytes.IndexAny(rest, " \t\n")
		if end < 0 {
			end = len(rest)
		}
		fields[n], rest = rest[:end], rest[end:]
	}
	// fields: "id:" "FLOCK" "ADVISORY" "WRITE" pid "maj:min:ino"
	if n < len(fields) || string(fields[1]) != "FLOCK" {
		return 0, lockEntry{}, false // waiters have "->" in fields[1]
	}
	pid, err := strconv.Atoi(string(fields[4]))
	if err != nil {
		return 0, lockEntry{}, false
	}
	parts := bytes.Split(fields[5], []byte{':'})
	if len(parts) != 3 {
		return 0, lockEntry{}, false // "<none>:0"
	}
	maj, err1 := strconv.ParseUint(string(parts[0]), 16, 32)
	min, err2 := strconv.ParseUint(string(parts[1]), 16, 32)
	ino, err3 := strconv.ParseUint(string(parts[2]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, lockEntry{}, false
	}
	return ino, lockEntry{dev: devNum{major: uint32(maj), minor: uint32(min)}, pid: pid}, true
}

// mix64 is splitmix64's finalizer: each bit of x moves about half of the
// result's, so that sums of entries rarely collide.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// LockTableStamp summarises the granted FLOCK entries of /proc/locks on
// the lock files the Manager watches (see WatchLockFiles; until it was
// told, every entry of the table): it changes when one of them is locked or unlocked, a
// holder's death included, and stays the same while none is. Locks on
// other files sharing an inode number (of another filesystem) may change
// it too. A lock file created or replaced since the last probe is not
// watched; the epoch file written with it is the change to notice. The
// error wraps ErrProbeUnsupported when the table cannot be read.
//
// The kernel hands the table out a page at a time, each page from where
// the previous one ended by position: while other processes lock and
// unlock (journal appends of busy sessions, hundreds a second at a
// thousand sessions) an entry may be read twice or not at all. So the
// stamp is of the set of entries (an entry read twice counts once) of
// stampReads reads together: an entry one read skipped, another has. A
// lock that stays dropped is in none of them.
func (m *Manager) LockTableStamp() (uint64, error) {
	m.mu.Lock()
	watched := m.lockInodes
	m.mu.Unlock()
	seen := make(map[lockKey]struct{}, len(watched)+8)
	for range stampReads {
		if err := readLockTable(watched, seen); err != nil {
			return 0, err
		}
	}
	var sum uint64
	for k := range seen {
		sum += mix64(mix64(k.who) ^ k.ino)
	}
	return sum ^ uint64(len(seen))<<56, nil
}

// stampReads is how many reads of the lock table one stamp takes.
const stampReads = 2

// lockKey is an entry of the lock table as the stamp counts it: the
// holder's pid and the device, and the inode.
type lockKey struct{ who, ino uint64 }

// readLockTable adds the watched entries of one read of the table to
// seen.
func readLockTable(watched map[uint64]struct{}, seen map[lockKey]struct{}) error {
	if readProcLocksHook != nil {
		readProcLocksHook()
	}
	f, err := os.Open(procLocksPath)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrProbeUnsupported, err)
	}
	defer f.Close()
	return scanProcLocks(io.LimitReader(f, maxProcLocks+1), watched, seen)
}

// stampProcLocks is LockTableStamp's stamp of one read: the entries are
// summed, not chained, so the order /proc/locks lists them in does not
// matter. Only entries on inodes in watched count, unless watched is nil.
func stampProcLocks(r io.Reader, watched map[uint64]struct{}) (uint64, error) {
	seen := map[lockKey]struct{}{}
	if err := scanProcLocks(r, watched, seen); err != nil {
		return 0, err
	}
	var sum uint64
	for k := range seen {
		sum += mix64(mix64(k.who) ^ k.ino)
	}
	return sum ^ uint64(len(seen))<<56, nil
}

// scanProcLocks adds the granted FLOCK entries of a lock table on inodes
// in watched (all, if nil) to seen.
func scanProcLocks(r io.Reader, watched map[uint64]struct{}, seen map[lockKey]struct{}) error {
	br := bufio.NewReaderSize(r, maxProcLocksLine)
	total := 0
	for {
		line, err := br.ReadSlice('\n')
		total += len(line)
		if total > maxProcLocks {
			return fmt.Errorf("%s is larger than %d bytes", procLocksPath, maxProcLocks)
		}
		if err == bufio.ErrBufferFull {
			return fmt.Errorf("%s has a line longer than %d bytes", procLocksPath, maxProcLocksLine)
		}
		if ino, e, ok := parseProcLocksLine(line); ok && isWatched(watched, ino) {
			seen[lockKey{who: uint64(e.pid)<<32 ^ uint64(e.dev.major)<<20 ^ uint64(e.dev.minor), ino: ino}] = struct{}{}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", procLocksPath, err)
		}
	}
}

func isWatched(watched map[uint64]struct{}, ino uint64) bool {
	if watched == nil {
		return true
	}
	_, ok := watched[ino]
	return ok
}
