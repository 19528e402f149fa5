package fsstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"looprig/fsstore/internal/fsutil"
	"looprig/fsstore/internal/logfile"
	"looprig/rig/storage"
)

// Append implements storage.Ledger: compare-and-swap on the tip, checked
// under a flock on the ledger file so it holds across processes, one write
// and one fdatasync per group of concurrent appends.
func (s *Store) Append(ctx context.Context, name string, expected uint64, payloads ...[]byte) error {
	if err := storage.ValidateName(name); err != nil {
		return err
	}
	for _, p := range payloads {
		if len(p) > storage.MaxPayload {
			return &storage.PayloadTooLargeError{Name: name, Size: len(p), Max: storage.MaxPayload}
		}
	}
	return s.withLog(ctx, name, func(l *logfile.Log) error {
		return l.Append(ctx, expected, s.writerEpoch(name), payloads...)
	})
}

// Read implements storage.Ledger. The cursor has its own descriptor: it
// stays valid when the ledger is closed or evicted from the cache.
func (s *Store) Read(ctx context.Context, name string, after uint64) (storage.Cursor, error) {
	if err := storage.ValidateName(name); err != nil {
		return nil, err
	}
	var c storage.Cursor
	err := s.withLog(ctx, name, func(l *logfile.Log) (err error) {
		c, err = l.Read(ctx, after)
		return err
	})
	return c, err
}

// Tip implements storage.Ledger.
func (s *Store) Tip(ctx context.Context, name string) (uint64, error) {
	if err := storage.ValidateName(name); err != nil {
		return 0, err
	}
	var tip uint64
	err := s.withLog(ctx, name, func(l *logfile.Log) (err error) {
		tip, err = l.Tip(ctx)
		return err
	})
	return tip, err
}

// Delete implements storage.Ledger.
func (s *Store) Delete(ctx context.Context, name string) error {
	if err := storage.ValidateName(name); err != nil {
		return err
	}
	err := s.withLog(ctx, name, func(l *logfile.Log) error { return l.Delete(ctx) })
	var corrupt *storage.CorruptError
	if !errors.As(err, &corrupt) {
		return err
	}
	// A damaged ledger does not open, but deleting it is exactly what its
	// owner may want (looprig rm of a broken session). Nobody can append
	// to a file that does not open, so it goes without the append lock.
	path := s.ledgerPath(name)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete damaged ledger %s: %w", name, err)
	}
	return fsutil.SyncDir(filepath.Dir(path))
}

// errStoreClosed is returned by ledger operations after Close.
var errStoreClosed = errors.New("fsstore: store is closed")

// maxOpenLogs bounds the ledgers a Store keeps open; idle ones beyond it
// are closed, least recently used first, so a process touching thousands of
// sessions does not hold thousands of descriptors.
const maxOpenLogs = 64

// openLog is a cached Log with the number of operations using it.
type openLog struct {
	log     *logfile.Log
	refs    int
	lastUse uint64
}

// withLog runs fn with the open Log of name, opening (and, for an existing
// file, validating) it on first use. A Log whose file state became unknown
// is dropped, so the next operation opens and validates the file again.
func (s *Store) withLog(ctx context.Context, name string, fn func(*logfile.Log) error) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	ol, err := s.getLog(name)
	if err != nil {
		return err
	}
	err = fn(ol.log)
	s.putLog(name, ol, errors.Is(err, logfile.ErrBroken))
	return err
}

func (s *Store) getLog(name string) (*openLog, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errStoreClosed
	}
	s.useClock++
	if ol := s.logs[name]; ol != nil {
		ol.refs++
		ol.lastUse = s.useClock
		s.mu.Unlock()
		return ol, nil
	}
	s.mu.Unlock()

	// Open outside the store lock: validating a long ledger must not stall
	// the others.
	path := s.ledgerPath(name)
	if err := mkdirAll(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("ledger %s: %w", name, err)
	}
	l, err := logfile.Open(path, logfile.Options{Name: name})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		l.Close()
		return nil, errStoreClosed
	}
	if ol := s.logs[name]; ol != nil { // opened concurrently
		l.Close()
		ol.refs++
		ol.lastUse = s.useClock
		return ol, nil
	}
	ol := &openLog{log: l, refs: 1, lastUse: s.useClock}
	s.logs[name] = ol
	s.evictLocked()
	return ol, nil
}

func (s *Store) putLog(name string, ol *openLog, broken bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ol.refs--
	if broken && s.logs[name] == ol {
		delete(s.logs, name)
	}
	if s.logs[name] != ol && ol.refs == 0 {
		ol.log.Close()
		return
	}
	s.evictLocked()
}

// evictLocked closes idle Logs, least recently used first, while more than
// maxOpenLogs are open.
func (s *Store) evictLocked() {
	for len(s.logs) > maxOpenLogs {
		var victim string
		var oldest uint64
		for name, ol := range s.logs {
			if ol.refs == 0 && (victim == "" || ol.lastUse < oldest) {
				victim, oldest = name, ol.lastUse
			}
		}
		if victim == "" {
			return // all in use
		}
		s.logs[victim].log.Close()
		delete(s.logs, victim)
	}
}
