// Package logfile keeps one ledger as one append-only file of frames (see
// package frame), with compare-and-swap appends that hold across goroutines
// and across processes sharing the file.
//
// # Concurrency
//
// Within a process, a Log serialises everything that touches the file
// through a single token (a one-slot channel, so waiting honours contexts).
// Appends are group-committed in leader/follower style with no background
// goroutine: a caller queues its request and then either takes the token
// (becoming the leader, which commits the whole queue with one write and one
// fdatasync) or is acknowledged by another leader first.
//
// Across processes, every commit holds an exclusive flock on the log file
// for its check, write and sync. Under the lock the leader first makes sure
// the path still names its inode (reopening if the ledger was deleted or
// replaced) and that the file ends where it thinks it does; if another
// process appended, the new frames are validated and the cached tip moves
// on before the compare. Tip and Read make the same check, so they see
// other processes' appends.
//
// Waiting for the flock honours the context: with a context that can be
// cancelled the lock is polled with backoff, otherwise the call blocks in
// the kernel (fairer under cross-process contention). Open has no context
// and blocks. The lock is only ever held for one check+write+sync or one
// validation scan.
//
// # Durability and recovery
//
// Append returns nil only after its frames were written in one pwrite and
// fdatasync returned; the parent directory is fsynced after the file is
// created, and once more the first time a Log writes to a file it did not
// create. Open validates the whole file under the flock. A torn tail (an
// incomplete or invalid frame with no valid frame anywhere after it) is cut
// off and the truncation fsynced; a bad frame followed by a valid one, or a
// sequence gap, is corruption: Open fails with *storage.CorruptError and
// leaves the file untouched. Frames another process appends are validated
// the same way when a Log catches up with them.
//
// If fdatasync fails, the Log tries to take the batch back and then refuses
// all further use with a sticky error: after a failed sync the page cache
// no longer says what is on disk. Reopen the file to go on.
package logfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"looprig/fsstore/internal/frame"
	"looprig/fsstore/internal/seam"
	"looprig/rig/storage"
)

// DefaultIndexInterval is the default spacing, in records, of the sparse
// in-memory index Read uses to seek.
const DefaultIndexInterval = 1024

// readChunk is the read-ahead size for scans and cursors.
const readChunk = 1 << 20

// maxKeptWriteBuf bounds the write buffer a Log keeps between commits.
const maxKeptWriteBuf = 4 << 20

// ErrClosed is returned by operations on a closed Log. It matches
// os.ErrClosed with errors.Is.
var ErrClosed = fmt.Errorf("logfile: log is closed: %w", os.ErrClosed)

// ErrBroken is wrapped by every error of a Log whose file state became
// unknown (a failed fdatasync). Such a Log refuses all further use; open a
// new one, which validates the file again.
var ErrBroken = errors.New("logfile: log unusable")

// Options configures a Log.
type Options struct {
	// Name is the ledger name reported in typed errors.
	Name string
	// IndexInterval is the spacing, in records, of the sparse index used
	// to seek in Read. Zero means DefaultIndexInterval.
	IndexInterval int
}

// Log is one ledger file. Its methods are safe for concurrent use.
type Log struct {
	path     string
	dir      string
	name     string
	interval uint64

	// token is held (a value sent into it) by whoever touches the file
	// state below: the commit leader, Tip, Read, Delete and Close.
	token chan struct{}

	qmu    sync.Mutex
	queue  []*request // appends waiting for a leader
	closed bool

	// File state, owned by the token holder.
	f         *os.File // nil while the ledger has no file
	fd        int
	dev, ino  uint64
	end       int64   // end of the last valid frame
	tip       uint64  // sequence of the last valid frame
	index     []int64 // index[k] is the offset of the frame with seq k*interval+1
	dirSynced bool    // the directory entry of f is known durable
	broken    error   // sticky: a failed sync leaves the file state unknown
	wbuf      []byte
	spare     []*request

	syncs atomic.Uint64 // fdatasync calls on success paths (for tests and metrics)

	// Test hooks, set only by tests in this package.
	hookLead func() // called by a leader before it takes the queue
}

type request struct {
	ctx      context.Context
	expected uint64
	epoch    uint64
	payloads [][]byte
	err      error
	settled  bool          // err is final; the request takes no further part in the batch
	done     chan struct{} // closed when err is final and reported
}

// Open returns the Log for path. A missing file is an empty ledger and is
// not created until the first Append that writes. An existing file is
// validated and a torn tail repaired, under an exclusive flock; damage that
// cannot be a torn tail fails with *storage.CorruptError and changes
// nothing.
func Open(path string, opts Options) (*Log, error) {
	interval := opts.IndexInterval
	if interval <= 0 {
		interval = DefaultIndexInterval
	}
	l := &Log{
		path:     path,
		dir:      filepath.Dir(path),
		name:     opts.Name,
		interval: uint64(interval),
		token:    make(chan struct{}, 1),
		fd:       -1,
	}
	switch err := l.openExisting(); {
	case errors.Is(err, fs.ErrNotExist):
		return l, nil
	case err != nil:
		return nil, err
	}
	if err := l.lockFile(nil); err != nil {
		l.drop()
		return nil, err
	}
	err := l.catchUp()
	l.unlockFile()
	if err != nil {
		l.drop()
		return nil, err
	}
	return l, nil
}

// Path returns the file path of the log.
func (l *Log) Path() string { return l.path }

// Syncs returns how many fdatasync calls committed appends so far.
func (l *Log) Syncs() uint64 { return l.syncs.Load() }

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
		if err := syncDir(l.dir); err != nil {
			l.rollback()
			fail(err)
			return
		}
		l.dirSynced = true
	}
	if err := unix.Fdatasync(l.fd); err != nil {
		// After a failed sync the page cache no longer tells us what is on
		// disk. Try to take the frames back, and refuse further use.
		err = &os.PathError{Op: "fdatasync", Path: l.path, Err: err}
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

// Tip returns the sequence of the last record, 0 for an empty or absent
// ledger. It sees appends made through other Logs and other processes.
func (l *Log) Tip(ctx context.Context) (uint64, error) {
	if err := l.acquire(ctx); err != nil {
		return 0, err
	}
	defer l.release()
	if err := l.usable(); err != nil {
		return 0, err
	}
	if err := l.refresh(ctx); err != nil {
		return 0, err
	}
	return l.tip, nil
}

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

// Delete removes the ledger file, serialised with appends in this and
// other processes by the file lock, and syncs the directory. Deleting an
// absent ledger is not an error. The Log stays usable: the next Append
// that writes creates a new file.
func (l *Log) Delete(ctx context.Context) error {
	if err := l.acquire(ctx); err != nil {
		return err
	}
	defer l.release()
	if err := l.usable(); err != nil {
		return err
	}
	for {
		if l.f == nil {
			err := l.openExisting()
			if errors.Is(err, fs.ErrNotExist) {
				l.reset()
				return nil
			}
			if err != nil {
				return err
			}
		}
		if err := l.lockCtx(ctx); err != nil {
			return err
		}
		same, err := l.sameFile()
		if err != nil {
			l.unlockFile()
			return err
		}
		if !same {
			l.unlockFile()
			l.drop()
			continue
		}
		err = os.Remove(l.path)
		if err == nil {
			err = syncDir(l.dir)
		}
		l.unlockFile()
		l.drop()
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
		return err
	}
}

// Close releases the file. Appends still queued fail with ErrClosed;
// cursors already returned by Read keep working until they are closed.
// Close is idempotent.
func (l *Log) Close() error {
	l.token <- struct{}{}
	defer l.release()
	l.qmu.Lock()
	already := l.closed
	l.closed = true
	l.qmu.Unlock()
	if already {
		return nil
	}
	var err error
	if l.f != nil {
		err = l.f.Close()
		l.f, l.fd = nil, -1
	}
	l.wbuf, l.index = nil, nil
	return err
}

func (l *Log) acquire(ctx context.Context) error {
	select {
	case l.token <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *Log) release() { <-l.token }

func (l *Log) usable() error {
	l.qmu.Lock()
	closed := l.closed
	l.qmu.Unlock()
	if closed {
		return ErrClosed
	}
	return l.broken
}

// refresh brings the cached state in line with the file the path names
// now. The caller holds the token. The usual case costs one lstat.
func (l *Log) refresh(ctx context.Context) error {
	for {
		var st unix.Stat_t
		err := unix.Lstat(l.path, &st)
		if errors.Is(err, unix.ENOENT) {
			l.drop()
			return nil
		}
		if err != nil {
			return &os.PathError{Op: "lstat", Path: l.path, Err: err}
		}
		if l.f == nil || uint64(st.Dev) != l.dev || uint64(st.Ino) != l.ino {
			l.drop()
			if err := l.openExisting(); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				return err
			}
			continue // look again, now with our own inode
		}
		if st.Size == l.end {
			return nil
		}
		// Another writer moved the end: catch up under the lock, so we
		// never mistake a write in progress for a torn tail.
		if err := l.lockCtx(ctx); err != nil {
			return err
		}
		same, err := l.sameFile()
		if err == nil && same {
			err = l.catchUp()
		}
		l.unlockFile()
		if err != nil || same {
			return err
		}
		l.drop()
	}
}

// openExisting opens the file at path for reading and writing, without
// creating it or following a symlink, and resets the cached state.
func (l *Log) openExisting() error {
	f, err := os.OpenFile(l.path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	if err := l.adopt(f); err != nil {
		f.Close()
		return err
	}
	l.dirSynced = false
	return nil
}

// create makes the file (exclusively), syncs the directory, and adopts it.
func (l *Log) create() error {
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if err := l.adopt(f); err != nil {
		f.Close()
		return err
	}
	if err := syncDir(l.dir); err != nil {
		l.drop()
		return err
	}
	l.dirSynced = true
	return nil
}

func (l *Log) adopt(f *os.File) error {
	fd := int(f.Fd())
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: l.path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return &os.PathError{Op: "open", Path: l.path, Err: errors.New("not a regular file")}
	}
	l.f, l.fd = f, fd
	l.dev, l.ino = uint64(st.Dev), uint64(st.Ino)
	l.reset()
	return nil
}

// reset forgets the cached contents (not the file).
func (l *Log) reset() {
	l.end, l.tip = 0, 0
	l.index = l.index[:0]
}

// drop closes the file and forgets the cached state.
func (l *Log) drop() {
	if l.f != nil {
		l.f.Close()
	}
	l.f, l.fd = nil, -1
	l.dev, l.ino = 0, 0
	l.dirSynced = false
	l.reset()
}

// sameFile reports whether the path still names the open file.
func (l *Log) sameFile() (bool, error) {
	var st unix.Stat_t
	err := unix.Lstat(l.path, &st)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, &os.PathError{Op: "lstat", Path: l.path, Err: err}
	}
	return uint64(st.Dev) == l.dev && uint64(st.Ino) == l.ino, nil
}

// lockFile takes the exclusive flock on the open file. With alive == nil
// it blocks in the kernel; otherwise it polls with backoff and gives up
// with alive's error as soon as alive returns one.
func (l *Log) lockFile(alive func() error) error {
	if alive == nil {
		for {
			err := unix.Flock(l.fd, unix.LOCK_EX)
			if err == nil {
				return nil
			}
			if err != unix.EINTR {
				return &os.PathError{Op: "flock", Path: l.path, Err: err}
			}
		}
	}
	backoff := 20 * time.Microsecond
	for {
		err := unix.Flock(l.fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			return &os.PathError{Op: "flock", Path: l.path, Err: err}
		}
		if err := alive(); err != nil {
			return err
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 2*time.Millisecond)
	}
}

// lockCtx takes the file lock, honouring ctx: it blocks in the kernel
// when ctx cannot be cancelled and polls otherwise.
func (l *Log) lockCtx(ctx context.Context) error {
	if ctx.Done() == nil {
		return l.lockFile(nil)
	}
	return l.lockFile(ctx.Err)
}

func (l *Log) unlockFile() {
	// Closing the descriptor would release the lock too; an error here
	// leaves nothing to do.
	_ = unix.Flock(l.fd, unix.LOCK_UN)
}

// catchUp validates frames between the cached end and the end of the file
// and advances the cached state, repairing a torn tail. The caller holds
// the token and the file lock.
func (l *Log) catchUp() error {
	var st unix.Stat_t
	if err := unix.Fstat(l.fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: l.path, Err: err}
	}
	size := st.Size
	if size == l.end {
		return nil
	}
	if size < l.end {
		// Records we had validated are gone: trust nothing and rescan.
		l.reset()
	}
	return l.scan(size)
}

// scan validates frames from the cached end to size, repairing a torn
// tail, and advances the cached state. On corruption the state and the
// file are left as they were.
func (l *Log) scan(size int64) error {
	rd := newReader(l.f, l.end, size)
	pos, tip := l.end, l.tip
	nIndex := len(l.index)
	corrupt := func(off int64, reason string, err error) error {
		l.index = l.index[:nIndex]
		return &storage.CorruptError{Name: l.name, Path: l.path, Offset: off, Reason: reason, Err: err}
	}
	defer rd.release()
	for pos < size {
		fr, n, derr, err := rd.frameAt(pos)
		if err != nil {
			l.index = l.index[:nIndex]
			return err
		}
		if derr != nil {
			// A bad frame: a torn tail if nothing valid follows it.
			q, found, err := findFrame(&rd, pos+1, size)
			if err != nil {
				l.index = l.index[:nIndex]
				return err
			}
			if found {
				return corrupt(pos, fmt.Sprintf("bad frame (%v) followed by a valid frame at byte %d", derr, q), derr)
			}
			if err := l.f.Truncate(pos); err != nil {
				l.index = l.index[:nIndex]
				return err
			}
			if err := l.f.Sync(); err != nil {
				l.index = l.index[:nIndex]
				return err
			}
			break
		}
		if fr.Seq != tip+1 {
			return corrupt(pos, fmt.Sprintf("sequence %d where %d was expected", fr.Seq, tip+1), nil)
		}
		tip = fr.Seq
		if (tip-1)%l.interval == 0 {
			l.index = append(l.index, pos)
		}
		pos += int64(n)
	}
	l.end, l.tip = pos, tip
	return nil
}

var magic = []byte(frame.Magic)

// findFrame looks for a complete frame with a valid checksum starting
// anywhere in [from, limit).
func findFrame(rd *reader, from, limit int64) (int64, bool, error) {
	pos := from
	for limit-pos >= frame.Overhead {
		w, err := rd.at(pos, int(min(limit-pos, readChunk)))
		if err != nil {
			return 0, false, err
		}
		i := bytes.Index(w, magic)
		if i < 0 {
			pos += int64(max(1, len(w)-len(magic)+1))
			continue
		}
		q := pos + int64(i)
		b, err := rd.at(q, frame.HeaderSize)
		if err != nil {
			return 0, false, err
		}
		if h, err := frame.DecodeHeader(b); err == nil && limit-q >= int64(h.Size()) {
			if b, err = rd.at(q, h.Size()); err != nil {
				return 0, false, err
			}
			if _, _, err := frame.Decode(b); err == nil {
				return q, true, nil
			}
		}
		pos = q + 1
	}
	return 0, false, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

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
