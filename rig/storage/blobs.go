package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// BlobStore keeps content-addressed objects: immutable byte strings named
// by the SHA-256 of their content (Digest), of any size, streamed in and
// out in bounded memory. Workspace checkpoints keep their files in it.
//
// A blob is either wholly there or absent: a crash while one is put leaves
// no blob under its digest (perhaps only unreferenced scraps a store may
// clean up), and an acknowledged put survives a crash as journal appends
// do. Blobs are shared: the same content put twice, by any session on any
// machine, is one blob.
type BlobStore interface {
	// PutBlob stores everything r yields, until io.EOF, and returns its
	// digest and size once it is durable. Putting content that is already
	// there succeeds, and renews the blob's Modified time (see
	// BlobInfo), so that a sweep of unreferenced blobs that started
	// before does not delete a blob a checkpoint in progress has just
	// referenced. An error of r is returned, wrapped, and nothing is
	// stored.
	PutBlob(ctx context.Context, r io.Reader) (BlobInfo, error)
	// GetBlob opens blob d for reading. An absent blob is *BlobNotFoundError.
	// The reader verifies what it yields: at the end of the content, when
	// the bytes read do not hash to d or their count is not the size
	// stored, Read returns a *CorruptError (wrapping ErrBlobDigest)
	// instead of io.EOF, so a caller that reads to the end never takes
	// damaged content for good. The caller closes it.
	GetBlob(ctx context.Context, d Digest) (io.ReadCloser, error)
	// StatBlob returns blob d's information, or *BlobNotFoundError.
	StatBlob(ctx context.Context, d Digest) (BlobInfo, error)
	// DeleteBlob removes blob d. Deleting an absent blob is not an error.
	DeleteBlob(ctx context.Context, d Digest) error
	// ListBlobs calls fn with every blob, in no particular order, until
	// fn returns an error, which ListBlobs returns. Blobs put or deleted
	// during the listing may or may not be seen.
	ListBlobs(ctx context.Context, fn func(BlobInfo) error) error
	// TouchBlob renews blob d's Modified time to now, as putting its
	// content again would, without the content: a sweep that lists it
	// afterwards sees it as just put. An absent blob is
	// *BlobNotFoundError and nothing is created. It returns the blob's
	// information after the renewal.
	TouchBlob(ctx context.Context, d Digest) (BlobInfo, error)
	// DeleteBlobs removes, of the blobs ds, those last modified before
	// cutoff (all of them when cutoff is zero), as DeleteBlob would one by
	// one but in bulk (fewer syncs, round trips in parallel); the check of
	// Modified and the removal are as close together as the store allows,
	// so that a blob renewed (PutBlob, TouchBlob) after a sweep listed it
	// is not removed. Absent blobs are skipped, not an error. It returns
	// the blobs it removed (their size for reporting). On an error some
	// may have been removed: the ones returned.
	DeleteBlobs(ctx context.Context, ds []Digest, cutoff time.Time) ([]BlobInfo, error)
	// GetBlobRange opens length bytes of blob d starting at offset, NOT
	// verified against d (the caller verifies what it reads against a
	// digest of its own: a chunk inside a pack). offset < 0, length < 0
	// or offset+length beyond the blob's size is an error (a
	// *CorruptError when the blob is shorter than the range the caller
	// expected: errors.As finds it, also when the content turns out
	// shorter while it is read). An absent blob is *BlobNotFoundError.
	// The caller closes it. It does not read the blob from its start
	// where the store can seek: fsstore preads; natsstore starts at the
	// chunk holding offset.
	GetBlobRange(ctx context.Context, d Digest, offset, length int64) (io.ReadCloser, error)
}

// Digest is the SHA-256 of a blob's content.
type Digest [sha256.Size]byte

// DigestOf returns the digest of b.
func DigestOf(b []byte) Digest { return sha256.Sum256(b) }

// String is the digest in lower-case hex (64 characters).
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// IsZero reports whether d is the zero value (no digest).
func (d Digest) IsZero() bool { return d == Digest{} }

// ParseDigest parses 64 lower-case hex characters.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	if len(s) != 2*len(d) {
		return d, fmt.Errorf("blob digest %q: want %d hex characters", s, 2*len(d))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return d, fmt.Errorf("blob digest %q: want lower-case hex", s)
		}
	}
	if _, err := hex.Decode(d[:], []byte(s)); err != nil {
		return d, fmt.Errorf("blob digest %q: %w", s, err)
	}
	return d, nil
}

// MarshalText implements encoding.TextMarshaler (hex).
func (d Digest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (hex).
func (d *Digest) UnmarshalText(b []byte) error {
	v, err := ParseDigest(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// BlobInfo describes a stored blob.
type BlobInfo struct {
	Digest Digest
	Size   int64
	// Modified is when the blob was last put (stored or put again) or
	// touched (BlobStore.TouchBlob).
	Modified time.Time
}

// BlobNotFoundError reports an absent blob.
type BlobNotFoundError struct {
	Digest Digest
}

func (e *BlobNotFoundError) Error() string { return fmt.Sprintf("blob %s not found", e.Digest) }

// ErrBlobDigest is wrapped by the *CorruptError a blob reader returns when
// the content it read does not match its digest or size.
var ErrBlobDigest = errors.New("blob content does not match its digest")

// BlobName is the name a *CorruptError about blob d carries.
func BlobName(d Digest) string { return "blobs/" + d.String() }

// VerifyingReader wraps r, the stored content of blob d of size bytes,
// so that it returns a *CorruptError wrapping ErrBlobDigest in place of
// io.EOF when what it yielded does not hash to d or is not size bytes
// long (size < 0: the length is not checked). Stores return their blob
// readers through it; path names the file, when there is one.
func VerifyingReader(r io.ReadCloser, d Digest, size int64, path string) io.ReadCloser {
	return &verifyingReader{r: r, d: d, size: size, path: path, h: sha256.New()}
}

type verifyingReader struct {
	r    io.ReadCloser
	d    Digest
	size int64
	path string
	h    hash.Hash
	n    int64
	err  error // sticky, once the end was checked
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if v.size >= 0 && v.n > v.size {
		v.err = v.corrupt(fmt.Sprintf("longer than its %d bytes", v.size))
		return n, v.err
	}
	if err == io.EOF {
		var got Digest
		v.h.Sum(got[:0])
		switch {
		case v.size >= 0 && v.n != v.size:
			v.err = v.corrupt(fmt.Sprintf("%d bytes, want %d", v.n, v.size))
		case got != v.d:
			v.err = v.corrupt("content hashes to " + got.String())
		default:
			v.err = io.EOF
		}
		return n, v.err
	}
	return n, err
}

func (v *verifyingReader) corrupt(reason string) error {
	return &CorruptError{Name: BlobName(v.d), Path: v.path, Offset: -1, Reason: reason, Err: ErrBlobDigest}
}

func (v *verifyingReader) Close() error { return v.r.Close() }

// CheckRange checks the range of GetBlobRange, offset and length, against
// the size of blob d: a negative offset or length is an error, a range
// past the end of the blob a *CorruptError (path names the file, when
// there is one). Stores call it before they read.
func CheckRange(d Digest, size, offset, length int64, path string) error {
	switch {
	case offset < 0 || length < 0:
		return fmt.Errorf("blob %s: range of %d bytes at %d: negative", d, length, offset)
	case offset > size || length > size-offset:
		return &CorruptError{Name: BlobName(d), Path: path, Offset: -1,
			Reason: fmt.Sprintf("%d bytes, shorter than the range of %d bytes at %d", size, length, offset)}
	}
	return nil
}

// RangeReader wraps r, the stored content of blob d from offset on, so
// that it yields length bytes and then io.EOF, and a *CorruptError
// wrapping io.ErrUnexpectedEOF in place of an io.EOF that comes before
// length bytes (the blob got shorter than its size said). It does not
// verify the content. Stores return their GetBlobRange readers through
// it; path names the file, when there is one.
func RangeReader(r io.ReadCloser, d Digest, offset, length int64, path string) io.ReadCloser {
	return &rangeReader{r: r, d: d, offset: offset, left: length, path: path}
}

type rangeReader struct {
	r      io.ReadCloser
	d      Digest
	offset int64 // of the next byte
	left   int64
	path   string
	err    error // sticky, once the end was reached
}

func (v *rangeReader) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	if v.left == 0 {
		v.err = io.EOF
		return 0, v.err
	}
	if int64(len(p)) > v.left {
		p = p[:v.left]
	}
	n, err := v.r.Read(p)
	v.offset += int64(n)
	v.left -= int64(n)
	switch {
	case err == io.EOF && v.left > 0:
		v.err = &CorruptError{Name: BlobName(v.d), Path: v.path, Offset: v.offset,
			Reason: fmt.Sprintf("ends at byte %d, %d bytes before the end of the range read", v.offset, v.left),
			Err:    io.ErrUnexpectedEOF}
		return n, v.err
	case err == io.EOF || err == nil && v.left == 0:
		v.err = io.EOF
		return n, v.err
	}
	return n, err
}

func (v *rangeReader) Close() error { return v.r.Close() }

// DeleteInParallel is the loop of a store's DeleteBlobs: it calls del(i)
// for each i in [0, n), on up to par goroutines at once, and returns the
// blobs the calls removed, in the order they returned. The first error
// stops it: the calls in progress finish (what they removed is returned
// too), no other starts, and it returns that error.
func DeleteInParallel(n, par int, del func(i int) ([]BlobInfo, error)) ([]BlobInfo, error) {
	var (
		mu      sync.Mutex
		removed []BlobInfo
		first   error
		next    atomic.Int64
		wg      sync.WaitGroup
	)
	for range min(par, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				mu.Lock()
				stop := first != nil
				mu.Unlock()
				if stop || i >= n {
					return
				}
				got, err := del(i)
				mu.Lock()
				removed = append(removed, got...)
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return removed, first
}
