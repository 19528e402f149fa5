package cli

import (
	"testing"
	"time"
)

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.Local)
	for _, c := range []struct {
		in   string
		want time.Time
	}{
		{"2d", now.Add(-48 * time.Hour)},
		{"1w", now.Add(-7 * 24 * time.Hour)},
		{"3h", now.Add(-3 * time.Hour)},
		{"1h30m", now.Add(-90 * time.Minute)},
		{"2026-11-30", time.Date(2026, 11, 30, 0, 0, 0, 0, time.Local)},
	} {
		got, err := parseSince(c.in, now)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "d", "-2d", "yesterday", "2026-13-01"} {
		if _, err := parseSince(bad, now); err == nil {
			t.Errorf("parseSince(%q) took it", bad)
		}
	}
}
