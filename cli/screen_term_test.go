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
