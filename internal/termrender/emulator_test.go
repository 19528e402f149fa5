package termrender

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/vt"
)

// A program that sets a scroll region or left and right margins past
// the screen (its size lags a resize, or it is hostile) and then scrolls
// or edits within them: the emulator alone indexes out of range and
// panics, which killed the TUI, run and attach. The guarded screen
// ignores those margins and goes on drawing.
func TestScreenMarginsPastTheScreen(t *testing.T) {
	for _, seq := range []string{
		"\x1b[1;999r\x1bM",            // scroll region to row 999, reverse index
		"\x1b[;2r\x1bM",               // the same on a one-row screen (found by FuzzScreen)
		"\x1b[?69h\x1b[1;999s\x1b[5@", // left/right margins to column 999, insert characters
		"\x1b[?69h\x1b[1;999s\x1b[5P", // ... delete characters
	} {
		for _, size := range [][2]int{{120, 40}, {3, 1}} {
			emu := NewScreen(size[0], size[1])
			if err := WriteScreen(emu, []byte("\x1b[?1049h"+seq+"\x1b[Hok")); err != nil {
				t.Fatalf("%q at %dx%d: %v", seq, size[0], size[1], err)
			}
			if rows := ScreenRows(emu, NoColor, false); !strings.HasPrefix(rows[0], "ok") {
				t.Fatalf("%q at %dx%d: first row %q, want the text drawn after it", seq, size[0], size[1], rows[0])
			}
		}
	}
}

// Margins within the screen still work: the guard passes them on.
func TestScreenMarginsWithinTheScreen(t *testing.T) {
	emu := NewScreen(10, 4)
	// Region rows 2-3; a line feed at its bottom scrolls only it.
	WriteScreen(emu, []byte("\x1b[?1049h\x1b[1;1Htop\x1b[4;1Hbottom\x1b[2;3r\x1b[2;1Ha\x1b[3;1Hb\r\nc"))
	got := ScreenRows(emu, NoColor, false)
	want := []string{"top", "b", "c", "bottom"}
	for i := range want {
		if strings.TrimRight(got[i], " ") != want[i] {
			t.Fatalf("rows %q, want %q (the region scrolled alone)", got, want)
		}
	}
}

// What the guards do not know yet: a panic of the emulator is an error,
// and a Renderer then starts a blank screen, still the alternate one,
// that the program's next drawing fills.
func TestScreenPanicIsAnError(t *testing.T) {
	raw := vt.NewEmulator(120, 40) // no guards: this sequence panics
	if err := WriteScreen(raw, []byte("\x1b[1;999r\x1bM")); err == nil {
		t.Fatal("WriteScreen of a panicking emulator returned no error")
	}

	r := New(Options{})
	r.Write([]byte("\x1b[?1049hbefore"))
	if r.Screen() == nil {
		t.Fatal("no screen after entering the alternate screen")
	}
	r.scr = vt.NewEmulator(120, 40) // stands for an emulator with a bug the guards miss
	r.Write([]byte("\x1b[1;999r\x1bM"))
	r.Write([]byte("\x1b[Hafter"))
	scr := r.Screen()
	if scr == nil {
		t.Fatal("the output left the alternate screen after the emulator failed")
	}
	if row := ScreenRows(scr, NoColor, false)[0]; !strings.HasPrefix(row, "after") {
		t.Fatalf("first row %q after the emulator failed, want the program's next drawing", row)
	}
}
