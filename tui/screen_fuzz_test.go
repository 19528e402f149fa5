package tui

import (
	"fmt"
	"testing"
	"time"

	"looprig/internal/termrender"
)

// FuzzScreen: whatever a program writes, in whatever chunks and at
// whatever size, a screen neither panics nor hangs (the emulator is
// third-party code fed hostile bytes inside Update), and its rows hold
// only printable text and looprig's SGR.
func FuzzScreen(f *testing.F) {
	f.Add([]byte("\x1b[?1049h\x1b[2J\x1b[H\x1b[31mred\x1b[0m\x1b[5;5Hx"), uint16(7), uint8(0))
	f.Add([]byte("\x1b]52;c;SGVsbG8=\x07\x1b[6n\x1b[c\x1bP1$qm\x1b\\\x1b[?2048h"), uint16(3), uint8(1))
	f.Add([]byte("\x1b[38;2;1;2;3;48;5;200m日本\u202e\x1b[4:3m\x1b[r\x1b[3;2r\x1b[10M\x1b[10L\x1b[?6h\x1b[999;999H"), uint16(11), uint8(2))
	f.Add([]byte("\x1b[;2r\x1bM"), uint16(65), uint8(2)) // a scroll region past a one-row screen (found in CI)
	f.Fuzz(func(t *testing.T, data []byte, cut uint16, mode uint8) {
		done := make(chan struct{})
		go func() {
			select {
			case <-done:
			case <-time.After(30 * time.Second): // a hang, not a slow run
				panic(fmt.Sprintf("screen hangs on %q (cut %d, mode %d)", data, cut, mode))
			}
		}()
		defer close(done)
		s := newTurnScreen("t", 1+int(mode%40), 1+int(mode/40%12))
		s.opened = mode&1 == 1
		c := min(int(cut), len(data))
		feed(s, string(data[:c]))
		s.resize(1+int(cut%50), 1+int(cut%13))
		feed(s, string(data[c:]))
		for _, p := range []termrender.Profile{termrender.NoColor, termrender.TrueColor} {
			for i, r := range s.lines(p, mode&2 == 2) {
				if err := onlySGR(r); err != nil {
					t.Fatalf("row %d: %v: %q", i, err, r)
				}
			}
		}
	})
}
