// Package faulttest holds fsstore's fault tests that need the whole
// runtime on top of the store: crashes at each step of the store's write
// paths (through the seams of fsstore/internal/seam), a full disk during
// appends, and a lease broken by another process while its holder appends.
//
// Helper processes: the test binary re-executes itself with
// FAULTTEST_HELPER naming a role; see runHelper.
package faulttest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/fsstore"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

const (
	envHelper  = "FAULTTEST_HELPER"  // the role of a helper process
	envDir     = "FAULTTEST_DIR"     // its store
	envSession = "FAULTTEST_SESSION" // the session it restores
	envPoint   = "FAULTTEST_POINT"   // crash: the seam point
	envHit     = "FAULTTEST_HIT"     // crash: die on this hit of the point
	envTear    = "FAULTTEST_TEAR"    // crash: tear the unsynced write first
)

// helperTimeout bounds every wait on a helper; generous for a loaded
// two-core machine.
const helperTimeout = 60 * time.Second

func TestMain(m *testing.M) {
	if role := os.Getenv(envHelper); role != "" {
		os.Exit(runHelper(role))
	}
	os.Exit(m.Run())
}

// chatty prints without end; turns running it stop only when interrupted.
const chatty = `i=0; while :; do i=$((i+1)); echo "line $i"; done`

// rigOptions are the options of every rig here, in the parent and in
// helpers alike (so restores see no drift): the default profile, and
// frequent small checkpoints so a printing turn appends continuously.
func rigOptions(st *fsstore.Store) []rig.Option {
	return []rig.Option{rig.WithStore(st), rig.WithWorkspaces(st.WorkspacesDir()), rig.WithCheckpoints(5*time.Millisecond, 2048)}
}

func defineRig(t testing.TB, st *fsstore.Store, extra ...rig.Option) *rig.Rig {
	t.Helper()
	r, err := rig.Define(append(rigOptions(st), extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func openStore(t testing.TB, dir string, opts ...fsstore.Option) *fsstore.Store {
	t.Helper()
	st, err := fsstore.Open(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// newStoppedSession creates a session with one finished turn and shuts it
// down cleanly.
func newStoppedSession(t testing.TB, dir string) uuid.UUID {
	t.Helper()
	st := openStore(t, dir)
	r := defineRig(t, st)
	ctx := context.Background()
	s, err := r.NewSession(ctx, rig.WithTitle("fault test"))
	if err != nil {
		t.Fatal(err)
	}
	sub := s.Subscribe(hub.Filter{AllLoops: true})
	if _, err := s.Submit(ctx, "echo first"); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, sub)
	sub.Close()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	id := s.SessionID()
	st.Close()
	return id
}

func waitTurnEnd(t testing.TB, sub *hub.Subscription) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), helperTimeout)
	defer cancel()
	for {
		batch, ok, err := sub.Next(ctx, 0)
		for _, env := range batch {
			switch env.Event.(type) {
			case event.TurnDone, event.TurnFailed, event.TurnInterrupted:
				return
			}
		}
		if err != nil || !ok {
			t.Fatalf("waiting for the turn's end: ok=%v err=%v sub=%v", ok, err, sub.Err())
		}
	}
}

// ---- helper processes ------------------------------------------------------

// helper is a running helper process and what it printed.
type helper struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *syncBuffer
	done   chan error
}

func startHelper(t *testing.T, role string, env ...string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), envHelper+"="+role), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, lines: make(chan string, 1<<16), stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = h.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); <-h.done })
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
		h.done <- cmd.Wait()
		close(h.done)
	}()
	return h
}

// waitLine returns the first line starting with prefix, skipping others
// (acks are collected by the caller through collect).
func (h *helper) waitLine(t *testing.T, prefix string, acked map[uint64]string) string {
	t.Helper()
	timeout := time.After(helperTimeout)
	for {
		select {
		case l, ok := <-h.lines:
			if !ok {
				t.Fatalf("helper ended before printing %q; stderr:\n%s", prefix, h.stderr)
			}
			if collectAck(t, l, acked) {
				continue
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-timeout:
			t.Fatalf("helper did not print %q within %v; stderr:\n%s", prefix, helperTimeout, h.stderr)
		}
	}
}

// wait drains the helper's output into acked (and returns the other
// lines) until it exits, and returns its wait status.
func (h *helper) wait(t *testing.T, acked map[uint64]string) (syscall.WaitStatus, []string) {
	t.Helper()
	var other []string
	timeout := time.After(helperTimeout)
	for {
		select {
		case l, ok := <-h.lines:
			if !ok {
				err := <-h.done
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					return ee.Sys().(syscall.WaitStatus), other
				}
				if err != nil {
					t.Fatalf("helper: %v", err)
				}
				return h.cmd.ProcessState.Sys().(syscall.WaitStatus), other
			}
			if !collectAck(t, l, acked) {
				other = append(other, l)
			}
		case <-timeout:
			t.Fatalf("helper did not exit within %v; stderr:\n%s", helperTimeout, h.stderr)
		}
	}
}

// collectAck records an "ack SEQ TYPE" line in acked.
func collectAck(t *testing.T, line string, acked map[uint64]string) bool {
	rest, ok := strings.CutPrefix(line, "ack ")
	if !ok {
		return false
	}
	seqStr, typ, _ := strings.Cut(rest, " ")
	seq, err := strconv.ParseUint(seqStr, 10, 64)
	if err != nil {
		t.Fatalf("helper printed %q", line)
	}
	if acked != nil {
		acked[seq] = typ
	}
	return true
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// out serialises the helper's stdout lines (acks come from a goroutine).
var out struct {
	sync.Mutex
}

func say(format string, args ...any) {
	out.Lock()
	defer out.Unlock()
	fmt.Fprintf(os.Stdout, format+"\n", args...)
}

// ackAll prints "ack SEQ TYPE" for every journaled event the session
// delivers, until the subscription ends. The hub delivers an enduring
// event only once its append is durable.
func ackAll(sub *hub.Subscription) {
	for env := range sub.C() {
		if env.Seq > 0 {
			say("ack %d %s", env.Seq, env.Event.Type())
		}
	}
}

func runHelper(role string) int {
	dir, idStr := os.Getenv(envDir), os.Getenv(envSession)
	id, err := uuid.Parse(idStr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: bad session id", idStr)
		return 2
	}
	switch role {
	case "create":
		return createHelper(dir)
	case "crash":
		return crashHelper(dir, id)
	case "appender":
		return appenderHelper(dir, id)
	}
	fmt.Fprintln(os.Stderr, "helper: unknown role", role)
	return 2
}

// ---- journal checks --------------------------------------------------------

func readJournal(t testing.TB, st storage.Store, id uuid.UUID) []journal.Record {
	t.Helper()
	rp, err := journal.NewReplayer(context.Background(), st, storage.SessionName(id.String()), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rp.Close()
	var recs []journal.Record
	for rp.Next() {
		recs = append(recs, rp.Record())
	}
	if err := rp.Err(); err != nil {
		t.Fatalf("replay: %v", err)
	}
	return recs
}

func typeOf(r journal.Record) string {
	switch r.Kind {
	case journal.KindFence:
		return "fence"
	case journal.KindCommand:
		return r.Command.Name
	}
	return string(r.Event.Type())
}

func turnOf(ev event.Event) (string, bool) {
	switch v := ev.(type) {
	case event.TurnDone:
		return v.TurnID, true
	case event.TurnFailed:
		return v.TurnID, true
	case event.TurnInterrupted:
		return v.TurnID, true
	}
	return "", false
}

// checkJournal checks a restored journal: contiguous sequences, every
// acknowledged record present with its type, fence epochs strictly
// increasing (a failed restore's re-fence at its own epoch right before
// RestoreErrored excepted), and exactly one end per started turn.
func checkJournal(t testing.TB, recs []journal.Record, acked map[uint64]string) {
	t.Helper()
	for i, r := range recs {
		if r.Seq != uint64(i+1) {
			t.Fatalf("record %d has seq %d", i+1, r.Seq)
		}
	}
	for seq, typ := range acked {
		if seq > uint64(len(recs)) || typeOf(recs[seq-1]) != typ {
			got := "missing"
			if seq <= uint64(len(recs)) {
				got = typeOf(recs[seq-1])
			}
			t.Errorf("acknowledged record %d %s is %s after the crash", seq, typ, got)
		}
	}
	var last uint64
	for i, r := range recs {
		if r.Kind != journal.KindFence {
			continue
		}
		// A failed restore re-fences at its own epoch to record RestoreErrored.
		refence := r.Epoch == last && (i+1 == len(recs) || typeOf(recs[i+1]) == "RestoreErrored" || recs[i+1].Kind == journal.KindFence)
		if r.Epoch <= last && !refence {
			t.Errorf("fence at %d has epoch %d after %d", r.Seq, r.Epoch, last)
		}
		last = r.Epoch
	}
	open := map[string]bool{}
	ended := map[string]bool{}
	for _, r := range recs {
		if r.Kind != journal.KindEvent {
			continue
		}
		if ts, ok := r.Event.(event.TurnStarted); ok {
			open[ts.TurnID] = true
			continue
		}
		if id, ok := turnOf(r.Event); ok {
			if !open[id] || ended[id] {
				t.Errorf("%s at %d: turn %s started %v, ended before %v", typeOf(r), r.Seq, id, open[id], ended[id])
			}
			ended[id] = true
			delete(open, id)
		}
	}
	for id := range open {
		t.Errorf("turn %s has no end", id)
	}
}

// restoreAndCheck reopens the store, checks the listing (never broken),
// restores the session, checks its journal, runs one more turn and shuts
// down. It returns the restored epoch.
func restoreAndCheck(t *testing.T, dir string, id uuid.UUID, acked map[uint64]string) uint64 {
	t.Helper()
	st := openStore(t, dir)
	ctx := context.Background()
	infos, err := rig.ListSessions(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		if in.State == rig.StateBroken {
			t.Fatalf("session %s is broken after the crash: %s", in.ID, in.Reason)
		}
		if in.State == rig.StateHeld || in.State == rig.StateLive {
			t.Fatalf("session %s is %s after its holder died", in.ID, in.State)
		}
	}
	r := defineRig(t, st)
	s, err := r.RestoreSession(ctx, id)
	if err != nil {
		t.Fatalf("restore after the crash: %v", err)
	}
	sub := s.Subscribe(hub.Filter{AllLoops: true})
	if _, err := s.Submit(ctx, "echo after"); err != nil {
		t.Fatalf("submit after restore: %v", err)
	}
	waitTurnEnd(t, sub)
	sub.Close()
	epoch := s.Epoch()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown after restore: %v", err)
	}
	checkJournal(t, readJournal(t, st, id), acked)
	st.Close()
	return epoch
}
