package host

import (
	"sync/atomic"
	"testing"
	"time"
)

// withIdleTrim makes Serve trim after d with trim (counting calls).
func withIdleTrim(d time.Duration, trim func()) Option {
	return func(c *config) { c.idleTrimAfter, c.trim = d, trim }
}

// A host trims its memory once per idle spell: once after it starts
// (a restore's garbage), never while a turn runs, once after the turn
// has ended; a spell does not trim again however long it lasts.
func TestTrimOncePerIdleSpell(t *testing.T) {
	var trims atomic.Int32
	f := start(t, withIdleTrim(50*time.Millisecond, func() { trims.Add(1) }))
	eventually(t, "the first trim, after the host started", func() bool { return trims.Load() == 1 })

	c := f.dial()
	ti, err := c.Submit(wctx(t), "sleep 0.5")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // six trim delays into the turn
	if n := trims.Load(); n != 1 {
		t.Fatalf("%d trims while the turn ran, want still 1", n)
	}
	st, err := c.Subscribe(wctx(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	readUntil(t, st, turnEnd(ti.ID))
	eventually(t, "the trim after the turn ended", func() bool { return trims.Load() == 2 })
	time.Sleep(300 * time.Millisecond)
	if n := trims.Load(); n != 2 {
		t.Fatalf("%d trims in one idle spell, want 2 in all", n)
	}
}
