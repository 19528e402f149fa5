package draw

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/term"
)

// The terminal modes Run sets, and unsets when the program ends.
const (
	enterScreen = "\x1b[?1049h" + ansi.EraseEntireScreen + ansi.CursorHomePosition + // the alternate screen, cleared
		"\x1b[?25l" + // the cursor hidden
		"\x1b[?2004h" // bracketed paste: a paste arrives as one, not as typed keys
	leaveScreen = "\x1b[?2004l" + "\x1b[?25h" + "\x1b[?1049l"
)

// Terminal is the terminal a program runs on.
type Terminal struct {
	// In is read for keys: nil is os.Stdin, or /dev/tty when standard
	// input is not a terminal.
	In *os.File
	// Out is the terminal drawn on (its size is read from it, the modes
	// written to it): nil is os.Stdout. The Drawer writes its frames to
	// the same terminal.
	Out *os.File
	// Title is the window's title ("" leaves it).
	Title string
}

// Run runs m as a Bubble Tea program full screen on t, its frames drawn by
// d (started here, closed when Run returns), until the program quits or
// ctx ends. It returns the final model and Bubble Tea's error.
func Run(ctx context.Context, m tea.Model, d *Drawer, t Terminal) (tea.Model, error) {
	in, out := t.In, t.Out
	if out == nil {
		out = os.Stdout
	}
	if in == nil {
		in = os.Stdin
		if !term.IsTerminal(in.Fd()) {
			tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
			if err != nil {
				return m, fmt.Errorf("draw: standard input is not a terminal, and %w", err)
			}
			defer tty.Close()
			in = tty
		}
	}
	saved, err := term.MakeRaw(in.Fd())
	if err != nil {
		return m, fmt.Errorf("draw: raw mode on %s: %w", in.Name(), err)
	}
	defer func() { _ = term.Restore(in.Fd(), saved) }()

	enter := enterScreen
	if t.Title != "" {
		enter += ansi.SetWindowTitle(ansi.Strip(t.Title))
	}
	if _, err := io.WriteString(out, enter); err != nil {
		return m, fmt.Errorf("draw: %s: %w", out.Name(), err)
	}
	defer func() { _, _ = io.WriteString(out, leaveScreen) }()
	if w, h, err := term.GetSize(out.Fd()); err == nil {
		d.Resize(w, h) // the first frame's size
	}
	d.Start()
	defer d.Close() // before the screen is left: no frame after it

	p := tea.NewProgram(program{inner: m, d: d},
		tea.WithInput(in), tea.WithOutput(out), tea.WithoutRenderer())
	ran := make(chan struct{})
	defer close(ran)
	go quitWith(ctx, p, ran)
	resized := make(chan os.Signal, 1)
	signal.Notify(resized, syscall.SIGWINCH)
	defer signal.Stop(resized)
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		watchSize(p, out, resized, stop)
	}()
	defer func() {
		close(stop)
		<-watched // p.Send returns once the program has ended
	}()

	final, err := p.Run()
	if pm, ok := final.(program); ok {
		return pm.inner, err
	}
	return m, err
}

// quitWait is how long a program whose context ended has to quit before
// it is killed.
const quitWait = 2 * time.Second

// quitWith quits p when ctx ends, and kills it if it has not ended
// quitWait later; it returns when ran closes. A quit, unlike Bubble Tea's
// kill (what a context given to it does), waits for its input reader to
// stop before the program returns.
func quitWith(ctx context.Context, p *tea.Program, ran <-chan struct{}) {
	select {
	case <-ran:
		return
	case <-ctx.Done():
	}
	go p.Quit() // returns once the program reads it or has ended
	t := time.NewTimer(quitWait)
	defer t.Stop()
	select {
	case <-ran:
	case <-t.C:
		p.Kill()
	}
}

// watchSize sends the program out's size, then again on each SIGWINCH,
// until stop closes. A size that cannot be read is not sent.
func watchSize(p *tea.Program, out *os.File, resized <-chan os.Signal, stop <-chan struct{}) {
	for {
		if w, h, err := term.GetSize(out.Fd()); err == nil {
			p.Send(tea.WindowSizeMsg{Width: w, Height: h})
		}
		select {
		case <-stop:
			return
		case <-resized:
		}
	}
}

// program is the model Bubble Tea runs: inner's, each of its views handed
// to the Drawer as it is made. Bubble Tea's own renderer is off, so its
// View is never drawn.
type program struct {
	inner tea.Model
	d     *Drawer
}

func (p program) Init() tea.Cmd {
	p.d.Submit(p.inner.View())
	return p.inner.Init()
}

func (p program) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if size, ok := msg.(tea.WindowSizeMsg); ok {
		p.d.Resize(size.Width, size.Height)
	}
	var cmd tea.Cmd
	p.inner, cmd = p.inner.Update(msg)
	p.d.Submit(p.inner.View())
	return p, cmd
}

func (program) View() string { return "" }
