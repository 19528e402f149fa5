//go:build linux || darwin

package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"looprig/internal/termrender"
	"looprig/rig"
	"looprig/rig/storage/memstore"
)

// run on a terminal that nobody reads for a while: run's writes block,
// its subscription to the session falls behind and is lost, and its
// follower reads the journal again. The lines the output was on when
// that happened, partial ones included, are on the screen once.
func TestLiveLineAcrossALoss(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A checkpoint every 64 bytes: thousands of durable events, far more
	// than a subscription holds while run cannot read it.
	r, err := rig.Define(rig.WithStore(memstore.New()), rig.WithWorkspaces(t.TempDir()), rig.WithProfile(rig.DefaultProfile()),
		rig.WithCheckpoints(time.Millisecond, 64))
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	m, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer m.Close()
	defer tty.Close()
	if err := pty.Setsize(m, &pty.Winsize{Cols: 200, Rows: 50}); err != nil {
		t.Fatal(err)
	}

	e, _, _ := testEnv(false)
	e.stdout, e.cmd = tty, "run"
	c := &call{env: e, sig: &interrupts{ctx: ctx, force: make(chan struct{})}}
	tr := &turnRunner{c: c, s: localTurn{s}}
	const n = 10000
	code := make(chan int, 1)
	go func() {
		code <- tr.run(fmt.Sprintf(`printf 'first? '; sleep 0.3; for i in $(seq %d); do printf 'part-%%d ' $i; printf 'rest-%%d\n' $i; done; printf 'last? '; sleep 0.3; echo end`, n))
	}()
	// Nobody reads the terminal until the turn has ended.
	for st := s.Status(); st.Turns == 0 || st.Turn != nil; st = s.Status() {
		if ctx.Err() != nil {
			t.Fatal("the turn did not end")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var screen strings.Builder
	copied := make(chan struct{})
	go func() { io.Copy(&screen, m); close(copied) }()
	if got := <-code; got != exitOK {
		t.Fatalf("run exited %d", got)
	}
	tty.Close()
	<-copied
	if tr.follower.Recoveries() == 0 {
		t.Fatal("run's follower never fell behind: the test proves nothing")
	}

	// What the terminal shows: run's redraws done, line by line.
	got := strings.Split(strings.TrimSuffix(termrender.String(screen.String(), termrender.NoColor), "\n"), "\n")
	want := []string{"first? part-1 rest-1"}
	for i := 2; i <= n; i++ {
		want = append(want, fmt.Sprintf("part-%d rest-%d", i, i))
	}
	want = append(want, "last? end")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("line %d is %q, want %q (%d lines, want %d)", i, got[i], want[i], len(got), len(want))
			}
		}
		t.Fatalf("%d lines, want %d; the last: %q", len(got), len(want), got[len(got)-1])
	}
}
