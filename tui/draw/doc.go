// Package draw runs a Bubble Tea program full screen and draws its frames
// itself: a frame is written as soon as one is pending, at most FPS a
// second, and nothing is written, and no timer runs, while the view stands
// still.
//
// Bubble Tea v1's renderer writes on a fixed ticker: a key's frame waits
// for the next tick (up to 33 ms at 30 frames a second), and every tick
// wakes an idle program. Here the program runs without that renderer;
// each Update is followed by the model's View, handed to a Drawer, whose
// goroutine writes the lines that changed (cursor-addressed, on the
// alternate screen) at once, unless the frames drawn lately used up the
// rate (a bucket of eight frames refilled at FPS a second), and then as soon
// as it allows. Frames submitted meanwhile are coalesced: only the latest
// is drawn.
//
// Run owns the terminal while the program runs: raw mode on its input,
// the alternate screen, a hidden cursor, bracketed paste, the window
// title, and the window's size (SIGWINCH becomes a tea.WindowSizeMsg). It
// restores all of them when the program ends, however it ends.
//
// A Drawer is also an io.Writer for what is not a frame (a bell, a
// desktop notification): such bytes are written whole, between two
// frames, never inside one, and writing them never blocks the caller.
package draw
