package logfile

import (
	"io"
	"os"
	"sync"

	"looprig/fsstore/internal/frame"
)

// readChunk is the read-ahead size for scans and cursors.
const readChunk = 1 << 20

// reader is a read-ahead window over a file, read with pread.
type reader struct {
	f     *os.File
	buf   []byte
	base  int64 // file offset of buf[0]
	n     int   // valid bytes in buf
	limit int64 // never read at or past this offset
}

// chunkPool recycles read-ahead buffers of readChunk bytes.
var chunkPool = sync.Pool{New: func() any { return new([readChunk]byte) }}

func newReader(f *os.File, from, limit int64) reader {
	r := reader{f: f, base: from, limit: limit}
	if rem := limit - from; rem < readChunk {
		r.buf = make([]byte, max(rem, frame.HeaderSize))
	} else {
		r.buf = chunkPool.Get().(*[readChunk]byte)[:]
	}
	return r
}

// release returns the buffer to the pool; the reader is unusable after.
func (r *reader) release() {
	if cap(r.buf) == readChunk {
		chunkPool.Put((*[readChunk]byte)(r.buf[:readChunk]))
	}
	*r = reader{}
}

// frameAt decodes the frame at off, reading as much as it needs. derr is
// the decoding error (one of package frame's), err an I/O error.
func (r *reader) frameAt(off int64) (f frame.Frame, n int, derr, err error) {
	b, err := r.at(off, frame.HeaderSize)
	if err != nil {
		return frame.Frame{}, 0, nil, err
	}
	f, n, derr = frame.Decode(b)
	if derr == frame.ErrIncomplete && len(b) >= frame.HeaderSize {
		// The header is valid (Decode checked it): fetch the whole frame.
		h, _ := frame.DecodeHeader(b)
		if b, err = r.at(off, h.Size()); err != nil {
			return frame.Frame{}, 0, nil, err
		}
		f, n, derr = frame.Decode(b)
	}
	return f, n, derr, nil
}

// at returns the file's bytes from off to the end of the window: at least
// want of them, unless the limit or the real end of the file comes first.
func (r *reader) at(off int64, want int) ([]byte, error) {
	if rem := r.limit - off; rem < int64(want) {
		want = int(max(rem, 0))
	}
	if off >= r.base && off+int64(want) <= r.base+int64(r.n) {
		return r.buf[off-r.base : r.n], nil
	}
	if off >= r.base && off < r.base+int64(r.n) {
		r.n = copy(r.buf, r.buf[off-r.base:r.n])
	} else {
		r.n = 0
	}
	r.base = off
	if want > len(r.buf) {
		nb := make([]byte, max(want, min(2*len(r.buf), frame.MaxSize)))
		copy(nb, r.buf[:r.n])
		r.buf = nb
	}
	end := int(min(int64(len(r.buf)), r.limit-r.base))
	if r.n < end {
		k, err := r.f.ReadAt(r.buf[r.n:end], r.base+int64(r.n))
		r.n += k
		if err != nil && err != io.EOF {
			return nil, err
		}
	}
	return r.buf[:r.n], nil
}
