package draw

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"

	"looprig/internal/termrender"
)

// screen is a terminal a Drawer writes to: every write is kept, in order,
// and fed to a virtual terminal.
type screen struct {
	mu     sync.Mutex
	emu    *vt.Emulator
	writes []string
}

func newScreen(t *testing.T, cols, rows int) *screen {
	t.Helper()
	emu := termrender.NewScreen(cols, rows)
	if emu == nil {
		t.Fatal("no virtual terminal")
	}
	return &screen{emu: emu}
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes = append(s.writes, string(p))
	if err := termrender.WriteScreen(s.emu, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// rows is the screen's text, one string per row, spaces on the right cut.
func (s *screen) rows() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rows []string
	for y := 0; y < s.emu.Height(); y++ {
		var b strings.Builder
		for x := 0; x < s.emu.Width(); x++ {
			switch c := s.emu.CellAt(x, y); {
			case c == nil:
				b.WriteByte(' ')
			case c.Width == 0: // the right half of a wide character
			case c.Content == "":
				b.WriteByte(' ')
			default:
				b.WriteString(c.Content)
			}
		}
		rows = append(rows, strings.TrimRight(b.String(), " "))
	}
	return rows
}

func (s *screen) written() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.writes...)
}

// waitRows waits (5 s at most) for the screen to read want.
func (s *screen) waitRows(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := s.rows()
		if strings.Join(got, "\n") == strings.Join(want, "\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("screen:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func startDrawer(t *testing.T, s *screen, fps, cols, rows int) *Drawer {
	t.Helper()
	d := NewDrawer(s, fps)
	d.Resize(cols, rows)
	d.Start()
	t.Cleanup(d.Close)
	return d
}

// TestDrawerRewritesOnlyChangedRows: a frame rewrites the rows that
// changed, each addressed, and leaves the others alone.
func TestDrawerRewritesOnlyChangedRows(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 20, 4)
	d := startDrawer(t, s, 1000, 20, 4)
	d.Submit("alpha\nbeta\ngamma")
	s.waitRows(t, "alpha", "beta", "gamma", "")
	n := len(s.written())
	d.Submit("alpha\nBETA\ngamma")
	s.waitRows(t, "alpha", "BETA", "gamma", "")
	w := s.written()
	if len(w) != n+1 {
		t.Fatalf("%d writes for one frame", len(w)-n)
	}
	if last := w[n]; last != "\x1b[2;1HBETA\x1b[K" {
		t.Fatalf("the second frame wrote %q; want its one changed row", last)
	}
}

// TestDrawerFitsTheScreen: rows wider than the screen are cut (a wide
// character is not split), a view taller than it keeps its last rows, and
// rows a shorter view no longer covers are erased.
func TestDrawerFitsTheScreen(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 6, 3)
	d := startDrawer(t, s, 1000, 6, 3)
	d.Submit("0123456789\n日本語日本\nx")
	s.waitRows(t, "012345", "日本語", "x")
	d.Submit("one\ntwo\nthree\nfour\nfive")
	s.waitRows(t, "three", "four", "five")
	d.Submit("only")
	s.waitRows(t, "only", "", "")
}

// TestDrawerResizeRepaints: after a resize every row is drawn again, on a
// screen that may have been cleared or reflowed by the terminal.
func TestDrawerResizeRepaints(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 10, 3)
	d := startDrawer(t, s, 1000, 10, 3)
	d.Submit("a\nb\nc")
	s.waitRows(t, "a", "b", "c")
	s.mu.Lock()
	_ = termrender.WriteScreen(s.emu, []byte("\x1b[2J")) // what a terminal may do to a resized screen
	s.mu.Unlock()
	d.Resize(8, 3)
	d.Submit("a\nb\nc") // the same view: drawn in full all the same
	s.waitRows(t, "a", "b", "c")
}

// TestDrawerRate: after burst frames drawn back to back, a frame waits
// for the rate (here an hour a frame: for ever in this test).
func TestDrawerRate(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 10, 2)
	d := NewDrawer(s, 1)
	d.interval = time.Hour
	d.Resize(10, 2)
	d.Start()
	defer d.Close()
	drawBurst(t, d, s)
	d.Submit("one more")
	time.Sleep(100 * time.Millisecond)
	if rows := s.rows(); rows[0] != fmt.Sprint("frame ", burst-1) {
		t.Fatalf("a frame past the burst drawn at once: %q", rows)
	}
}

// drawBurst submits burst frames one after another, each waited for on
// the screen: the bucket is empty after it.
func drawBurst(t *testing.T, d *Drawer, s *screen) {
	t.Helper()
	for i := range burst {
		frame := fmt.Sprint("frame ", i)
		d.Submit(frame)
		s.waitRows(t, frame, "")
	}
}

// TestDrawerCoalesces: frames submitted while the rate is used up are
// drawn once, the latest, when it allows; a view equal to the one shown
// writes nothing, and nothing is written while nothing is submitted.
func TestDrawerCoalesces(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 10, 2)
	d := startDrawer(t, s, 1, 10, 2) // a frame a second, burst at once
	drawBurst(t, d, s)
	d.Submit("third")
	d.Submit("fourth")
	s.waitRows(t, "fourth", "")
	d.Submit("fourth")
	time.Sleep(1200 * time.Millisecond) // past the interval: a frame would have been written
	for _, w := range s.written() {
		if strings.Contains(w, "third") {
			t.Fatalf("a frame replaced before its turn was drawn: %q", s.written())
		}
	}
	if w := s.written(); len(w) != burst+1 {
		t.Fatalf("writes %q; want the burst's frames and the fourth only", w)
	}
}

// TestDrawerWriteBetweenFrames: bytes written to the Drawer (a bell, a
// notification) reach the terminal whole, before the next frame, in a
// write of their own or at its start; after Close they are refused.
func TestDrawerWriteBetweenFrames(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 10, 2)
	d := startDrawer(t, s, 1000, 10, 2)
	d.Submit("x")
	s.waitRows(t, "x", "")
	seq := "\x1b]9;looprig: done\x07"
	if n, err := d.Write([]byte(seq)); n != len(seq) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	d.Submit("y")
	s.waitRows(t, "y", "")
	var all bytes.Buffer
	found := false
	for _, w := range s.written() {
		all.WriteString(w)
		found = found || strings.HasPrefix(w, seq)
	}
	if !found || strings.Index(all.String(), seq) > strings.Index(all.String(), "y") {
		t.Fatalf("writes %q: the sequence not whole at a write's start, before the frame", s.written())
	}
	d.Close()
	d.Close()
	if _, err := d.Write([]byte("\a")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close: %v, want ErrClosed", err)
	}
	d.Submit("z")
	time.Sleep(50 * time.Millisecond)
	if rows := s.rows(); rows[0] != "y" {
		t.Fatalf("drawn after Close: %q", rows)
	}
}
