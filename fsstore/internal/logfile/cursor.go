package logfile

import (
	"context"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"looprig/fsstore/internal/frame"
	"looprig/rig/storage"
)

// Read returns a cursor over the records with sequence > after, bounded at
// the tip seen now. after may be at or past the tip (the cursor is then
// empty). The cursor has its own file descriptor: concurrent appends,
// Close, and deletion or replacement of the file do not disturb it.
func (l *Log) Read(ctx context.Context, after uint64) (storage.Cursor, error) {
	if err := l.acquire(ctx); err != nil {
		return nil, err
	}
	defer l.release()
	if err := l.usable(); err != nil {
		return nil, err
	}
	if err := l.refresh(ctx); err != nil {
		return nil, err
	}
	c := &Cursor{name: l.name, path: l.path, done: ctx.Done(), ctx: ctx}
	if l.f == nil || after >= l.tip {
		c.eof = true
		return c, nil
	}
	nfd, err := unix.FcntlInt(uintptr(l.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "dup", Path: l.path, Err: err}
	}
	c.f = os.NewFile(uintptr(nfd), l.path)
	k := min(after/l.interval, uint64(len(l.index)-1))
	c.pos = l.index[k]
	c.next = k*l.interval + 1
	c.after = after
	c.last = l.tip
	c.end = l.end
	c.rd = newReader(c.f, c.pos, c.end)
	return c, nil
}

// Cursor walks the records of a Log. It implements storage.Cursor. The
// payload of a Record is valid until the next call to Next or Close.
type Cursor struct {
	name, path string
	ctx        context.Context
	done       <-chan struct{}
	f          *os.File
	rd         reader
	pos        int64  // offset of the next frame
	end        int64  // offset bound
	next       uint64 // sequence of the next frame
	after      uint64 // frames up to this sequence are skipped
	last       uint64 // sequence bound
	rec        storage.Record
	epoch      uint64
	err        error
	eof        bool
}

// Next advances to the next record. It returns false at the bound, on
// error, on cancellation of the context given to Read, and after Close.
func (c *Cursor) Next() bool {
	if c.eof || c.err != nil {
		return false
	}
	if c.next > c.last {
		c.finish(nil)
		return false
	}
	select {
	case <-c.done:
		c.finish(c.ctx.Err())
		return false
	default:
	}
	for c.next <= c.after {
		// Skip to the first wanted record on headers alone.
		b, err := c.rd.at(c.pos, frame.HeaderSize)
		if err != nil {
			c.finish(err)
			return false
		}
		h, err := frame.DecodeHeader(b)
		if err != nil {
			c.corrupt(fmt.Sprintf("bad frame header (%v)", err), err)
			return false
		}
		if h.Seq != c.next {
			c.corrupt(fmt.Sprintf("sequence %d where %d was expected", h.Seq, c.next), nil)
			return false
		}
		c.pos += int64(h.Size())
		c.next++
	}
	fr, n, derr, err := c.rd.frameAt(c.pos)
	switch {
	case err != nil:
		c.finish(err)
		return false
	case derr == frame.ErrIncomplete:
		c.corrupt("frame runs past the end of the log", derr)
		return false
	case derr != nil:
		c.corrupt(fmt.Sprintf("bad frame (%v)", derr), derr)
		return false
	case fr.Seq != c.next:
		c.corrupt(fmt.Sprintf("sequence %d where %d was expected", fr.Seq, c.next), nil)
		return false
	}
	c.rec = storage.Record{Seq: fr.Seq, Payload: fr.Payload}
	c.epoch = fr.Epoch
	c.pos += int64(n)
	c.next++
	return true
}

func (c *Cursor) corrupt(reason string, err error) {
	c.finish(&storage.CorruptError{Name: c.name, Path: c.path, Offset: c.pos, Reason: reason, Err: err})
}

// finish ends the walk with err (nil at the bound) and releases the file.
func (c *Cursor) finish(err error) {
	c.err = err
	c.eof = true
	c.rec = storage.Record{}
	c.rd.release()
	if c.f != nil {
		c.f.Close()
		c.f = nil
	}
}

// Record returns the current record.
func (c *Cursor) Record() storage.Record { return c.rec }

// Epoch returns the writer epoch stored with the current record.
func (c *Cursor) Epoch() uint64 { return c.epoch }

// Err returns the error that ended the walk, nil at the bound.
func (c *Cursor) Err() error { return c.err }

// Close releases the cursor's file. It is idempotent.
func (c *Cursor) Close() error {
	if !c.eof {
		c.finish(nil)
	}
	return nil
}
