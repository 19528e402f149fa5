package lease

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"looprig/internal/procstart"
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
	sts, err := m.ProbeMany(context.Background(), reqs, nil)
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
	if sts, err := m.ProbeMany(context.Background(), nil, nil); err != nil || len(sts) != 0 {
		t.Fatalf("empty ProbeMany: %v %v", sts, err)
	}
	mustRelease(t, held)
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

// A grant by this process names its start (procstart.Self) in the epoch
// file, for a listing to tell pid reuse without the wall clock; a grant in
// the name of another pid names none.
func TestGrantNamesTheHoldersStart(t *testing.T) {
	dir := t.TempDir()
	self := procstart.Self()
	mine := mustAcquire(t, testManager(t, 0, "h"), dir, "sessions/mine")
	st := probe(t, testManager(t, 0, ""), dir, "sessions/mine")
	if st.Holder.Started != self.Ticks || st.Holder.Boot != self.Boot {
		t.Errorf("this process's grant names start %d on boot %q, want %d on %q", st.Holder.Started, st.Holder.Boot, self.Ticks, self.Boot)
	}
	if runtime.GOOS == "linux" && (self.Ticks == 0 || self.Boot == "") {
		t.Errorf("no start of this process on Linux: %+v", self)
	}
	mustRelease(t, mine)
	other := mustAcquire(t, testManager(t, 777, "h"), dir, "sessions/other")
	if st := probe(t, testManager(t, 0, ""), dir, "sessions/other"); st.Holder.Started != 0 || st.Holder.Boot != "" {
		t.Errorf("a grant for pid 777 names a start: %+v", st.Holder)
	}
	mustRelease(t, other)
}
