package memstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"time"

	"looprig/rig/storage"
)

// memBlob is one stored blob. Its bytes are never mutated (DamageBlob
// replaces them).
type memBlob struct {
	data     []byte
	modified time.Time
}

var _ storage.BlobStore = (*Store)(nil)

// PutBlob implements storage.BlobStore. The content is held in memory, so
// memstore's blobs are as big as the test that puts them.
func (s *Store) PutBlob(ctx context.Context, r io.Reader) (storage.BlobInfo, error) {
	if err := ctxErr(ctx, "put blob", ""); err != nil {
		return storage.BlobInfo{}, err
	}
	var buf bytes.Buffer
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(&buf, h), r); err != nil {
		return storage.BlobInfo{}, fmt.Errorf("memstore: put blob: %w", err)
	}
	var d storage.Digest
	h.Sum(d[:0])
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.blobs == nil {
		s.blobs = make(map[storage.Digest]*memBlob)
	}
	if b := s.blobs[d]; b != nil {
		b.modified = now
	} else {
		s.blobs[d] = &memBlob{data: buf.Bytes(), modified: now}
	}
	return storage.BlobInfo{Digest: d, Size: int64(buf.Len()), Modified: now}, nil
}

// GetBlob implements storage.BlobStore.
func (s *Store) GetBlob(ctx context.Context, d storage.Digest) (io.ReadCloser, error) {
	if err := ctxErr(ctx, "get blob", d.String()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	b := s.blobs[d]
	s.mu.Unlock()
	if b == nil {
		return nil, &storage.BlobNotFoundError{Digest: d}
	}
	return storage.VerifyingReader(io.NopCloser(bytes.NewReader(b.data)), d, int64(len(b.data)), ""), nil
}

// StatBlob implements storage.BlobStore.
func (s *Store) StatBlob(ctx context.Context, d storage.Digest) (storage.BlobInfo, error) {
	if err := ctxErr(ctx, "stat blob", d.String()); err != nil {
		return storage.BlobInfo{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.blobs[d]
	if b == nil {
		return storage.BlobInfo{}, &storage.BlobNotFoundError{Digest: d}
	}
	return storage.BlobInfo{Digest: d, Size: int64(len(b.data)), Modified: b.modified}, nil
}

// DeleteBlob implements storage.BlobStore.
func (s *Store) DeleteBlob(ctx context.Context, d storage.Digest) error {
	if err := ctxErr(ctx, "delete blob", d.String()); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.blobs, d)
	s.mu.Unlock()
	return nil
}

// ListBlobs implements storage.BlobStore, over a snapshot taken when it
// starts.
func (s *Store) ListBlobs(ctx context.Context, fn func(storage.BlobInfo) error) error {
	if err := ctxErr(ctx, "list blobs", ""); err != nil {
		return err
	}
	s.mu.Lock()
	infos := make([]storage.BlobInfo, 0, len(s.blobs))
	for d, b := range s.blobs {
		infos = append(infos, storage.BlobInfo{Digest: d, Size: int64(len(b.data)), Modified: b.modified})
	}
	s.mu.Unlock()
	for _, in := range infos {
		if err := fn(in); err != nil {
			return err
		}
	}
	return nil
}

// TouchBlob implements storage.BlobStore.
func (s *Store) TouchBlob(ctx context.Context, d storage.Digest) (storage.BlobInfo, error) {
	if err := ctxErr(ctx, "touch blob", d.String()); err != nil {
		return storage.BlobInfo{}, err
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.blobs[d]
	if b == nil {
		return storage.BlobInfo{}, &storage.BlobNotFoundError{Digest: d}
	}
	b.modified = now
	return storage.BlobInfo{Digest: d, Size: int64(len(b.data)), Modified: now}, nil
}

// DeleteBlobs implements storage.BlobStore: the check of each blob's time
// and its removal are one step under the store's lock.
func (s *Store) DeleteBlobs(ctx context.Context, ds []storage.Digest, cutoff time.Time) ([]storage.BlobInfo, error) {
	if err := ctxErr(ctx, "delete blobs", ""); err != nil {
		return nil, err
	}
	var removed []storage.BlobInfo
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range ds {
		b := s.blobs[d]
		if b == nil || !cutoff.IsZero() && !b.modified.Before(cutoff) {
			continue
		}
		delete(s.blobs, d)
		removed = append(removed, storage.BlobInfo{Digest: d, Size: int64(len(b.data)), Modified: b.modified})
	}
	return removed, nil
}

// GetBlobRange implements storage.BlobStore.
func (s *Store) GetBlobRange(ctx context.Context, d storage.Digest, offset, length int64) (io.ReadCloser, error) {
	if err := ctxErr(ctx, "get blob range", d.String()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	b := s.blobs[d]
	s.mu.Unlock()
	if b == nil {
		return nil, &storage.BlobNotFoundError{Digest: d}
	}
	if err := storage.CheckRange(d, int64(len(b.data)), offset, length, ""); err != nil {
		return nil, fmt.Errorf("memstore: get blob range: %w", err)
	}
	return storage.RangeReader(io.NopCloser(bytes.NewReader(b.data[offset:offset+length])), d, offset, length, ""), nil
}

// DamageBlob replaces blob d's stored content with data, keeping its
// digest, as a disk error or an attacker would: for tests of what reads
// it. It reports whether the blob was there.
func (s *Store) DamageBlob(d storage.Digest, data []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.blobs[d]
	if b == nil {
		return false
	}
	s.blobs[d] = &memBlob{data: bytes.Clone(data), modified: b.modified}
	return true
}
