package lease

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

func probe(t *testing.T, m *Manager, dir, name string) storage.LeaseStatus {
	t.Helper()
	lockPath, epochPath := leasePaths(dir, name)
	st, err := m.Probe(context.Background(), name, lockPath, epochPath)
	if err != nil {
		t.Fatalf("Probe(%q): %v", name, err)
	}
	if st.Name != name {
		t.Fatalf("Probe(%q) named %q", name, st.Name)
	}
	return st
}

func TestProbe(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 777, "probe-host")
	if st := probe(t, m, dir, "sessions/p"); st.Held || st.Epoch != 0 {
		t.Fatalf("never used: %+v", st)
	}
	l := mustAcquire(t, m, dir, "sessions/p")
	st := probe(t, m, dir, "sessions/p")
	if !st.Held || st.Epoch != 1 || st.Holder.PID != 777 || st.Holder.Host != "probe-host" || !st.Holder.Acquired.Equal(l.Holder().Acquired) {
		t.Fatalf("held: %+v", st)
	}
	// Probing from another Manager sees the same.
	if st := probe(t, testManager(t, 0, ""), dir, "sessions/p"); !st.Held || st.Epoch != 1 {
		t.Fatalf("held, other manager: %+v", st)
	}
	mustRelease(t, l)
	if st := probe(t, m, dir, "sessions/p"); st.Held || st.Epoch != 1 || st.Holder.PID != 777 {
		t.Fatalf("released: %+v", st)
	}
	// The probe took no lock: the name is free.
	mustRelease(t, mustAcquire(t, m, dir, "sessions/p"))
}

func TestProbeHeldByHelperProcess(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 0, "")
	h := startHelper(t, "hold", dir, "sessions/hp")
	st := probe(t, m, dir, "sessions/hp")
	if !st.Held || st.Epoch != h.epoch || st.Holder.PID != h.pid {
		t.Fatalf("held by helper pid %d epoch %d: %+v", h.pid, h.epoch, st)
	}
	h.kill(t)
	if st := probe(t, m, dir, "sessions/hp"); st.Held || st.Epoch != h.epoch {
		t.Fatalf("helper killed: %+v", st)
	}
}

func TestProbeMany(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 0, "")
	held := mustAcquire(t, m, dir, "sessions/held")
	mustRelease(t, mustAcquire(t, m, dir, "sessions/released"))
	mustRelease(t, mustAcquire(t, m, dir, "sessions/released"))
	var reqs []ProbeRequest
	for _, n := range []string{"sessions/held", "sessions/released", "sessions/never"} {
		lockPath, epochPath := leasePaths(dir, n)
		reqs = append(reqs, ProbeRequest{Name: n, LockPath: lockPath, EpochPath: epochPath})
	}
	sts, err := m.ProbeMany(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	want := []storage.LeaseStatus{
		{Name: "sessions/held", Held: true, Epoch: 1},
		{Name: "sessions/released", Held: false, Epoch: 2},
		{Name: "sessions/never", Held: false, Epoch: 0},
	}
	for i, w := range want {
		g := sts[i]
		if g.Name != w.Name || g.Held != w.Held || g.Epoch != w.Epoch {
			t.Fatalf("status %d: %+v, want %+v", i, g, w)
		}
	}
	if sts, err := m.ProbeMany(context.Background(), nil); err != nil || len(sts) != 0 {
		t.Fatalf("empty ProbeMany: %v %v", sts, err)
	}
	mustRelease(t, held)
}

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
	sts, err := m.ProbeMany(context.Background(), reqs)
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

// Probing in a tight loop never makes an Acquire fail.
func TestProbeNeverFailsAcquire(t *testing.T) {
	dir := t.TempDir()
	m := testManager(t, 0, "")
	prober := testManager(t, 0, "")
	lockPath, epochPath := leasePaths(dir, "sessions/busy")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var probes atomic.Int64
	errc := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := prober.Probe(context.Background(), "sessions/busy", lockPath, epochPath); err != nil {
				errc <- err
				return
			}
			probes.Add(1)
		}
	}()
	for i := 1; i <= 200; i++ {
		l, err := m.Acquire(context.Background(), "sessions/busy", lockPath, epochPath)
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("cycle %d (after %d probes): %v", i, probes.Load(), err)
		}
		if l.Epoch() != uint64(i) {
			t.Fatalf("cycle %d: epoch %d", i, l.Epoch())
		}
		mustRelease(t, l)
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
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
	m.lockDevs[statDev] = devNum{0, 31} // as calibration would learn it
	if held, err := m.heldIn(table, statDev, 42, dir); err != nil || !held {
		t.Fatalf("mapped device: held=%v err=%v", held, err)
	}
	m.lockDevs[statDev] = devNum{0, 55} // calibration: same device; the entry is another fs
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
