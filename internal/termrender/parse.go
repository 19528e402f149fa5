package termrender

import (
	"unicode/utf8"

	"github.com/mattn/go-runewidth"

	"looprig/internal/textsafe"
)

// Parser states: a VT500-style state machine, reduced to what is kept.
const (
	sGround    uint8 = iota
	sEsc             // after ESC
	sEscInter        // ESC and intermediate bytes
	sCSI             // CSI parameters
	sCSIIgnore       // CSI to drop: skip to its final byte
	sStr             // OSC, DCS, APC, PM or SOS payload
	sStrEsc          // ESC inside a string
)

const (
	maxParams = 32
	maxParam  = 65535
)

// Control characters.
const (
	bel = 0x07
	bs  = 0x08
	tab = 0x09
	lf  = 0x0a
	cr  = 0x0d
	// shiftOut and shiftIn are SO and SI.
	shiftOut = 0x0e
	shiftIn  = 0x0f
	can      = 0x18
	sub      = 0x1a
	esc      = 0x1b
	del      = 0x7f
)

// widths is the wcwidth of runes, independent of the locale (as
// charmbracelet/x/ansi's WcWidth method).
var widths = &runewidth.Condition{EastAsianWidth: false, StrictEmojiNeutral: true}

// feed runs the state machine over p. An incomplete UTF-8 character at
// the end is kept in r.ub for the next Write.
func (r *Renderer) feed(p []byte) {
	for i := 0; i < len(p); {
		b := p[i]
		switch r.state {
		case sGround:
			switch {
			case r.alt && b != esc:
				// A full-screen program's screen: not shown (see altNotice).
				i++
				continue
			case b >= 0x20 && b < del:
				i = r.printASCII(p, i)
				continue
			case b < 0x80:
				r.control(b)
			default:
				if !utf8.FullRune(p[i:]) {
					r.nu = copy(r.ub[:], p[i:])
					return
				}
				ru, sz := utf8.DecodeRune(p[i:])
				r.putRune(ru, sz)
				i += sz
				continue
			}
		case sEsc:
			switch {
			case b == '[':
				r.np, r.pcur, r.sub, r.priv = 0, -1, false, false
				r.state = sCSI
			case b == ']' || b == 'P' || b == '_' || b == '^' || b == 'X':
				r.strN = 0
				r.state = sStr
			case b >= 0x20 && b <= 0x2f:
				r.state = sEscInter
			case b >= 0x30 && b < del:
				r.state = sGround
			case b >= 0x80:
				r.state = sGround
				continue // read it as text
			default:
				r.seqControl(b)
			}
		case sEscInter:
			switch {
			case b >= 0x20 && b <= 0x2f:
			case b >= 0x30 && b < del:
				r.state = sGround
			case b >= 0x80:
				r.state = sGround
				continue
			default:
				r.seqControl(b)
			}
		case sCSI:
			switch {
			case b >= '0' && b <= '9':
				if r.pcur < 0 {
					r.pcur = 0
				}
				r.pcur = min(r.pcur*10+int32(b-'0'), maxParam)
			case b == ';' || b == ':':
				r.pushParam()
				r.sub = b == ':'
			case b >= 0x40 && b < del:
				r.pushParam()
				r.state = sGround
				switch {
				case r.priv:
					r.privateMode(b)
				case !r.alt:
					r.dispatch(b)
				}
			case b == '?' && r.np == 0 && r.pcur < 0 && !r.priv:
				r.priv = true
			case b >= 0x20 && b <= 0x3f: // private marker, intermediate
				r.state = sCSIIgnore
			case b >= 0x80:
				r.state = sGround
				continue
			default:
				r.seqControl(b)
			}
		case sCSIIgnore:
			switch {
			case b >= 0x40 && b < del:
				r.state = sGround
			case b >= 0x20 && b <= 0x3f:
			case b >= 0x80:
				r.state = sGround
				continue
			default:
				r.seqControl(b)
			}
		case sStr:
			switch b {
			case bel, can, sub:
				r.state = sGround
			case esc:
				r.state = sStrEsc
			default:
				if r.strN == r.maxStr {
					r.state = sGround // never terminated: read text again
					continue
				}
				r.strN++
			}
		case sStrEsc:
			if b == '\\' {
				r.state = sGround
			} else {
				r.state = sEsc // the ESC ends the string, starts a sequence
				continue
			}
		}
		i++
	}
}

// seqControl is a C0 control or DEL met inside an escape sequence.
func (r *Renderer) seqControl(b byte) {
	switch b {
	case esc:
		r.state = sEsc
	case can, sub:
		r.state = sGround
	case del:
	default:
		r.control(b)
	}
}

// control carries out a C0 control or DEL met in text.
func (r *Renderer) control(b byte) {
	switch b {
	case lf:
		r.lineFeed()
	case cr:
		r.col = 0
	case bs:
		if r.col > 0 {
			r.col = min(r.col, r.max) - 1
		}
	case tab:
		if r.col < r.max-1 {
			r.col = min((r.col/8+1)*8, r.max-1)
		}
	case bel, shiftOut, shiftIn:
		// SO and SI switch between the charsets that designations (dropped
		// too) set up: ncurses' sgr0 ends with SI on some terminals. A
		// terminal shows nothing for them.
	case esc:
		r.state = sEsc
	case del:
		r.put('^', 1)
		r.put('?', 1)
	default:
		r.put('^', 1)
		r.put(rune(b)+0x40, 1)
	}
}

func (r *Renderer) pushParam() {
	if r.np < maxParams {
		r.pv[r.np] = r.pcur
		r.psub[r.np] = r.sub
		r.np++
	}
	r.pcur = -1
}

// param returns parameter i, or def when it is missing or empty.
func (r *Renderer) param(i int, def int) int {
	if i >= r.np || r.pv[i] < 0 {
		return def
	}
	return int(r.pv[i])
}

// Notices that stand for a full-screen program's screen.
const (
	altEnter = "[full-screen program: its screen is not part of the line output]"
	altLeave = "[full-screen program ended]"
)

// privateMode handles CSI ? Pn h / l: the alternate screen (modes 1049,
// 1047, 47) switches what follows off until the program leaves it, with a
// notice line in its place. Every other private mode is dropped.
func (r *Renderer) privateMode(final byte) {
	if final != 'h' && final != 'l' {
		return
	}
	for i := 0; i < r.np; i++ {
		switch r.pv[i] {
		case 1049, 1047, 47:
			switch {
			case final == 'h' && !r.alt:
				r.notice(altEnter)
				r.alt = true
			case final == 'l' && r.alt:
				r.alt = false
				r.notice(altLeave)
			}
			return
		}
	}
}

// notice writes text as a line of its own, unstyled, below every line
// held, and leaves the cursor at the start of the next line.
func (r *Renderer) notice(text string) {
	r.setRow(r.n - 1)
	if len(r.cur.cells) > 0 {
		r.lineFeed()
	}
	r.col = 0
	pen := r.st
	r.st = style{}
	for _, ru := range text {
		r.put(ru, 1)
	}
	r.st = pen
	r.lineFeed()
}

// dispatch carries out a CSI sequence without marker nor intermediate.
func (r *Renderer) dispatch(final byte) {
	n := max(r.param(0, 1), 1)
	switch final {
	case 'm':
		if r.prof != NoColor {
			r.sgr()
		}
	case 'K':
		r.erase(r.param(0, 0))
	case 'C':
		r.col = min(r.col+n, r.max-1)
	case 'D':
		r.col = max(min(r.col, r.max-1)-n, 0)
	case 'G':
		r.col = min(n-1, r.max-1)
	case 'A':
		r.setRow(r.row - n)
	case 'B':
		r.setRow(r.row + n)
	case 'F':
		r.setRow(r.row - n)
		r.col = 0
	case 'E':
		r.setRow(r.row + n)
		r.col = 0
	case 'H', 'f':
		r.moveTo(r.param(0, 1), r.param(1, 1))
	case 'd':
		r.moveToRow(r.param(0, 1))
	case 'J':
		r.eraseScreen(r.param(0, 0))
	}
}

// printASCII writes the printable ASCII run starting at p[i] and returns
// the index after it.
func (r *Renderer) printASCII(p []byte, i int) int {
	l := r.cur
	l.dirty = true
	st := r.st
	for ; i < len(p); i++ {
		b := p[i]
		if b < 0x20 || b >= del {
			break
		}
		if r.col == len(l.cells) && r.col < r.max {
			l.cells = append(l.cells, cell{r: rune(b), st: st})
			r.col++
			r.held++
			continue
		}
		r.put(rune(b), 1)
		l = r.cur
	}
	return i
}

// putRune writes a decoded rune; sz == 1 with utf8.RuneError is an
// invalid byte.
func (r *Renderer) putRune(ru rune, sz int) {
	if ru == utf8.RuneError && sz == 1 {
		r.put(utf8.RuneError, 1)
		return
	}
	if maybeHidden(ru) {
		if s := string(ru); !textsafe.Safe(s) {
			for _, c := range []byte(textsafe.Sanitize(s)) {
				r.put(rune(c), 1)
			}
			return
		}
	}
	switch widths.RuneWidth(ru) {
	case 0:
		r.attach(ru)
	case 2:
		r.put(ru, 2)
	default:
		r.put(ru, 1)
	}
}

// maybeHidden is true for every rune above ASCII that textsafe shows as
// "<U+XXXX>" (and a few more, that textsafe then decides on).
func maybeHidden(ru rune) bool {
	return ru <= 0x9f || ru == 0x061c || (ru >= 0x200e && ru <= 0x2069)
}

// put writes ru, w cells wide, at the cursor, wrapping first when it does
// not fit.
func (r *Renderer) put(ru rune, w int) {
	if r.col+w > r.max {
		r.lineFeed()
	}
	l := r.cur
	l.dirty = true
	c := r.col
	if c > len(l.cells) {
		r.held += c - len(l.cells)
		for len(l.cells) < c {
			l.cells = append(l.cells, cell{})
		}
	}
	for k := c; k < c+w && k < len(l.cells); k++ {
		r.unlink(l, k)
	}
	for k := c; k < c+w; k++ {
		cl := cell{r: ru, st: r.st}
		if k > c {
			cl.r = contRune
		}
		if k < len(l.cells) {
			l.cells[k] = cl
		} else {
			l.cells = append(l.cells, cl)
			r.held++
		}
	}
	r.col = c + w
}

// unlink prepares cell k of l to be overwritten: the other half of a wide
// character it belongs to is blanked, and its zero-width runes dropped.
func (r *Renderer) unlink(l *line, k int) {
	if l.cells[k].r == contRune && k > 0 {
		l.cells[k-1].r = ' '
		delete(l.comb, k-1)
	}
	if k+1 < len(l.cells) && l.cells[k+1].r == contRune {
		l.cells[k+1].r = ' '
	}
	delete(l.comb, k)
}

// attach adds a zero-width rune to the cell before the cursor, or writes
// it as a cell of its own when there is none.
func (r *Renderer) attach(ru rune) {
	l := r.cur
	k := r.col - 1
	if k >= 0 && k < len(l.cells) && l.cells[k].r == contRune {
		k--
	}
	if k < 0 || k >= len(l.cells) || l.cells[k].r == 0 || r.col > len(l.cells) {
		r.put(ru, 1)
		return
	}
	if l.comb == nil {
		l.comb = map[int]string{}
	}
	if s := l.comb[k]; len(s)+utf8.RuneLen(ru) <= maxCombBytes {
		l.comb[k] = s + string(ru)
		l.dirty = true
	}
}

// erase is CSI K.
func (r *Renderer) erase(mode int) {
	l := r.cur
	c := min(r.col, r.max-1)
	switch mode {
	case 0:
		if c >= len(l.cells) {
			return
		}
		if c > 0 && l.cells[c].r == contRune {
			l.cells[c-1].r = ' '
			delete(l.comb, c-1)
		}
		r.held -= len(l.cells) - c
		l.cells = l.cells[:c]
		for k := range l.comb {
			if k >= c {
				delete(l.comb, k)
			}
		}
	case 1:
		end := min(c, len(l.cells)-1)
		for k := 0; k <= end; k++ {
			l.cells[k] = cell{}
		}
		if end+1 < len(l.cells) && l.cells[end+1].r == contRune {
			l.cells[end+1] = cell{}
		}
		for k := range l.comb {
			if k <= end {
				delete(l.comb, k)
			}
		}
	case 2:
		r.held -= len(l.cells)
		l.cells = l.cells[:0]
		l.comb = nil
	default:
		return
	}
	l.dirty = true
}
