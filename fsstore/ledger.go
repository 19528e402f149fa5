package fsstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

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
	if err := ctxErr(ctx); err != nil {
		return err
	}
	l, err := s.log(name)
	if err != nil {
		return err
	}
	return l.Append(ctx, expected, s.writerEpoch(name), payloads...)
}

// Read implements storage.Ledger.
func (s *Store) Read(ctx context.Context, name string, after uint64) (storage.Cursor, error) {
	if err := storage.ValidateName(name); err != nil {
		return nil, err
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	l, err := s.log(name)
	if err != nil {
		return nil, err
	}
	return l.Read(ctx, after)
}

// Tip implements storage.Ledger.
func (s *Store) Tip(ctx context.Context, name string) (uint64, error) {
	if err := storage.ValidateName(name); err != nil {
		return 0, err
	}
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	l, err := s.log(name)
	if err != nil {
		return 0, err
	}
	return l.Tip(ctx)
}

// Delete implements storage.Ledger.
func (s *Store) Delete(ctx context.Context, name string) error {
	if err := storage.ValidateName(name); err != nil {
		return err
	}
	if err := ctxErr(ctx); err != nil {
		return err
	}
	l, err := s.log(name)
	if err != nil {
		return err
	}
	return l.Delete(ctx)
}

// errStoreClosed is returned by ledger operations after Close.
var errStoreClosed = errors.New("fsstore: store is closed")

// log returns the open Log of name, opening (and, for an existing file,
// validating) it on first use. The open runs outside the store lock so a
// long validation scan of one ledger does not stall the others.
func (s *Store) log(name string) (*logfile.Log, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errStoreClosed
	}
	if l := s.logs[name]; l != nil {
		s.mu.Unlock()
		return l, nil
	}
	s.mu.Unlock()

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
	if other := s.logs[name]; other != nil {
		l.Close()
		return other, nil
	}
	s.logs[name] = l
	return l, nil
}
