package termrender

import (
	"bytes"
	"unicode/utf8"

	"github.com/charmbracelet/x/vt"
)

// Profile is the colour capability of the terminal the lines are drawn on.
type Profile uint8

// Colour profiles, from none to 24-bit.
const (
	// NoColor emits no escape sequence at all: plain text.
	NoColor Profile = iota
	// ANSI emits the 16 basic colours (30–37, 90–97, 40–47, 100–107).
	ANSI
	// ANSI256 emits the 16 basic colours and 38;5;n / 48;5;n.
	ANSI256
	// TrueColor emits colours as they were set, 38;2;r;g;b included.
	TrueColor
)

// Defaults for the zero fields of Options.
const (
	DefaultMaxLineCells   = 64 << 10
	DefaultWindow         = 200
	DefaultMaxStringBytes = 64 << 10
)

// heldCellBudget bounds the cells held in the window in all: past it, the
// oldest lines are made final early (never the cursor's line).
const heldCellBudget = 1 << 20

// Options configure a Renderer. The zero value is valid: NoColor and the
// defaults.
type Options struct {
	// Profile is the colour profile of the emitted lines.
	Profile Profile
	// MaxLineCells is the most cells a line holds; text past it wraps onto
	// the next line. 0 means DefaultMaxLineCells; the minimum is 2.
	MaxLineCells int
	// Window is the most lines held (the current one included): the lines
	// a cursor-up can still reach. Older lines are final. 0 means
	// DefaultWindow; the minimum is 1.
	Window int
	// MaxStringBytes is the most payload bytes of an OSC, DCS, APC, PM or
	// SOS string dropped before the renderer gives up waiting for its
	// terminator and reads text again. 0 means DefaultMaxStringBytes.
	MaxStringBytes int
	// ScreenCols and ScreenRows are the size of the terminal a full-screen
	// program drew on (see Flush). 0 means DefaultScreenCols and
	// DefaultScreenRows.
	ScreenCols, ScreenRows int
	// NoScreen: the view keeps a full-screen program's screen itself (it
	// shows it live, and renders it with ScreenRows when the output ends
	// on it); the renderer keeps none.
	NoScreen bool
}

// contRune marks the right half of a wide character.
const contRune rune = -1

// cell is one column of a line. r == 0 is a cell never written (or
// erased): a space with no attributes.
type cell struct {
	r  rune
	st style
}

type line struct {
	cells []cell
	comb  map[int]string // zero-width runes attached to a cell
	out   string         // rendered, valid when !dirty
	dirty bool
}

// maxCombBytes bounds the zero-width runes attached to one cell.
const maxCombBytes = 32

// Renderer renders one turn's output. Create it with New, feed it with
// Write, take the lines with Final, Pending and Flush.
type Renderer struct {
	prof   Profile
	max    int // MaxLineCells
	window int
	maxStr int
	budget int

	rows []*line // ring of window lines
	head int     // index in rows of the oldest held line
	n    int     // lines held, >= 1
	row  int     // cursor line, 0 = oldest held
	col  int     // cursor column, 0..max (max: past the end, wraps on print)
	cur  *line   // rows[head+row]
	held int     // cells held in all
	// evicted counts the lines made final: the held line i is the turn's
	// line evicted+i (mainscreen.go).
	evicted int
	// floor is the turn's line where the screen starts at the least: the
	// one below the text a clear kept (mainscreen.go).
	floor int

	st  style // the pen
	alt bool  // a full-screen program has the alternate screen

	// scr is the virtual terminal the alternate screen's output is fed to
	// while the output has it (screen.go), nil otherwise.
	scr              *vt.Emulator
	scrCols, scrRows int
	keys             ScreenKeys   // the modes of scr's program (frame.go)
	escTail          []byte       // the start of the escape sequence the last Write ended in
	strs             StringFilter // what scr is fed goes through it (screen.go)
	noScr            bool         // Options.NoScreen

	// parser
	state uint8
	strN  int
	pv    [maxParams]int32 // CSI parameters, -1 when empty
	psub  [maxParams]bool  // pv[i] is a sub-parameter (after ':')
	np    int
	pcur  int32
	sub   bool
	priv  bool              // CSI ? …: a private mode (see privateMode)
	ub    [utf8.UTFMax]byte // incomplete UTF-8 character at the end of a Write
	nu    int

	final   []string
	sink    []byte // String: final lines go here instead of final
	useSink bool
	scratch []byte
	conv    map[uint32]uint32
}

// New returns a Renderer for one turn.
func New(o Options) *Renderer {
	r := &Renderer{
		prof:    o.Profile,
		max:     o.MaxLineCells,
		window:  o.Window,
		maxStr:  o.MaxStringBytes,
		scrCols: o.ScreenCols,
		scrRows: o.ScreenRows,
		noScr:   o.NoScreen,
	}
	if r.scrCols <= 0 {
		r.scrCols = DefaultScreenCols
	}
	if r.scrRows <= 0 {
		r.scrRows = DefaultScreenRows
	}
	if r.prof > TrueColor {
		r.prof = TrueColor
	}
	if r.max <= 0 {
		r.max = DefaultMaxLineCells
	}
	r.max = max(r.max, 2)
	if r.window <= 0 {
		r.window = DefaultWindow
	}
	if r.maxStr <= 0 {
		r.maxStr = DefaultMaxStringBytes
	}
	r.budget = max(heldCellBudget, 4*r.max)
	r.rows = make([]*line, r.window)
	r.newLine()
	return r
}

// Write feeds output bytes to the renderer. It never fails.
func (r *Renderer) Write(p []byte) (int, error) {
	n := len(p)
	raw := p
	wasAlt := r.alt
	if r.nu > 0 {
		p = r.finishRune(p)
	}
	r.feed(p)
	if (wasAlt || r.alt) && !r.noScr {
		// This chunk has, or had, the alternate screen: the virtual
		// terminal sees it whole, its own switches included, and the
		// start of a sequence the previous chunk ended in.
		if !wasAlt && len(r.escTail) > 0 {
			r.feedScreen(r.escTail)
		}
		r.feedScreen(raw)
		if !r.alt {
			r.scr = nil // the program left its screen
		}
	}
	r.keepEscTail(raw)
	return n, nil
}

// keepEscTail keeps the bytes of an escape sequence p ends in (up to
// escTailMax), for the virtual terminal of a screen the sequence may
// open.
func (r *Renderer) keepEscTail(p []byte) {
	const escTailMax = 64
	if r.state == sGround {
		r.escTail = r.escTail[:0]
		return
	}
	if i := bytes.LastIndexByte(p, 0x1b); i >= 0 {
		p = p[i:]
		r.escTail = r.escTail[:0]
	}
	if len(r.escTail)+len(p) <= escTailMax {
		r.escTail = append(r.escTail, p...)
	}
}

// WriteString is Write for a string.
func (r *Renderer) WriteString(s string) (int, error) {
	return r.Write([]byte(s))
}

// FullScreen says whether a full-screen program has the alternate screen
// at the end of what was written so far: its screen is not rendered here
// (a notice line stands in for it), so a view that can show a screen may
// feed the same bytes to a terminal emulator meanwhile.
func (r *Renderer) FullScreen() bool { return r.alt }

// Final returns the lines that became final since the last call: they
// can no longer change. Call it after each Write (or regularly): the
// renderer keeps them until then.
func (r *Renderer) Final() []string {
	out := r.final
	r.final = nil
	return out
}

// Pending returns the lines still held, oldest first: they may still
// change. An empty last line (the cursor's, after a final "\n") is left
// out. Shown after everything Final returned, they are the output so far.
func (r *Renderer) Pending() []string {
	n := r.n
	if r.lineAt(n - 1).empty() {
		n--
	}
	out := make([]string, n)
	for i := range n {
		out[i] = r.render(r.lineAt(i))
	}
	return out
}

// Flush ends the turn: an incomplete UTF-8 character at the end becomes
// U+FFFD, an unterminated escape sequence is dropped, and every line not
// returned by Final yet is returned (Final's, then Pending's). When the
// output ended on a full-screen program's alternate screen, the text of
// that screen follows, below a notice (screen.go). The renderer is then
// empty and ready for a new turn.
func (r *Renderer) Flush() []string {
	r.endInput()
	out := append(r.Final(), r.Pending()...)
	out = append(out, r.screenLines()...)
	r.reset()
	return out
}

// String renders a whole output at once, with the default Options and
// profile p; lines are joined by "\n" (and a final "\n" is kept).
func String(raw string, p Profile) string {
	r := New(Options{Profile: p})
	r.useSink = true
	r.sink = make([]byte, 0, len(raw)+len(raw)/8)
	r.Write([]byte(raw))
	r.endInput()
	for i := range r.n {
		if i > 0 {
			r.sink = append(r.sink, '\n')
		}
		r.sink = r.appendLine(r.sink, r.lineAt(i))
	}
	if scr := r.screenLines(); len(scr) > 0 {
		if r.lineAt(r.n - 1).empty() {
			r.sink = bytes.TrimSuffix(r.sink, []byte("\n"))
		}
		for _, l := range scr {
			r.sink = append(r.sink, '\n')
			r.sink = append(r.sink, l...)
		}
	}
	return string(r.sink)
}

func (r *Renderer) endInput() {
	for i := 0; i < r.nu; i++ {
		r.put(utf8.RuneError, 1)
	}
	r.nu = 0
	r.state = sGround
}

func (r *Renderer) reset() {
	for i := range r.rows {
		r.rows[i] = nil
	}
	r.head, r.n, r.row, r.col, r.held, r.evicted, r.floor = 0, 0, 0, 0, 0, 0, 0
	r.st = style{}
	r.state = sGround
	r.alt = false
	r.scr = nil
	r.final = nil
	r.newLine()
}

func (r *Renderer) lineAt(i int) *line {
	return r.rows[(r.head+i)%r.window]
}

func (l *line) empty() bool {
	for i := len(l.cells) - 1; i >= 0; i-- {
		if l.cells[i].r != 0 {
			return false
		}
	}
	return true
}

// render returns l rendered, from its cache when unchanged.
func (r *Renderer) render(l *line) string {
	if l.dirty {
		r.scratch = r.appendLine(r.scratch[:0], l)
		l.out = string(r.scratch)
		l.dirty = false
	}
	return l.out
}

// newLine adds a line below the last one and puts the cursor on it, at
// column 0; the oldest line becomes final when the window is full.
func (r *Renderer) newLine() {
	if r.n == r.window {
		r.evict()
	}
	idx := (r.head + r.n) % r.window
	l := r.rows[idx]
	if l == nil {
		l = &line{}
		r.rows[idx] = l
	} else {
		if cap(l.cells) > 4096 {
			l.cells = nil
		}
		l.cells = l.cells[:0]
		l.comb = nil
		l.out = ""
	}
	l.dirty = true
	r.n++
	r.row = r.n - 1
	r.cur = l
	r.col = 0
	for r.held > r.budget && r.row > 0 {
		r.evict()
	}
}

// evict makes the oldest held line final.
func (r *Renderer) evict() {
	l := r.rows[r.head]
	if r.useSink {
		r.sink = r.appendLine(r.sink, l)
		r.sink = append(r.sink, '\n')
	} else {
		r.final = append(r.final, r.render(l))
	}
	r.held -= len(l.cells)
	r.head = (r.head + 1) % r.window
	r.n--
	r.row--
	r.evicted++
}

func (r *Renderer) setRow(row int) {
	r.row = min(max(row, 0), r.n-1)
	r.cur = r.lineAt(r.row)
}

// lineFeed moves to column 0 of the next line, adding one at the bottom.
func (r *Renderer) lineFeed() {
	if r.row < r.n-1 {
		r.setRow(r.row + 1)
		r.col = 0
		return
	}
	r.newLine()
}

// finishRune completes the UTF-8 character left incomplete by the last
// Write with the first bytes of p, and returns the rest of p.
func (r *Renderer) finishRune(p []byte) []byte {
	for r.nu > 0 && len(p) > 0 {
		r.ub[r.nu] = p[0]
		r.nu++
		p = p[1:]
		if !utf8.FullRune(r.ub[:r.nu]) {
			continue
		}
		var tmp [utf8.UTFMax]byte
		k := copy(tmp[:], r.ub[:r.nu])
		r.nu = 0
		ru, sz := utf8.DecodeRune(tmp[:k])
		r.putRune(ru, sz)
		r.feed(tmp[sz:k])
	}
	return p
}
