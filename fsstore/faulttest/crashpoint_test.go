package faulttest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/google/uuid"

	"looprig/fsstore"
	"looprig/fsstore/internal/seam"
	"looprig/rig"
	"looprig/rig/hub"
	"looprig/rig/storage"
)

// crashHelper restores a session and runs a printing turn with a seam hook
// that SIGKILLs the process on the FAULTTEST_HIT-th pass of
// FAULTTEST_POINT. It prints "ack SEQ TYPE" for every record the runtime
// acknowledges. Exit 3 means the point was never reached that often.
//
// With FAULTTEST_TEAR=1 at ledger.written, it first cuts the file back to
// a random length inside the batch it just wrote: a crash of the whole
// machine before fdatasync may leave any prefix of an unsynced write on
// disk, and a process crash alone never does.
func crashHelper(dir string, id uuid.UUID) int {
	point := seam.Point(os.Getenv(envPoint))
	want, _ := strconv.Atoi(os.Getenv(envHit))
	tear := os.Getenv(envTear) == "1"
	st, err := fsstore.Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: open:", err)
		return 1
	}
	var mu sync.Mutex
	hits := 0
	before := map[string]int64{} // file sizes before the last ledger write
	seam.Set(func(p seam.Point, path string) error {
		mu.Lock()
		defer mu.Unlock()
		if p == seam.LedgerWrite {
			if fi, err := os.Stat(path); err == nil {
				before[path] = fi.Size()
			}
		}
		if p != point {
			return nil
		}
		hits++
		if hits < want {
			return nil
		}
		if tear && p == seam.LedgerWritten {
			if fi, err := os.Stat(path); err == nil && fi.Size() > before[path] {
				cut := before[path] + rand.Int64N(fi.Size()-before[path])
				if err := os.Truncate(path, cut); err != nil {
					fmt.Fprintln(os.Stderr, "helper: tear:", err)
				}
			}
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // never returns
	})
	ctx := context.Background()
	r, err := rig.Define(rigOptions(st)...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: define:", err)
		return 1
	}
	s, err := r.RestoreSession(ctx, id)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: restore:", err)
		return 4
	}
	sub := s.Subscribe(hub.Filter{AllLoops: true})
	acks := make(chan struct{})
	go func() { ackAll(sub); close(acks) }()
	waitEnd := s.Subscribe(hub.Filter{AllLoops: true})
	if _, err := s.Submit(ctx, "seq 20000"); err != nil {
		fmt.Fprintln(os.Stderr, "helper: submit:", err)
		return 1
	}
	waitTurnEndHelper(waitEnd)
	s.Shutdown(ctx)
	<-acks
	fmt.Fprintf(os.Stderr, "helper: point %s passed %d times, never %d\n", point, hits, want)
	return 3
}

// waitTurnEndHelper is waitTurnEnd without a *testing.T.
func waitTurnEndHelper(sub *hub.Subscription) {
	ctx, cancel := context.WithTimeout(context.Background(), helperTimeout)
	defer cancel()
	for {
		batch, ok, err := sub.Next(ctx, 0)
		for _, env := range batch {
			if _, end := turnOf(env.Event); end {
				return
			}
		}
		if err != nil || !ok {
			return
		}
	}
}

// TestCrashPoints stops a process owning a session at each step of the
// store's write paths — ledger append (before the write is synced, torn or
// not; after the sync, before the ack), the journal fence (the first
// append of a restore), the epoch file update of the lease (temp file
// written; renamed, directory not synced) and the catalog write (same two
// steps) — then reopens the store and restores. Every point recovers:
// nothing acknowledged is lost, the session is never listed broken or
// held, the restore succeeds at a higher epoch than any fence before it,
// and a crash before the fence leaves the lease simply free.
func TestCrashPoints(t *testing.T) {
	cases := []struct {
		point seam.Point
		hit   int
		tear  bool
		what  string
	}{
		{seam.LedgerWritten, 1, false, "the restore's fence is written, not synced"},
		{seam.LedgerWritten, 1, true, "the restore's fence is torn before its sync"},
		{seam.LedgerSynced, 1, false, "the fence is synced, not acknowledged"},
		{seam.LedgerWrite, 2, false, "the fence is acknowledged; RestoreStarted not written"},
		{seam.LedgerWritten, 2, false, "RestoreStarted written, not synced"},
		{seam.LedgerSynced, 3, false, "mid-restore, synced, not acknowledged"},
		{seam.LedgerWritten, 8, false, "mid-turn: output written, not synced"},
		{seam.LedgerWritten, 8, true, "mid-turn: output torn before its sync"},
		{seam.LedgerSynced, 8, false, "mid-turn: output synced, not acknowledged"},
		{seam.LedgerWritten, 20, true, "later in the turn, torn"},
		{seam.EpochTempWritten, 1, false, "the next epoch is in a temp file, not renamed"},
		{seam.EpochRenamed, 1, false, "the next epoch is renamed into place, directory not synced"},
		{seam.KVTempWritten, 1, false, "the catalog entry after RestoreDone is in a temp file"},
		{seam.KVRenamed, 1, false, "the catalog entry after RestoreDone is renamed, directory not synced"},
		{seam.KVTempWritten, 2, false, "the catalog entry of the turn's start is in a temp file"},
		{seam.KVRenamed, 3, false, "a later catalog entry is renamed, directory not synced"},
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s#%d", c.point, c.hit)
		if c.tear {
			name += "-torn"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			id := newStoppedSession(t, dir)
			sname := storage.SessionName(id.String())
			st := openStore(t, dir)
			before := readJournal(t, st, id)
			beforeStatus, err := st.Probe(context.Background(), sname)
			if err != nil {
				t.Fatal(err)
			}
			st.Close()

			tear := "0"
			if c.tear {
				tear = "1"
			}
			h := startHelper(t, "crash", envDir+"="+dir, envSession+"="+id.String(),
				envPoint+"="+string(c.point), envHit+"="+strconv.Itoa(c.hit), envTear+"="+tear)
			acked := map[uint64]string{}
			ws, _ := h.wait(t, acked)
			if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("helper was not stopped at %s (%s): status %v; stderr:\n%s", c.point, c.what, ws, h.stderr)
			}

			// Before restoring: the dead holder holds nothing, and a crash
			// before the fence changed no record.
			st = openStore(t, dir)
			status, err := st.Probe(context.Background(), sname)
			if err != nil {
				t.Fatal(err)
			}
			if status.Held {
				t.Fatalf("lease held after its holder died: %+v", status)
			}
			switch c.point {
			case seam.EpochTempWritten:
				if status.Epoch != beforeStatus.Epoch {
					t.Errorf("epoch %d after a crash before the rename, want the old %d", status.Epoch, beforeStatus.Epoch)
				}
			case seam.EpochRenamed:
				if status.Epoch != beforeStatus.Epoch+1 {
					t.Errorf("epoch %d after a crash after the rename, want %d", status.Epoch, beforeStatus.Epoch+1)
				}
			}
			if c.point == seam.EpochTempWritten || c.point == seam.EpochRenamed {
				if tip, err := st.Tip(context.Background(), sname); err != nil || tip != uint64(len(before)) {
					t.Errorf("journal tip %d (%v) after a crash before the fence, want %d", tip, err, len(before))
				}
			}
			st.Close()

			epoch := restoreAndCheck(t, dir, id, acked)
			if epoch <= status.Epoch {
				t.Errorf("restored at epoch %d, not after the crashed grant's %d", epoch, status.Epoch)
			}
			t.Logf("%s: %d records acknowledged before the crash; restored at epoch %d", c.what, len(acked), epoch)
		})
	}
}

// createHelper creates a session with the crash hook of crashHelper armed:
// it dies inside NewSession (exit 3: the point was not reached).
func createHelper(dir string) int {
	point := seam.Point(os.Getenv(envPoint))
	want, _ := strconv.Atoi(os.Getenv(envHit))
	st, err := fsstore.Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: open:", err)
		return 1
	}
	hits := 0
	var mu sync.Mutex
	seam.Set(func(p seam.Point, path string) error {
		mu.Lock()
		defer mu.Unlock()
		if p == point {
			if hits++; hits >= want {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}
		return nil
	})
	r, err := rig.Define(rigOptions(st)...)
	if err != nil {
		return 1
	}
	s, err := r.NewSession(context.Background(), rig.WithTitle("crashed creation"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: new:", err)
		return 1
	}
	s.Shutdown(context.Background())
	return 3
}

// TestCrashPointsDuringCreate stops `NewSession` at each step it writes.
// The store stays usable and the other sessions are untouched; the crashed
// creation is either not listed at all, or listed as broken ("its creation
// did not finish", since the catalog entry is written first so that such a
// crash is visible), or as crashed once SessionStarted and LoopStarted
// were durable; never held. The listing agrees with a restore: a session
// listed crashed is completed by RestoreSession, one listed broken is
// refused with discovery_failed.
func TestCrashPointsDuringCreate(t *testing.T) {
	cases := []struct {
		point seam.Point
		hit   int
	}{
		{seam.EpochTempWritten, 1}, {seam.EpochRenamed, 1},
		{seam.KVTempWritten, 1}, {seam.KVRenamed, 1},
		{seam.LedgerWritten, 1}, {seam.LedgerSynced, 1}, // the fence
		{seam.LedgerWritten, 2}, {seam.LedgerSynced, 2}, // SessionStarted
		{seam.LedgerWritten, 3}, {seam.LedgerSynced, 3}, // LoopStarted
		{seam.KVTempWritten, 2}, {seam.KVRenamed, 2}, // the entry of the live session
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s#%d", c.point, c.hit), func(t *testing.T) {
			dir := t.TempDir()
			other := newStoppedSession(t, dir)
			h := startHelper(t, "create", envDir+"="+dir, envSession+"="+other.String(),
				envPoint+"="+string(c.point), envHit+"="+strconv.Itoa(c.hit))
			ws, _ := h.wait(t, nil)
			if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("helper was not stopped at %s#%d: %v; stderr:\n%s", c.point, c.hit, ws, h.stderr)
			}
			st := openStore(t, dir)
			ctx := context.Background()
			infos, err := rig.ListSessions(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			var crashed *rig.SessionInfo
			for i, in := range infos {
				if in.ID == other.String() {
					if in.State != rig.StateIdle {
						t.Errorf("the other session is %s after a crashed creation", in.State)
					}
					continue
				}
				crashed = &infos[i]
			}
			outcome := "not listed"
			if crashed != nil {
				creating := crashed.State == rig.StateBroken && crashed.Reason == "its creation did not finish"
				if !creating && crashed.State != rig.StateCrashed { // crashed: the live entry was written
					t.Errorf("crashed creation listed as %s (%q), want broken: its creation did not finish, or crashed", crashed.State, crashed.Reason)
				}
				outcome = "listed " + string(crashed.State)
				id := uuid.MustParse(crashed.ID)
				if st, err := st.Probe(ctx, storage.SessionName(crashed.ID)); err != nil || st.Held {
					t.Errorf("crashed creation's lease: %+v, %v", st, err)
				}
				s, err := defineRig(t, st).RestoreSession(ctx, id)
				var re *rig.RestoreError
				if listedCrashed := crashed.State == rig.StateCrashed; listedCrashed != (err == nil) {
					t.Errorf("listed %s (%q), but restore = %v", crashed.State, crashed.Reason, err)
				}
				switch {
				case err == nil:
					outcome += "; restore completes it"
					s.Shutdown(ctx)
					if in, _ := rig.ListSessions(ctx, st); len(in) != 2 {
						t.Errorf("after the restore: %+v", in)
					}
					checkJournal(t, readJournal(t, st, id), nil)
				case errors.As(err, &re) && re.Kind == rig.RestoreDiscoveryFailed:
					outcome += "; restore refused: " + re.Cause.Error()
				default:
					t.Errorf("restore of a crashed creation = %v, want success or discovery_failed", err)
				}
			}
			if err := (func() error { _, err := defineRig(t, st).RestoreSession(ctx, other); return err })(); err != nil {
				t.Errorf("the other session no longer restores: %v", err)
			}
			t.Logf("%s#%d: %s", c.point, c.hit, outcome)
		})
	}
}
