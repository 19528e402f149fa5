package rig_test

import (
	"context"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/hub"
	"looprig/rig/journal"
	"looprig/rig/storage/memstore"
)

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	r, err := rig.Define(rig.WithStore(st), rig.WithWorkspaces(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.NewSession(ctx, rig.WithTitle("smoke"))
	if err != nil {
		t.Fatal(err)
	}
	sub := s.Subscribe(hub.Filter{AllLoops: true})
	ti, err := s.Submit(ctx, "echo hello; pwd")
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.WaitIdle(wctx); err != nil {
		t.Fatal(err)
	}
	n := 0
	for len(sub.C()) > 0 {
		env := <-sub.C()
		t.Logf("event seq=%d %s %+v", env.Seq, env.Event.Type(), env.Event)
		n++
	}
	t.Logf("turn %+v, %d events", ti, n)
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	s2, err := r.RestoreSession(ctx, s.SessionID())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("restored %+v", s2.Restored())
	if err := s2.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	rp, _ := journal.NewReplayer(ctx, st, "sessions/"+s.SessionID().String(), 0)
	for rp.Next() {
		rec := rp.Record()
		t.Logf("%d %s %v %+v", rec.Seq, rec.Kind, rec.Epoch, rec.Event)
	}
	if rp.Err() != nil {
		t.Fatal(rp.Err())
	}
}
