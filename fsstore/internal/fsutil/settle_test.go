package fsutil

import (
	"testing"
	"time"
)

// A file time is a stamp once several clock ticks old; a time without
// nanoseconds (a file system that keeps whole seconds) only two seconds
// later, since the next change in the same second leaves the same time.
func TestSettled(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 10, 500_000_000, time.UTC)
	for _, c := range []struct {
		t    time.Time
		want bool
	}{
		{now.Add(-50 * time.Millisecond), false},
		{now.Add(-150 * time.Millisecond), true},
		{now.Add(-500 * time.Millisecond), false}, // 12:00:10.000: whole seconds
		{now.Add(-1500 * time.Millisecond), false},
		{now.Add(-2500 * time.Millisecond), true},
		{now.Add(time.Second), false}, // from a clock set back
	} {
		if got := Settled(c.t, now); got != c.want {
			t.Errorf("Settled(%s, %s) = %v, want %v", c.t.Format("15:04:05.000000000"), now.Format("15:04:05.000"), got, c.want)
		}
	}
}
