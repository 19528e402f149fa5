package rig_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/hub"
	"looprig/rig/storage/memstore"
)

// holdCheckpoints holds every checkpoint once it has stored all its files
// (its last progress report), until released: a checkpoint as long as a
// test needs, without relying on a slow disk.
type holdCheckpoints struct {
	held    chan struct{} // one value per checkpoint held
	release chan struct{}
	once    sync.Once
}

func newHold() *holdCheckpoints {
	return &holdCheckpoints{held: make(chan struct{}, 16), release: make(chan struct{})}
}

func (h *holdCheckpoints) hook(id string, p rig.CheckpointProgress) {
	if p.Files == 0 || p.FilesDone < p.Files {
		return
	}
	h.held <- struct{}{}
	<-h.release
}

func (h *holdCheckpoints) let() { h.once.Do(func() { close(h.release) }) }

// While the checkpoint after a turn's end runs, the session says it is
// checkpointing (Status, its catalog entry, the listing), not that the
// turn runs; its journal says it is not idle yet; a turn submitted
// meanwhile waits for it, told how far it is, and then runs.
func TestCheckpointInProgress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hold := newHold()
	defer hold.let()
	store := memstore.New()
	r, err := rig.Define(rig.WithStore(store), rig.WithWorkspaces(t.TempDir()), rig.WithProfile(rig.DefaultProfile()),
		rig.WithCheckpointProgress(hold.hook))
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		hold.let()
		s.Shutdown(context.Background())
	}()
	sub := s.Subscribe(hub.Filter{})
	defer sub.Close()
	first, err := s.Submit(ctx, "mkdir d && for i in $(seq 50); do echo $i > d/f$i; done")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-hold.held:
	case <-ctx.Done():
		t.Fatal("the turn's checkpoint never stored its files")
	}

	st := s.Status()
	if st.Turn != nil {
		t.Errorf("Status().Turn = %+v while the ended turn's checkpoint runs, want nil", st.Turn)
	}
	p := st.Checkpointing
	if p == nil || p.Trigger != event.TriggerTurn || p.TurnID != first.ID || p.Files != 50 || p.FilesDone != 50 {
		t.Fatalf("Status().Checkpointing = %+v, want the turn's, 50 of 50 files", p)
	}

	// The catalog says so too, once the checkpoint has run for a moment.
	deadline := time.Now().Add(10 * time.Second)
	for {
		infos, err := rig.ListSessions(ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		if len(infos) == 1 && infos[0].Checkpointing != nil {
			in := infos[0]
			if in.OpenTurn != "" || in.Checkpointing.Files != 50 || in.Checkpointing.TurnID != first.ID {
				t.Errorf("listing while checkpointing: open turn %q, checkpointing %+v", in.OpenTurn, in.Checkpointing)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the listing never said the session is checkpointing: %+v", infos)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The journal's fold: the turn ended, the session is not idle yet.
	var fold rig.State
	drain := func() {
		for {
			select {
			case env, ok := <-sub.C():
				if !ok {
					return
				}
				fold.Apply(env)
			default:
				return
			}
		}
	}
	drain()
	if fold.Turn() != nil || fold.Idle() || !fold.Finishing() {
		t.Errorf("fold while checkpointing: turn %+v, idle %v, finishing %v; want no turn, finishing", fold.Turn(), fold.Idle(), fold.Finishing())
	}

	// A turn submitted now waits for the checkpoint, told how far it is.
	var reports []rig.CheckpointProgress
	var mu sync.Mutex
	waited := make(chan error, 1)
	go func() {
		waited <- s.WaitCheckpoint(ctx, func(p rig.CheckpointProgress) {
			mu.Lock()
			reports = append(reports, p)
			mu.Unlock()
		})
	}()
	time.Sleep(600 * time.Millisecond)
	select {
	case err := <-waited:
		t.Fatalf("WaitCheckpoint returned %v while the checkpoint runs", err)
	default:
	}
	// Submit with a short bound meanwhile: refused, saying why.
	sctx, scancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = s.Submit(sctx, "true")
	scancel()
	var busy *rig.BusyError
	if !errors.As(err, &busy) || !busy.Checkpointing || busy.TurnID != first.ID {
		t.Errorf("Submit during the checkpoint with a 100 ms bound: %v, want a BusyError saying it checkpoints", err)
	}
	hold.let()
	if err := <-waited; err != nil {
		t.Fatalf("WaitCheckpoint: %v", err)
	}
	mu.Lock()
	n := len(reports)
	mu.Unlock()
	if n < 2 || reports[0].Files != 50 {
		t.Errorf("WaitCheckpoint reported %d times (%+v), want the progress every quarter of a second", n, reports)
	}
	if st := s.Status(); st.Checkpointing != nil {
		t.Errorf("Status().Checkpointing = %+v after the checkpoint", st.Checkpointing)
	}
	second, err := s.Submit(ctx, "true")
	if err != nil {
		t.Fatalf("Submit after the checkpoint: %v", err)
	}
	if second.Index != first.Index+1 {
		t.Errorf("second turn's index %d", second.Index)
	}
	if err := s.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	// The journal says the session went idle after the checkpoint.
	fold = rig.State{}
	rp, err := rig.ReadEvents(ctx, store, s.SessionID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var order []event.Type
	for rp.Next() {
		fold.Apply(rp.Envelope())
		switch ty := rp.Envelope().Event.Type(); ty {
		case event.TypeTurnDone, event.TypeWorkspaceCheckpointed, event.TypeSessionIdle:
			order = append(order, ty)
		}
	}
	rp.Close()
	if len(order) < 3 || order[0] != event.TypeTurnDone || order[1] != event.TypeWorkspaceCheckpointed || order[2] != event.TypeSessionIdle {
		t.Errorf("journal order %v, want TurnDone, WorkspaceCheckpointed, SessionIdle", order)
	}
	if !fold.Idle() {
		t.Errorf("fold after the last turn: not idle")
	}
}
