package logfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"looprig/fsstore/internal/fsutil"
)

// DefaultIndexInterval is the default spacing, in records, of the sparse
// in-memory index Read uses to seek.
const DefaultIndexInterval = 1024

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
	readOnly  bool    // f is open for reading only (openExisting)
	broken    error   // sticky: a failed sync leaves the file state unknown
	wbuf      []byte
	spare     []*request

	syncs atomic.Uint64 // fdatasync calls on success paths (for tests and metrics)

	// Test hooks, set only by tests in this package.
	hookLead func() // called by a leader before it takes the queue
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

// Syncs returns how many fdatasync calls committed appends so far.
func (l *Log) Syncs() uint64 { return l.syncs.Load() }

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
			err = fsutil.SyncDir(l.dir)
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
