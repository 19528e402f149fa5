package logfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"looprig/fsstore/internal/frame"
	"looprig/fsstore/internal/fsutil"
	"looprig/fsstore/internal/seam"
	"looprig/rig/storage"
)

// maxKeptWriteBuf bounds the write buffer a Log keeps between commits.
const maxKeptWriteBuf = 4 << 20

type request struct {
	ctx      context.Context
	expected uint64
	epoch    uint64
	payloads [][]byte
	err      error
	settled  bool          // err is final; the request takes no further part in the batch
	done     chan struct{} // closed when err is final and reported
}

// Append commits payloads at expected+1, expected+2, ... if the tip is
// expected when the append takes effect, and returns nil once they are
// durable. Otherwise it returns *storage.ConflictError and writes nothing.
// With no payloads it only checks the tip. A payload over
// storage.MaxPayload is refused with *storage.PayloadTooLargeError. epoch
// is recorded in every frame written.
//
// Once the request is handed to a commit leader it is no longer
// cancellable: Append then waits for the outcome, which is bounded by one
// write and one fdatasync.
func (l *Log) Append(ctx context.Context, expected, epoch uint64, payloads ...[]byte) error {
	for _, p := range payloads {
		if len(p) > storage.MaxPayload {
			return &storage.PayloadTooLargeError{Name: l.name, Size: len(p), Max: storage.MaxPayload}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	req := &request{ctx: ctx, expected: expected, epoch: epoch, payloads: payloads, done: make(chan struct{})}
	l.qmu.Lock()
	if l.closed {
		l.qmu.Unlock()
		return ErrClosed
	}
	l.queue = append(l.queue, req)
	l.qmu.Unlock()

	select {
	case l.token <- struct{}{}:
		// Leader. Our request is either still queued (lead takes it) or
		// was committed by the previous leader.
		select {
		case <-req.done:
		default:
			l.lead()
		}
		<-l.token
		<-req.done
		return req.err
	case <-req.done:
		return req.err
	case <-ctx.Done():
		l.qmu.Lock()
		if i := slices.Index(l.queue, req); i >= 0 {
			l.queue = slices.Delete(l.queue, i, i+1)
			l.qmu.Unlock()
			return ctx.Err()
		}
		l.qmu.Unlock()
		<-req.done // a leader has it; the outcome is imminent
		return req.err
	}
}

// lead commits everything queued. The caller holds the token.
func (l *Log) lead() {
	if l.hookLead != nil {
		l.hookLead()
	}
	l.qmu.Lock()
	batch := l.queue
	l.queue = l.spare[:0]
	closed := l.closed
	l.qmu.Unlock()

	switch {
	case closed:
		for _, r := range batch {
			r.settle(ErrClosed)
		}
	case l.broken != nil:
		for _, r := range batch {
			r.settle(l.broken)
		}
	default:
		l.commit(batch)
	}
	for i, r := range batch {
		close(r.done)
		batch[i] = nil
	}
	l.spare = batch[:0]
}

func (r *request) settle(err error) {
	r.err = err
	r.settled = true
}

// commit runs one group commit. The caller holds the token.
func (l *Log) commit(batch []*request) {
	slices.SortStableFunc(batch, func(a, b *request) int {
		switch {
		case a.expected < b.expected:
			return -1
		case a.expected > b.expected:
			return 1
		}
		return 0
	})
	live := func() error {
		n := 0
		for _, r := range batch {
			if !r.settled {
				if err := r.ctx.Err(); err != nil {
					r.settle(err)
					continue
				}
				n++
			}
		}
		if n == 0 {
			return context.Canceled // every request is settled
		}
		return nil
	}
	if live() != nil {
		return
	}
	fail := func(err error) {
		for _, r := range batch {
			if !r.settled {
				r.settle(err)
			}
		}
	}

	// Bring the state up to date under the file lock, creating the file
	// if it is absent and something would be written to it.
	locked := false
	for !locked {
		if l.f == nil {
			err := l.openExisting()
			if errors.Is(err, fs.ErrNotExist) {
				l.reset()
				if !decide(batch, 0, l.name, true) {
					decide(batch, 0, l.name, false)
					return // nothing to write: no file needed
				}
				err = l.create()
				if errors.Is(err, fs.ErrExist) {
					continue
				}
			}
			if err != nil {
				fail(err)
				return
			}
		}
		blocking := true
		for _, r := range batch {
			if !r.settled && r.ctx.Done() != nil {
				blocking = false
			}
		}
		var alive func() error
		if !blocking {
			alive = live
		}
		if err := l.lockFile(alive); err != nil {
			fail(err)
			return
		}
		if live() != nil {
			l.unlockFile()
			return
		}
		same, err := l.sameFile()
		if err != nil {
			l.unlockFile()
			fail(err)
			return
		}
		if !same {
			l.unlockFile()
			l.drop()
			continue
		}
		locked = true
	}
	defer l.unlockFile()
	if err := l.catchUp(); err != nil {
		fail(err)
		return
	}

	if !decide(batch, l.tip, l.name, false) {
		return
	}

	// Encode every accepted frame into one buffer.
	buf := l.wbuf[:0]
	seq := l.tip
	var marks []int64 // offsets of new index entries
	for _, r := range batch {
		if r.settled {
			continue
		}
		for _, p := range r.payloads {
			seq++
			if (seq-1)%l.interval == 0 {
				marks = append(marks, l.end+int64(len(buf)))
			}
			buf = frame.AppendFrame(buf, seq, r.epoch, p)
		}
	}
	if cap(buf) <= maxKeptWriteBuf {
		l.wbuf = buf[:0]
	} else {
		l.wbuf = nil
	}

	if _, err := seam.WriteAt(l.f, buf, l.end); err != nil {
		// Roll back whatever part of the write landed (a short write on a
		// full disk), so nobody takes part of a batch for committed records.
		l.rollback()
		fail(err)
		return
	}
	seam.At(seam.LedgerWritten, l.path) // test seam: crash before fdatasync
	if !l.dirSynced {
		if err := fsutil.SyncDir(l.dir); err != nil {
			l.rollback()
			fail(err)
			return
		}
		l.dirSynced = true
	}
	if err := fsutil.DataSync(l.fd, l.path); err != nil {
		// After a failed sync the page cache no longer tells us what is on
		// disk. Try to take the frames back, and refuse further use.
		_ = l.f.Truncate(l.end)
		l.broken = fmt.Errorf("%w after failed sync: %w", ErrBroken, err)
		fail(err)
		return
	}
	l.syncs.Add(1)
	seam.At(seam.LedgerSynced, l.path) // test seam: crash before the ack
	l.end += int64(len(buf))
	l.tip = seq
	l.index = append(l.index, marks...)
	for _, r := range batch {
		if !r.settled {
			r.settle(nil)
		}
	}
}

// rollback truncates the file back to the cached end after a failed
// commit. If even that fails, the Log refuses further use.
func (l *Log) rollback() {
	if err := l.f.Truncate(l.end); err != nil {
		l.broken = fmt.Errorf("%w after failed rollback: %w", ErrBroken, err)
	}
}

// decide walks the sorted batch from tip: a request whose expected equals
// the running tip is accepted and advances it, any other is refused with a
// ConflictError. With dryRun it settles nothing and reports whether any
// accepted request carries payloads; otherwise it reports the same after
// settling the refused requests.
func decide(batch []*request, tip uint64, name string, dryRun bool) (writes bool) {
	for _, r := range batch {
		if r.settled {
			continue
		}
		if r.expected != tip {
			if !dryRun {
				r.settle(&storage.ConflictError{Name: name, Expected: r.expected, Actual: tip})
			}
			continue
		}
		if len(r.payloads) > 0 {
			writes = true
		}
		tip += uint64(len(r.payloads))
	}
	if !dryRun && !writes {
		for _, r := range batch {
			if !r.settled {
				r.settle(nil) // accepted tip checks
			}
		}
	}
	return writes
}
