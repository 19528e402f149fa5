package host

import (
	"bufio"
	"errors"
	"io"
)

// errLineTooLong: a line went past the reader's bound.
var errLineTooLong = errors.New("line too long")

// lineReader reads newline-terminated lines of at most max bytes. It never
// holds more than max bytes plus its 64 KiB buffer: a longer line is
// errLineTooLong (and the reader is unusable after), and the room a long
// line took is given back before the next one is read.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// keepLine is the room a lineReader keeps between lines.
const keepLine = 64 << 10

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its newline; it is valid until the
// next call. A final line without a newline is returned at EOF.
func (l *lineReader) next() ([]byte, error) {
	if cap(l.buf) > keepLine {
		l.buf = nil
	}
	l.buf = l.buf[:0]
	for {
		frag, err := l.r.ReadSlice('\n')
		n := len(frag)
		if err == nil {
			n-- // the newline
		}
		if len(l.buf)+n > l.max {
			l.buf = nil
			return nil, errLineTooLong
		}
		if err == nil {
			if len(l.buf) == 0 {
				return frag[:n], nil
			}
			l.grow(n)
			l.buf = append(l.buf, frag[:n]...)
			return l.buf, nil
		}
		l.grow(len(frag))
		l.buf = append(l.buf, frag...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) && len(l.buf) > 0 {
			return l.buf, nil
		}
		return nil, err
	}
}

// grow makes room for n more bytes, doubling up to max: a partial line
// never holds more than max bytes.
func (l *lineReader) grow(n int) {
	need := len(l.buf) + n
	if need <= cap(l.buf) {
		return
	}
	c := min(max(2*cap(l.buf), need, 4<<10), max(l.max, need))
	b := make([]byte, len(l.buf), c)
	copy(b, l.buf)
	l.buf = b
}
