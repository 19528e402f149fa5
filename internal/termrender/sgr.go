package termrender

import (
	"image/color"
	"strconv"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// style is the attributes of a cell. A colour is 0 (default),
// kIndexed|n (n in 0–255) or kRGB|0xrrggbb.
type style struct {
	fg, bg uint32
	fl     uint8
}

const (
	kIndexed uint32 = 1 << 24
	kRGB     uint32 = 2 << 24
	kMask    uint32 = 3 << 24
)

// Attribute flags, in the order they are emitted.
const (
	fBold uint8 = 1 << iota
	fFaint
	fItalic
	fUnderline
	fBlink
	fReverse
	fStrike
)

// flagCodes are the SGR codes of the flags, bit i for code flagCodes[i].
var flagCodes = [...]string{"1", "2", "3", "4", "5", "7", "9"}

// sgr applies the SGR sequence in r.pv to the pen.
func (r *Renderer) sgr() {
	st := r.st
	for i := 0; i < r.np; {
		p := max(r.pv[i], 0)
		j := i + 1
		for j < r.np && r.psub[j] {
			j++
		}
		subs := r.pv[i+1 : j]
		switch {
		case p == 0:
			st = style{}
		case p == 1:
			st.fl |= fBold
		case p == 2:
			st.fl |= fFaint
		case p == 3:
			st.fl |= fItalic
		case p == 4:
			if len(subs) > 0 && subs[0] == 0 {
				st.fl &^= fUnderline
			} else {
				st.fl |= fUnderline
			}
		case p == 5 || p == 6:
			st.fl |= fBlink
		case p == 7:
			st.fl |= fReverse
		case p == 9:
			st.fl |= fStrike
		case p == 21:
			st.fl |= fUnderline
		case p == 22:
			st.fl &^= fBold | fFaint
		case p == 23:
			st.fl &^= fItalic
		case p == 24:
			st.fl &^= fUnderline
		case p == 25:
			st.fl &^= fBlink
		case p == 27:
			st.fl &^= fReverse
		case p == 29:
			st.fl &^= fStrike
		case p >= 30 && p <= 37:
			st.fg = r.color(kIndexed | uint32(p-30))
		case p == 39:
			st.fg = 0
		case p >= 40 && p <= 47:
			st.bg = r.color(kIndexed | uint32(p-40))
		case p == 49:
			st.bg = 0
		case p >= 90 && p <= 97:
			st.fg = r.color(kIndexed | uint32(p-90+8))
		case p >= 100 && p <= 107:
			st.bg = r.color(kIndexed | uint32(p-100+8))
		case p == 38 || p == 48 || p == 58:
			var c uint32
			var ok bool
			if len(subs) > 0 {
				c, ok = extColor(subs)
			} else {
				// 38;5;n or 38;2;r;g;b: the colour takes the next
				// parameters (if they are not sub-parameters).
				k := j
				for k < r.np && k < j+4 && !r.psub[k] {
					k++
				}
				var used int
				c, used, ok = semiColor(r.pv[j:k])
				j += used
			}
			if ok && p == 38 {
				st.fg = r.color(c)
			} else if ok && p == 48 {
				st.bg = r.color(c)
			}
		}
		i = j
	}
	r.st = st
}

// extColor decodes the sub-parameters of 38:5:n, 38:2:r:g:b and
// 38:2:cs:r:g:b.
func extColor(subs []int32) (uint32, bool) {
	switch subs[0] {
	case 5:
		if len(subs) >= 2 {
			return indexed(subs[1])
		}
	case 2:
		switch {
		case len(subs) >= 5:
			return rgb(subs[2], subs[3], subs[4])
		case len(subs) == 4:
			return rgb(subs[1], subs[2], subs[3])
		}
	}
	return 0, false
}

// semiColor decodes the parameters after 38;: 5;n or 2;r;g;b, and returns
// how many it used.
func semiColor(ps []int32) (uint32, int, bool) {
	if len(ps) == 0 {
		return 0, 0, false
	}
	switch ps[0] {
	case 5:
		if len(ps) >= 2 {
			c, ok := indexed(ps[1])
			return c, 2, ok
		}
		return 0, len(ps), false
	case 2:
		if len(ps) >= 4 {
			c, ok := rgb(ps[1], ps[2], ps[3])
			return c, 4, ok
		}
		return 0, len(ps), false
	}
	return 0, 1, false
}

func indexed(n int32) (uint32, bool) {
	n = max(n, 0)
	if n > 255 {
		return 0, false
	}
	return kIndexed | uint32(n), true
}

func rgb(cr, cg, cb int32) (uint32, bool) {
	cr, cg, cb = max(cr, 0), max(cg, 0), max(cb, 0)
	if cr > 255 || cg > 255 || cb > 255 {
		return 0, false
	}
	return kRGB | uint32(cr)<<16 | uint32(cg)<<8 | uint32(cb), true
}

// color downsamples c to the profile.
func (r *Renderer) color(c uint32) uint32 {
	switch r.prof {
	case TrueColor:
		return c
	case ANSI256:
		if c&kMask != kRGB {
			return c
		}
	case ANSI:
		if c&kMask == kIndexed && c&0xff < 16 {
			return c
		}
	default:
		return 0
	}
	if d, ok := r.conv[c]; ok {
		return d
	}
	var in color.Color = ansi.IndexedColor(c & 0xff)
	if c&kMask == kRGB {
		in = color.RGBA{R: uint8(c >> 16), G: uint8(c >> 8), B: uint8(c), A: 0xff}
	}
	var d uint32
	if r.prof == ANSI {
		d = kIndexed | uint32(ansi.Convert16(in))
	} else {
		d = kIndexed | uint32(ansi.Convert256(in))
	}
	if r.conv == nil || len(r.conv) >= 4096 {
		r.conv = make(map[uint32]uint32)
	}
	r.conv[c] = d
	return d
}

// appendLine appends l rendered: text and, unless the profile is NoColor,
// SGR sequences; a line that sets attributes ends with a reset.
func (r *Renderer) appendLine(buf []byte, l *line) []byte {
	cells := l.cells
	end := len(cells)
	for end > 0 && cells[end-1].r == 0 {
		end--
	}
	var cur style
	for i := 0; i < end; i++ {
		c := cells[i]
		if c.r == contRune {
			continue
		}
		if c.st != cur {
			buf = appendSGR(buf, cur, c.st)
			cur = c.st
		}
		switch {
		case c.r == 0:
			buf = append(buf, ' ')
		case c.r < utf8.RuneSelf:
			buf = append(buf, byte(c.r))
		default:
			buf = utf8.AppendRune(buf, c.r)
		}
		if l.comb != nil {
			if s, ok := l.comb[i]; ok {
				buf = append(buf, s...)
			}
		}
	}
	if cur != (style{}) {
		buf = append(buf, "\x1b[0m"...)
	}
	return buf
}

// appendSGR appends the sequence that turns attributes from into to.
func appendSGR(buf []byte, from, to style) []byte {
	buf = append(buf, "\x1b["...)
	if to == (style{}) {
		return append(buf, "0m"...)
	}
	sep := false
	if from != (style{}) {
		buf = append(buf, '0')
		sep = true
	}
	for i, code := range flagCodes {
		if to.fl&(1<<i) != 0 {
			if sep {
				buf = append(buf, ';')
			}
			buf = append(buf, code...)
			sep = true
		}
	}
	if to.fg != 0 {
		if sep {
			buf = append(buf, ';')
		}
		buf = appendColor(buf, to.fg, 30, 90, "38")
		sep = true
	}
	if to.bg != 0 {
		if sep {
			buf = append(buf, ';')
		}
		buf = appendColor(buf, to.bg, 40, 100, "48")
	}
	return append(buf, 'm')
}

func appendColor(buf []byte, c uint32, base, bright int, ext string) []byte {
	if c&kMask == kRGB {
		buf = append(buf, ext...)
		buf = append(buf, ";2;"...)
		buf = strconv.AppendUint(buf, uint64(c>>16&0xff), 10)
		buf = append(buf, ';')
		buf = strconv.AppendUint(buf, uint64(c>>8&0xff), 10)
		buf = append(buf, ';')
		return strconv.AppendUint(buf, uint64(c&0xff), 10)
	}
	n := int(c & 0xff)
	switch {
	case n < 8:
		return strconv.AppendInt(buf, int64(base+n), 10)
	case n < 16:
		return strconv.AppendInt(buf, int64(bright+n-8), 10)
	}
	buf = append(buf, ext...)
	buf = append(buf, ";5;"...)
	return strconv.AppendInt(buf, int64(n), 10)
}
