package host

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/explain"
	"looprig/rig/fault"
)

// What a starting host says of its restore before its report reaches the
// starter, in order, the last bytes included; then its report.
func TestStartProgress(t *testing.T) {
	var mu sync.Mutex
	var got []MaterializeProgress
	_, err := Start(wctx(t), StartSpec{Args: []string{"-test.run=^$"}, Env: append(os.Environ(), helperEnv+"=progress"),
		Progress: func(p Progress) {
			if p.Materialize == nil || p.Checkpoint != nil {
				t.Errorf("progress %+v, want a materialize report", p)
				return
			}
			mu.Lock()
			got = append(got, *p.Materialize)
			mu.Unlock()
		}})
	var re *RemoteError
	if !errors.As(err, &re) || explain.Explain(err).Kind != fault.KindUnknownProfile {
		t.Fatalf("Start: %v, want the host's failure after its progress", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 2 || got[len(got)-1] != (MaterializeProgress{Done: 100, Total: 100}) {
		t.Fatalf("progress %+v, want several reports ending with 100 of 100", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Done < got[i-1].Done {
			t.Fatalf("progress out of order: %+v", got)
		}
	}
}

// holder holds each checkpoint once it has stored all its files (its last
// progress report), until let.
type holder struct {
	held    chan struct{}
	release chan struct{}
	once    sync.Once
}

func newHolder() *holder {
	return &holder{held: make(chan struct{}, 16), release: make(chan struct{})}
}

func (h *holder) hook(_ string, p rig.CheckpointProgress) {
	if p.Files > 0 && p.FilesDone == p.Files {
		h.held <- struct{}{}
		<-h.release
	}
}

func (h *holder) let() { h.once.Do(func() { close(h.release) }) }

// A turn submitted while the host checkpoints the workspace after the
// last turn waits for the checkpoint, longer than a request's bound if
// need be, its client told how far it is every quarter of a second; the
// status says the session checkpoints and no turn runs.
func TestSubmitWaitsForTheCheckpoint(t *testing.T) {
	h := newHolder()
	defer h.let()
	// Requests are bounded by a second here: the wait is longer.
	f := startWith(t, []rig.Option{rig.WithCheckpointProgress(h.hook)}, WithRequestTimeout(time.Second))
	c := f.dial()
	first, err := c.Submit(wctx(t), "for i in $(seq 20); do echo $i > f$i; done")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.held:
	case <-wctx(t).Done():
		t.Fatal("the turn's checkpoint was never held")
	}
	st, err := c.Status(wctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if st.Turn != nil || st.Checkpointing == nil || st.Checkpointing.TurnID != first.ID || st.Checkpointing.Trigger != event.TriggerTurn ||
		st.Checkpointing.Files != 20 {
		t.Fatalf("status while checkpointing: turn %+v, checkpointing %+v", st.Turn, st.Checkpointing)
	}

	var mu sync.Mutex
	var reports []Progress
	type submitted struct {
		ti  rig.TurnInfo
		err error
	}
	done := make(chan submitted, 1)
	go func() {
		ti, err := c.Submit(wctx(t), "echo second", WithSilence(2*time.Second), WithProgress(func(p Progress) {
			mu.Lock()
			reports = append(reports, p)
			mu.Unlock()
		}))
		done <- submitted{ti, err}
	}()
	// Longer than the silence bound: the reports keep the call alive.
	time.Sleep(3 * time.Second)
	select {
	case s := <-done:
		t.Fatalf("the submit returned while the checkpoint is held: %+v %v", s.ti, s.err)
	default:
	}
	h.let()
	s := <-done
	if s.err != nil || s.ti.Index != first.Index+1 {
		t.Fatalf("the submit after the checkpoint: %+v %v", s.ti, s.err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reports) < 4 {
		t.Fatalf("%d progress reports in 3 s, want one every quarter of a second", len(reports))
	}
	for _, p := range reports {
		if p.Checkpoint != nil && p.Checkpoint.Trigger == event.TriggerTurnStart {
			continue // once it was let go: the look at the workspace before the second turn (nothing changed, nothing journaled)
		}
		if p.Checkpoint == nil || p.Checkpoint.TurnID != first.ID || p.Checkpoint.Files != 20 || p.Checkpoint.FilesDone != 20 {
			t.Fatalf("progress report %+v, want the first turn's checkpoint, 20 of 20 files", p.Checkpoint)
		}
	}
}

// A host that says nothing is given up on after the silence bound, with
// an error that says so and is a timeout.
func TestSilenceBound(t *testing.T) {
	h := newHolder()
	defer h.let()
	f := startWith(t, []rig.Option{rig.WithCheckpointProgress(h.hook)})
	c := f.dial()
	if _, err := c.Submit(wctx(t), "echo x > f"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.held:
	case <-wctx(t).Done():
		t.Fatal("the turn's checkpoint was never held")
	}
	// A bound shorter than the host's first report (a quarter of a
	// second) passes in silence.
	start := time.Now()
	_, err := c.Submit(wctx(t), "true", WithSilence(50*time.Millisecond))
	var silent *SilenceError
	if !errors.As(err, &silent) || silent.Request != "submit" || !errors.Is(err, context.DeadlineExceeded) ||
		explain.Explain(err).Kind != fault.KindTimeout {
		t.Fatalf("Submit with a 50 ms silence bound during a held checkpoint: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("gave up after %s", d)
	}
	h.let()
}

// A shutdown that waits for a turn slow to stop (it ignores SIGTERM for
// a while) tells its client every quarter of a second that the host is
// at it, checkpoint or not: a client bounding the call by a second of
// silence waits it out.
func TestShutdownSaysItIsAlive(t *testing.T) {
	f := start(t)
	c := f.dial()
	if _, err := c.Submit(wctx(t), `trap 'sleep 1.5; exit 0' TERM; echo ready; while :; do sleep 0.05; done`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	var heard int
	start := time.Now()
	err := c.Shutdown(wctx(t), WithSilence(time.Second), WithProgress(func(Progress) { heard++ }))
	if err != nil {
		t.Fatalf("Shutdown with a second of silence allowed, of a turn that takes 1.5 s to stop: %v", err)
	}
	if d := time.Since(start); d < time.Second || heard < 3 {
		t.Errorf("the shutdown took %s and said it was alive %d times; want over a second, and word every quarter of a second", d, heard)
	}
}
