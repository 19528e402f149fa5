package draw

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// sizeModel shows the last size it was told and the keys typed; q quits.
type sizeModel struct {
	size string
	keys string
}

func (m sizeModel) Init() tea.Cmd { return nil }

func (m sizeModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.size = fmt.Sprintf("%dx%d", msg.Width, msg.Height)
	case tea.KeyMsg:
		if msg.String() == "q" {
			return m, tea.Quit
		}
		m.keys += msg.String()
	}
	return m, nil
}

func (m sizeModel) View() string { return "size " + m.size + "\nkeys " + m.keys }

// ran is what Run returned.
type ran struct {
	m   tea.Model
	err error
}

// onPty starts Run with a sizeModel on a new pty of 40×6 (canonical, as a
// new pty is) and returns the pty's master and slave, a screen fed from
// the master, and what Run returns.
func onPty(t *testing.T, ctx context.Context) (*os.File, *os.File, *screen, <-chan ran) {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	t.Cleanup(func() { _ = master.Close(); _ = slave.Close() })
	if err := pty.Setsize(master, &pty.Winsize{Cols: 40, Rows: 6}); err != nil {
		t.Fatal(err)
	}
	s := newScreen(t, 40, 6)
	go func() { _, _ = io.Copy(s, master) }() // ends when the master closes
	if !canonical(t, slave) {
		t.Fatal("a new pty is not canonical")
	}
	d := NewDrawer(slave, 1000)
	final := make(chan ran, 1)
	go func() {
		m, err := Run(ctx, sizeModel{}, d, Terminal{In: slave, Out: slave, Title: "draw\x1b]0;test"})
		final <- ran{m, err}
	}()
	return master, slave, s, final
}

func canonical(t *testing.T, f *os.File) bool {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	if err != nil {
		t.Fatal(err)
	}
	return tio.Lflag&unix.ICANON != 0
}

// TestRunOnATerminal: Run puts the terminal in raw mode on the alternate
// screen, draws the program's frames, passes keys and the window's size
// (at start and on SIGWINCH) to it, and when it quits leaves the screen
// and restores the terminal as it was.
func TestRunOnATerminal(t *testing.T) {
	master, slave, s, final := onPty(t, context.Background())
	s.waitRows(t, "size 40x6", "keys", "", "", "", "")
	if canonical(t, slave) {
		t.Fatal("not in raw mode while the program runs")
	}
	if _, err := master.Write([]byte("ab")); err != nil {
		t.Fatal(err)
	}
	s.waitRows(t, "size 40x6", "keys ab", "", "", "", "")
	if err := pty.Setsize(master, &pty.Winsize{Cols: 30, Rows: 5}); err != nil {
		t.Fatal(err)
	}
	// The pty is not this process's controlling terminal: the kernel's
	// SIGWINCH goes elsewhere, so send it as the kernel would.
	if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	s.waitRows(t, "size 30x5", "keys ab", "", "", "", "")
	if _, err := master.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	var r ran
	select {
	case r = <-final:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after q")
	}
	if got, ok := r.m.(sizeModel); !ok || got.keys != "ab" || r.err != nil {
		t.Fatalf("Run = %#v, %v; want the program's final model", r.m, r.err)
	}
	if !canonical(t, slave) {
		t.Fatal("the terminal's mode not restored")
	}
	all := s.waitSuffix(t, leaveScreen)
	enter, leave := strings.Index(all, "\x1b[?1049h"), strings.LastIndex(all, "\x1b[?1049l")
	if enter < 0 || leave < enter || strings.Contains(all[leave:], "keys") {
		t.Fatalf("the alternate screen not entered, left last: %q", all)
	}
	if !strings.Contains(all, "\x1b]2;draw\x07") {
		t.Fatalf("the title not set, or not stripped of escapes: %q", all)
	}
}

// TestRunEndsWithItsContext: when ctx ends (SIGTERM, SIGHUP: the CLI's
// context) the program ends and the terminal is restored all the same.
func TestRunEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, slave, s, final := onPty(t, ctx)
	s.waitRows(t, "size 40x6", "keys", "", "", "", "")
	cancel()
	select {
	case <-final:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return when its context ended")
	}
	if !canonical(t, slave) {
		t.Fatal("the terminal's mode not restored")
	}
	s.waitSuffix(t, leaveScreen)
}

// waitSuffix waits (5 s at most) for all that was written to end with
// suffix, and returns it.
func (s *screen) waitSuffix(t *testing.T, suffix string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		all := strings.Join(s.written(), "")
		if strings.HasSuffix(all, suffix) {
			return all
		}
		if time.Now().After(deadline) {
			t.Fatalf("written %q; want it to end with %q", all, suffix)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
