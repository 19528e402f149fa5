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
	if batchLive(batch) != nil {
		return
	}
	if !l.lockForCommit(batch) {
		return
	}
	defer l.unlockFile()
	if err := l.catchUp(); err != nil {
		failBatch(batch, err)
		return
	}

	if !decide(batch, l.tip, l.name, false) {
		return
	}
	buf, seq, marks := l.encode(batch)
	if err := l.writeDurably(buf); err != nil {
		failBatch(batch, err)
		return
	}
	l.end += int64(len(buf))
	l.tip = seq
	l.index = append(l.index, marks...)
	for _, r := range batch {
		if !r.settled {
			r.settle(nil)
		}
	}
}

// batchLive settles the requests of batch whose context is done, and
// returns context.Canceled once every request is settled.
func batchLive(batch []*request) error {
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

// failBatch settles every request of batch not settled yet with err.
func failBatch(batch []*request, err error) {
	for _, r := range batch {
		if !r.settled {
			r.settle(err)
		}
	}
}

// lockForCommit brings the state up to date under the file lock, creating
// the file if it is absent and something would be written to it. It
// reports whether it holds the lock (the caller unlocks it); when it does
// not, every request of batch is settled.
func (l *Log) lockForCommit(batch []*request) bool {
	for {
		if l.f == nil {
			err := l.openExisting()
			if errors.Is(err, fs.ErrNotExist) {
				l.reset()
				if !decide(batch, 0, l.name, true) {
					decide(batch, 0, l.name, false)
					return false // nothing to write: no file needed
				}
				err = l.create()
				if errors.Is(err, fs.ErrExist) {
					continue
				}
			}
			if err != nil {
				failBatch(batch, err)
				return false
			}
		}
		if l.readOnly && batchWrites(batch) { // tip checks alone need no write
			if err := l.openWritable(); errors.Is(err, fs.ErrNotExist) {
				continue
			} else if err != nil {
				failBatch(batch, err)
				return false
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
			alive = func() error { return batchLive(batch) }
		}
		if err := l.lockFile(alive); err != nil {
			failBatch(batch, err)
			return false
		}
		if batchLive(batch) != nil {
			l.unlockFile()
			return false
		}
		same, err := l.sameFile()
		if err != nil {
			l.unlockFile()
			failBatch(batch, err)
			return false
		}
		if !same {
			l.unlockFile()
			l.drop()
			continue
		}
		return true
	}
}

// batchWrites reports whether a request of batch still to settle
// carries payloads.
func batchWrites(batch []*request) bool {
	for _, r := range batch {
		if !r.settled && len(r.payloads) > 0 {
			return true
		}
	}
	return false
}

// encode appends every accepted frame of batch, numbered on from l.tip,
// to one buffer (l.wbuf's, kept for the next commit unless it grew over
// maxKeptWriteBuf). It returns the buffer, the sequence of its last frame
// and the offsets of new index entries.
func (l *Log) encode(batch []*request) (buf []byte, seq uint64, marks []int64) {
	buf = l.wbuf[:0]
	seq = l.tip
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
	return buf, seq, marks
}

// writeDurably writes buf at the file's cached end and makes it durable:
// the directory synced (once per file), then fdatasync. A failed write or
// directory sync is rolled back; a failed fdatasync breaks the Log.
func (l *Log) writeDurably(buf []byte) error {
	if _, err := seam.WriteAt(l.f, buf, l.end); err != nil {
		// Roll back whatever part of the write landed (a short write on a
		// full disk), so nobody takes part of a batch for committed records.
		l.rollback()
		return err
	}
	seam.At(seam.LedgerWritten, l.path) // test seam: crash before fdatasync
	if !l.dirSynced {
		if err := fsutil.SyncDir(l.dir); err != nil {
			l.rollback()
			return err
		}
		l.dirSynced = true
	}
	if err := fsutil.DataSync(l.fd, l.path); err != nil {
		// After a failed sync the page cache no longer tells us what is on
		// disk. Try to take the frames back, and refuse further use.
		_ = l.f.Truncate(l.end)
		l.broken = fmt.Errorf("%w after failed sync: %w", ErrBroken, err)
		return err
	}
	l.syncs.Add(1)
	seam.At(seam.LedgerSynced, l.path) // test seam: crash before the ack
	return nil
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
