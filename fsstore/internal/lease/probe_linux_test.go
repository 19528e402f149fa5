package lease

// Tests of the probing through /proc/locks (probe_linux.go).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"looprig/rig/storage"
)

// ProbeMany over many names reads /proc/locks once, not once per name.
func TestProbeManyReadsLockTableOnce(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 0, "")
	var reqs []ProbeRequest
	var leases []*Lease
	for i := 0; i < 50; i++ {
		name := fmt.Sprintf("sessions/n%02d", i)
		l := mustAcquire(t, m, dir, name)
		if i%2 == 0 {
			leases = append(leases, l)
		} else {
			mustRelease(t, l)
		}
		lockPath, epochPath := leasePaths(dir, name)
		reqs = append(reqs, ProbeRequest{Name: name, LockPath: lockPath, EpochPath: epochPath})
	}
	var reads atomic.Int32
	readProcLocksHook = func() { reads.Add(1) }
	t.Cleanup(func() { readProcLocksHook = nil })
	sts, err := m.ProbeMany(context.Background(), reqs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := reads.Load(); n != 1 {
		t.Fatalf("lock table read %d times for %d names", n, len(reqs))
	}
	for i, st := range sts {
		if st.Held != (i%2 == 0) || st.Epoch != 1 {
			t.Fatalf("status %d: %+v", i, st)
		}
	}
	for _, l := range leases {
		mustRelease(t, l)
	}
}

func TestProbeWithoutProcLocks(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 0, "")
	l := mustAcquire(t, m, dir, "sessions/np")
	defer mustRelease(t, l)
	orig := procLocksPath
	procLocksPath = filepath.Join(dir, "no-such-proc-locks")
	defer func() { procLocksPath = orig }()
	lockPath, epochPath := leasePaths(dir, "sessions/np")
	st, err := m.Probe(context.Background(), "sessions/np", lockPath, epochPath)
	if !errors.Is(err, ErrProbeUnsupported) {
		t.Fatalf("Probe without /proc/locks: %+v, %v; want ErrProbeUnsupported", st, err)
	}
	// A name whose lock file does not exist needs no lock table.
	if st := probe(t, m, dir, "sessions/none"); st.Held || st.Epoch != 0 {
		t.Fatalf("%+v", st)
	}
}

func TestParseProcLocks(t *testing.T) {
	const text = `1: POSIX  ADVISORY  WRITE 1187 00:19:526 0 EOF
2: FLOCK  ADVISORY  WRITE 2306 fd:00:1835042 0 EOF
2: -> FLOCK  ADVISORY  WRITE 2310 fd:00:1835042 0 EOF
3: OFDLCK ADVISORY  READ  -1 00:06:1028 0 EOF
4: FLOCK  ADVISORY  READ  99 103:2a:77 0 EOF
5: LEASE  ACTIVE    READ  5 08:01:77 0 EOF
6: FLOCK  ADVISORY  WRITE 4 <none>:0 0 EOF
7: FLOCK  ADVISORY  WRITE 12 08:01:526 0 EOF
 8: -> FLOCK  ADVISORY  WRITE 13 08:01:9 0 EOF
garbage line
9: FLOCK
`
	table, err := parseProcLocks(strings.NewReader(text), map[uint64]struct{}{1835042: {}, 77: {}, 526: {}, 1028: {}, 9: {}})
	if err != nil {
		t.Fatal(err)
	}
	want := lockTable{
		1835042: {{dev: devNum{0xfd, 0}, pid: 2306}},
		77:      {{dev: devNum{0x103, 0x2a}, pid: 99}},
		526:     {{dev: devNum{8, 1}, pid: 12}},
	}
	if fmt.Sprint(table) != fmt.Sprint(want) {
		t.Fatalf("table %v, want %v", table, want)
	}
	if _, err := parseProcLocks(strings.NewReader(strings.Repeat("x", maxProcLocksLine+10)), nil); err == nil {
		t.Fatal("overlong line accepted")
	}
}

// A filesystem whose st_dev differs from the device in /proc/locks
// (btrfs subvolumes, overlayfs) is handled by calibration.
func TestHeldInDeviceMismatch(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 0, "")
	statDev := unix.Mkdev(0, 55)
	table := lockTable{42: {{dev: devNum{0, 31}, pid: 1}}}
	m.probe.lockDevs[statDev] = devNum{0, 31} // as calibration would learn it
	if held, err := m.heldIn(table, statDev, 42, dir); err != nil || !held {
		t.Fatalf("mapped device: held=%v err=%v", held, err)
	}
	m.probe.lockDevs[statDev] = devNum{0, 55} // calibration: same device; the entry is another fs
	if held, err := m.heldIn(table, statDev, 42, dir); err != nil || held {
		t.Fatalf("other filesystem's inode: held=%v err=%v", held, err)
	}
	if held, err := m.heldIn(table, statDev, 43, dir); err != nil || held {
		t.Fatalf("unlocked inode: held=%v err=%v", held, err)
	}
}

func TestCalibrate(t *testing.T) {
	dir := t.TempDir()
	dev, ld, err := calibrate(dir)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	if dev != uint64(st.Dev) {
		t.Fatalf("calibrated st_dev %x, dir st_dev %x", dev, st.Dev)
	}
	t.Logf("st_dev %d:%d -> lock table %d:%d", unix.Major(dev), unix.Minor(dev), ld.major, ld.minor)
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("calibration left %v", entries)
	}
}

// A vouch answers for the leases it vouches for: when it vouches for every
// lease whose epoch file names a holder (held, or its holder gone), the
// lock table is not read; a lease it says nothing of is probed in the
// table as usual, and a vouch never turns a released lease held unless it
// says so (it is asked only of leases with a holder and a lock file).
func TestProbeManyVouch(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 0, "")
	var reqs []ProbeRequest
	held := map[string]bool{}
	for i := 0; i < 6; i++ {
		name := fmt.Sprintf("sessions/v%d", i)
		l := mustAcquire(t, m, dir, name)
		if i < 4 {
			held[name] = true
			t.Cleanup(func() { mustRelease(t, l) })
		} else {
			mustRelease(t, l)
		}
		lockPath, epochPath := leasePaths(dir, name)
		reqs = append(reqs, ProbeRequest{Name: name, LockPath: lockPath, EpochPath: epochPath})
	}
	never, neverEpoch := leasePaths(dir, "sessions/never")
	reqs = append(reqs, ProbeRequest{Name: "sessions/never", LockPath: never, EpochPath: neverEpoch})
	var reads atomic.Int32
	readProcLocksHook = func() { reads.Add(1) }
	t.Cleanup(func() { readProcLocksHook = nil })

	var asked sync.Map
	sts, err := m.ProbeMany(context.Background(), reqs, func(_ context.Context, name string, h storage.Holder) storage.Vouched {
		asked.Store(name, h)
		if held[name] {
			return storage.VouchHeld
		}
		return storage.VouchNothing
	})
	if err != nil {
		t.Fatal(err)
	}
	// The released leases were offered too (their epoch files name their
	// last holder): the vouch said no, so the table was read for them.
	if n := reads.Load(); n != 1 {
		t.Errorf("lock table read %d times, want 1 (for the leases not vouched for)", n)
	}
	for _, st := range sts {
		if st.Held != held[st.Name] {
			t.Errorf("%s: held %v, want %v", st.Name, st.Held, held[st.Name])
		}
	}
	if _, ok := asked.Load("sessions/never"); ok {
		t.Error("the vouch was asked about a lease never granted")
	}
	if h, ok := asked.Load("sessions/v0"); !ok || h.(storage.Holder).PID != os.Getpid() {
		t.Errorf("the vouch was asked about v0 with holder %v, want this process", h)
	}

	// Only the held ones: every lease with a holder vouched for, no read.
	reads.Store(0)
	sts, err = m.ProbeMany(context.Background(), reqs[:4], func(context.Context, string, storage.Holder) storage.Vouched { return storage.VouchHeld })
	if err != nil {
		t.Fatal(err)
	}
	if n := reads.Load(); n != 0 {
		t.Errorf("lock table read %d times with every lease vouched for, want 0", n)
	}
	for _, st := range sts {
		if !st.Held {
			t.Errorf("%s vouched for, not held", st.Name)
		}
	}

	// The released ones' holder said gone, the held ones' held: no read,
	// and the gone ones free at their epoch. A vouch of gone is taken at
	// its word (the store does not second-guess it): v3, held by this
	// process, said gone, is reported free.
	reads.Store(0)
	sts, err = m.ProbeMany(context.Background(), reqs, func(_ context.Context, name string, _ storage.Holder) storage.Vouched {
		if held[name] && name != "sessions/v3" {
			return storage.VouchHeld
		}
		return storage.VouchGone
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := reads.Load(); n != 0 {
		t.Errorf("lock table read %d times with every lease vouched held or gone, want 0", n)
	}
	for _, st := range sts {
		want := held[st.Name] && st.Name != "sessions/v3"
		if st.Held != want || st.Name != "sessions/never" && st.Epoch == 0 {
			t.Errorf("%s: held %v at epoch %d, want held %v at its epoch", st.Name, st.Held, st.Epoch, want)
		}
	}
}
