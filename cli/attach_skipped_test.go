package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/storage/memstore"
)

// skippedBefore, which reads back from an attach point to the last turn
// started, says what a fold of the whole journal up to that point says:
// the last turn started, and whether it still ran. At every point of a
// journal of turns, output, a gate, inputs and a restore, read one, a few
// and many records at a time.
func TestSkippedBeforeMatchesAFoldOfTheJournal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st := memstore.New()
	p := rig.DefaultProfile()
	p.GatePolicy = []string{"rm -rf"}
	r, err := rig.Define(rig.WithStore(st), rig.WithWorkspaces(t.TempDir()), rig.WithProfile(p))
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id := s.SessionID()
	turn := func(input string, during func()) {
		t.Helper()
		if _, err := s.Submit(ctx, input); err != nil {
			t.Fatal(err)
		}
		if during != nil {
			during()
		}
		if err := s.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	turn("echo first", nil)
	turn("for i in 1 2 3 4 5 6; do echo line $i; sleep 0.2; done", nil)
	turn("read a; read b; echo \"got $a $b\"", func() {
		for _, line := range []string{"one\n", "two\n"} {
			for {
				if _, err := s.SendInput(ctx, rig.Input{Text: line, From: rig.ThisProcess("test")}); err == nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
	turn("rm -rf ./nothing", func() {
		for s.Status().Gate == nil {
			time.Sleep(10 * time.Millisecond)
		}
		if err := s.RespondGate(ctx, s.Status().Gate.ID, false, rig.ThisProcess("test")); err != nil {
			t.Fatal(err)
		}
	})
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	s, err = r.RestoreSession(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	turn("echo after the restore", nil)
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	tip, err := st.Tip(ctx, "sessions/"+id.String())
	if err != nil {
		t.Fatal(err)
	}

	// The oracle: the whole journal up to each point, folded.
	rp, err := rig.ReadEvents(ctx, st, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rp.Close()
	var fold rig.State
	want := make([]rig.State, tip+1)
	next := uint64(1)
	for rp.Next() {
		env := rp.Envelope()
		for ; next < env.Seq; next++ {
			want[next] = fold
		}
		fold.Apply(env)
		fold.Open = append([]rig.OpenTurn(nil), fold.Open...)
	}
	if err := rp.Err(); err != nil {
		t.Fatal(err)
	}
	for ; next <= tip; next++ {
		want[next] = fold
	}

	inside := 0
	for _, chunk := range []uint64{1, 3, 256} {
		for after := uint64(1); after <= tip; after++ {
			got, err := skippedBefore(ctx, st, id, after, chunk)
			if err != nil {
				t.Fatalf("after %d, chunk %d: %v", after, chunk, err)
			}
			w := want[after]
			if got.records != after || got.last != w.NextIndex-1 {
				t.Fatalf("after %d, chunk %d: %+v; want the last turn started %d", after, chunk, got, w.NextIndex-1)
			}
			switch wt := w.Turn(); {
			case wt == nil && got.open != nil:
				t.Fatalf("after %d, chunk %d: turn %d open, want none", after, chunk, got.open.Index)
			case wt != nil && (got.open == nil || *got.open != *wt):
				t.Fatalf("after %d, chunk %d: open %+v, want %+v", after, chunk, got.open, *wt)
			case wt != nil:
				inside++
			}
		}
	}
	if inside < 3*10 {
		t.Fatalf("only %d attach points inside a turn: the journal proves little", inside/3)
	}
}

// The note says how many records are not shown, the turns they hold, and
// where to read them.
func TestSkippedNote(t *testing.T) {
	log := "'looprig log abcd1234'"
	for _, tt := range []struct {
		s    skipped
		want string
	}{
		{skipped{records: 7, last: -1}, "records 1–7 are not shown here: 'looprig log abcd1234' shows them"},
		{skipped{records: 7, last: 0}, "records 1–7 are not shown here (turn 0): "},
		{skipped{records: 70, last: 4}, "records 1–70 are not shown here (turns 0–4): "},
		{skipped{records: 7, last: 0, open: &rig.OpenTurn{Index: 0}}, "(the start of turn 0): "},
		{skipped{records: 9, last: 1, open: &rig.OpenTurn{Index: 1}}, "(turn 0 and the start of turn 1): "},
		{skipped{records: 90, last: 5, open: &rig.OpenTurn{Index: 5}}, "(turns 0–4 and the start of turn 5): "},
	} {
		if got := tt.s.note(log); !strings.Contains(got, tt.want) {
			t.Errorf("%+v: %q, want it to contain %q", tt.s, got, tt.want)
		}
	}
}
