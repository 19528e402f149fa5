package termrender

import (
	"fmt"
	"io"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
)

// The virtual terminal (charmbracelet/x/vt) is third-party code fed a
// program's bytes, inside the TUI's Update and the CLI's output loop.
// Two of its handlers index past the screen when a program sets a margin
// beyond it (ESC [ 1;999 r, then a reverse index, panics with "index out
// of range"): NewScreen puts a guard in front of each. Against what is
// not known yet, WriteScreen turns a panic into an error, and its caller
// starts a fresh screen.

// enterAltScreen is what a fresh emulator is fed to stand for a screen
// that was on the alternate screen.
const enterAltScreen = "\x1b[?1049h"

// NewScreen returns a virtual terminal of cols×rows whose answers to
// queries are dropped: its input pipe is closed, so a query's answer fails
// at once rather than blocking (nil if that pipe cannot be closed).
func NewScreen(cols, rows int) *vt.Emulator {
	emu := vt.NewEmulator(max(1, cols), max(1, rows))
	// Nothing scrolls back here, and a scrollback costs a copy per line
	// scrolled off: keep one line, the least the emulator takes.
	emu.SetScrollbackSize(1)
	c, ok := emu.InputPipe().(io.Closer)
	if !ok || c.Close() != nil {
		return nil
	}
	guardMargins(emu)
	return emu
}

// guardMargins makes emu ignore a scroll region (DECSTBM, CSI top;bottom
// r) or left and right margins (DECSLRM, CSI left;right s) that end past
// the screen, which the emulator would keep and then index out of range
// with. A handler registered later runs first; returning true stops the
// sequence there, false passes it on to the emulator's own. A program
// whose size lags a resize keeps the margins it had, and draws again on
// the SIGWINCH.
func guardMargins(emu *vt.Emulator) {
	emu.RegisterCsiHandler('r', func(params ansi.Params) bool {
		bottom, _, _ := params.Param(1, 0)
		return bottom > emu.Height()
	})
	emu.RegisterCsiHandler('s', func(params ansi.Params) bool {
		right, _, _ := params.Param(1, 0)
		return right > emu.Width()
	})
}

// WriteScreen feeds p to emu. A panic of the emulator is returned as an
// error; emu's state is then unknown, and the caller replaces it.
func WriteScreen(emu *vt.Emulator, p []byte) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("termrender: the virtual terminal failed on a program's output: %v", v)
		}
	}()
	_, err = emu.Write(p)
	return err
}
