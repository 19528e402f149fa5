package cli

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"looprig/internal/termrender"
)

// lockedBuf is our terminal, written by frames from the timer's goroutine.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.b.String(), s)
}

// A change to a program's screen that comes after a quiet spell of its
// output (a key's echo) is drawn at once, however recent the last frame;
// a change in output that goes on (a flood) waits for the frame after
// screenFrameEvery, and is drawn then.
func TestScreenFrames(t *testing.T) {
	out := &lockedBuf{}
	s := &screenTerm{out: out, started: true, cols: 40, rows: 5}
	r := termrender.New(termrender.Options{})
	s.fit(r)
	change := func(text string) {
		s.with(func() { r.WriteString(text) })
		s.want(r)
	}
	change("\x1b[?1049h\x1b[Hfirst")
	if !out.has("first") {
		t.Fatal("the first change was not drawn at once")
	}
	time.Sleep(2 * screenQuiet)
	change("\x1b[2;1Hecho-one") // less than screenFrameEvery after the last frame, after a quiet spell
	if !out.has("echo-one") {
		t.Fatal("a change after a quiet spell waited for the next frame")
	}
	// At once after the last: the output goes on (on a machine so loaded
	// that it was not at once, it is no flood).
	t0 := time.Now()
	change("\x1b[3;1Hflood")
	if out.has("flood") && time.Since(t0) < screenQuiet {
		t.Fatal("a change in output that goes on was drawn at once: floods are not coalesced")
	}
	for deadline := time.Now().Add(time.Second); !out.has("flood"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the flood's last state was never drawn")
		}
	}
	s.close()
}

// The echo of keys typed is drawn at once, even less than screenQuiet
// after the last change: one change at once for each send of keys (a
// second can go before the first's echo is back), none past maxEchoes
// for keys the program showed nothing for. Frames and quiet spells are
// a minute here: a change that waits for the frame timer does not show.
func TestScreenKeyEcho(t *testing.T) {
	out := &lockedBuf{}
	s := &screenTerm{out: out, started: true, cols: 40, rows: 5, testFrames: time.Minute}
	defer s.close()
	r := termrender.New(termrender.Options{})
	s.fit(r)
	n := 0
	change := func() string {
		n++
		text := "change-" + string(rune('a'+n))
		s.with(func() { r.WriteString("\x1b[?1049h\x1b[1;1H" + text) })
		s.want(r)
		return text
	}
	if !out.has(change()) {
		t.Fatal("the first change was not drawn at once")
	}
	if c := change(); out.has(c) {
		t.Fatal("a change right after the last was drawn at once: the frame interval is not the test's")
	}
	s.typed()
	if c := change(); !out.has(c) {
		t.Fatal("the echo of keys typed waited for the frame timer")
	}
	if c := change(); out.has(c) {
		t.Fatal("a second change after one send of keys was drawn at once")
	}
	s.typed()
	s.typed()
	for i := range 2 {
		if c := change(); !out.has(c) {
			t.Fatalf("the echo of send %d of 2 waited for the frame timer", i+1)
		}
	}
	for range maxEchoes + 3 {
		s.typed()
	}
	for i := range maxEchoes {
		if c := change(); !out.has(c) {
			t.Fatalf("change %d after many sends waited for the frame timer", i+1)
		}
	}
	if c := change(); out.has(c) {
		t.Fatalf("more than maxEchoes (%d) changes drawn at once for keys typed before them", maxEchoes)
	}
}
