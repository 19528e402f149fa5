// Package termrender renders the raw output of one turn the way a
// line-oriented terminal would, and lets nothing but looprig's own SGR
// sequences reach the user's terminal. Every view of a turn's output (the
// TUI, the CLI) draws it through this package.
//
// # Input
//
// A Renderer is fed the raw bytes of one turn incrementally (Write). Chunks
// may be split anywhere, inside an escape sequence or a UTF-8 character: the
// result never depends on where the chunks were split. The output is a list
// of lines of styled text.
//
// # What is kept
//
//   - Printable text (UTF-8). Each invalid byte becomes U+FFFD, as in
//     textsafe. Wide characters (East Asian, emoji) take two cells;
//     zero-width characters (combining marks, ZWJ, variation selectors)
//     attach to the cell before them.
//   - LF ('\n') goes to column 0 of the next line (as under a pty, where
//     the tty turns "\n" into "\r\n").
//   - CR ('\r') goes to column 0: what follows overwrites the line, so a
//     progress bar shows its last state.
//   - BS moves the cursor one cell left; TAB moves it to the next multiple
//     of 8 columns. Neither erases: cells passed over keep their content,
//     and a gap left before text written further right renders as spaces.
//   - CSI K, erase in line (0: to the end, 1: from the start, 2: whole
//     line). Erased cells are blank with default colours (no
//     background-colour erase).
//   - CSI n C / D (cursor forward / back), CSI n G (column n), CSI n A / B
//     (up / down) and CSI n F / E (up / down to column 0). Up is clamped at
//     the oldest line the renderer still holds (see Window) and never
//     reaches above the first line of the turn; down is clamped at the
//     newest line (the bottom of the "screen"): only LF adds lines.
//   - CSI row;col H (and f), CSI row d, CSI J (0: below, 1: above, 2: all
//     of the screen; 3, the scrollback, erases nothing) on the main
//     screen, for programs that draw there (top, watch): the screen is the
//     last ScreenRows lines of the turn, all of them while it has fewer,
//     and a row below the last line adds lines, as a screen's rows exist
//     before they are written. A frame drawn again overwrites the one
//     before, so the lines keep the last frame, not every frame
//     (mainscreen.go).
//   - SGR (CSI … m): bold 1, faint 2, italic 3, underline 4 (and 4:n, 21),
//     blink 5/6, reverse 7, strikethrough 9, their resets 22–25, 27, 29,
//     colours 30–37, 90–97, 40–47, 100–107, 38;5;n and 48;5;n, 38;2;r;g;b
//     and 48;2;r;g;b, the colon forms 38:5:n, 38:2:r:g:b and 38:2::r:g:b,
//     the resets 39, 49 and 0. Other SGR attributes (conceal 8, overline,
//     underline colour 58, fonts, …) are ignored.
//
// # What is dropped
//
// Dropped, never emitted in any form:
//
//   - every other CSI: scroll regions, insert/delete, mode switches (CSI ? … h/l),
//     and any CSI carrying a private marker (< = > ?) or an intermediate
//     byte, even with final 'm';
//   - the screen of a full-screen program (top, less, vim): from the
//     switch to the alternate screen (CSI ? 1049 h, 1047 h or 47 h) to the
//     switch back, nothing is shown; a notice line stands in its place
//     ("[full-screen program: its screen is not part of the line
//     output]") and another marks its end, so the transcript stays line
//     output (FullScreen says when a view that can draw a screen, such as
//     the TUI's, should feed the bytes to a terminal emulator instead);
//   - OSC, DCS, APC, PM and SOS strings, payload included (OSC 52
//     clipboard, OSC 8 hyperlinks: the link text that follows the OSC is
//     kept, the URL is not). A string ends at ST (ESC \) or BEL, or is
//     cancelled by CAN or SUB; an ESC followed by anything but '\' ends it
//     and starts a new escape sequence. A string never terminated is
//     bounded: after Options.MaxStringBytes payload bytes the renderer goes
//     back to text, so what follows is shown again;
//   - every other escape sequence (ESC c, ESC 7, ESC M, charset
//     designations, …);
//   - BEL, and SO and SI (the charset shifts that go with the dropped
//     designations: ncurses' sgr0 ends with SI on some terminals).
//
// Within an ESC or CSI sequence, C0 controls are carried out as in text
// (as a VT500 does), CAN and SUB cancel the sequence, DEL is ignored, and a byte
// of 0x80 or more cancels it and is then read as text.
//
// One rule for the remaining characters, the one of textsafe: they are
// shown, visible and inert. C0 controls other than the ones above, and DEL,
// in caret notation ("^@", "^K", "^L", "^?"); C1 controls encoded in UTF-8
// (U+0080–U+009F), the Unicode bidi controls and U+2028/U+2029 as
// "<U+XXXX>" (textsafe decides which runes these are). A raw C1 byte such
// as the 8-bit CSI 0x9B is invalid UTF-8 and becomes U+FFFD.
//
// Text without escape sequences, CR, BS, TAB, BEL, SO or SI — such as a journal
// recorded without a pty — therefore comes out exactly as
// textsafe.Sanitize shows it, as long as no line is longer than
// MaxLineCells.
//
// # Output
//
// Lines are rendered with SGR sequences produced by looprig from the cells'
// attributes, for a colour Profile: TrueColor, ANSI256, ANSI (16 colours)
// or NoColor (plain text, no escape sequence at all). Colours are
// downsampled to the profile with charmbracelet/x/ansi's Convert256 and
// Convert16. Each line is self-contained: it assumes no attributes at its
// start and ends with "\x1b[0m" if it set any, so it can be drawn, clipped
// or wrapped on its own. The sequences emitted have exactly this shape:
//
//	ESC [ P (; P)* m
//
// where the first P is "0" when the previous cell had attributes (reset,
// then set), and the others are, in this order: 1 2 3 4 5 7 9 (bold,
// faint, italic, underline, blink, reverse, strikethrough), the foreground
// (30–37, 90–97, 38;5;n or 38;2;r;g;b), the background (40–47, 100–107,
// 48;5;n or 48;2;r;g;b). Going back to no attributes is "ESC [ 0 m". So
// "\x1b[31mred\x1b[0m plain" renders, under ANSI, ANSI256 and TrueColor,
// as exactly "\x1b[31mred\x1b[0m plain". Colours 0–7 set as 38;5;n are
// emitted as 30+n, 8–15 as 90+n-8.
//
// # Bounds
//
// A line holds at most Options.MaxLineCells cells: text written past the
// end wraps onto the next line, as with a terminal's autowrap. The renderer
// holds at most Options.Window lines (the current one included) and at most
// about 2^20 cells in all: older lines are final (cursor-up cannot reach
// them any more), are rendered once and handed out by Final. Memory is
// therefore bounded whatever the input.
//
// A Renderer is not safe for concurrent use.
package termrender
