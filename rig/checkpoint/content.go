package checkpoint

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"

	"looprig/rig/storage"
)

// openContent opens the content of file entry e: its chunks one after the
// other, each verified against its digest at its end, and the whole
// against the file's digest and size, so that a caller reading to io.EOF
// never takes damaged content for good (a *storage.CorruptError wrapping
// storage.ErrBlobDigest in its place).
func openContent(ctx context.Context, blobs storage.BlobStore, e *Entry) io.ReadCloser {
	return &contentReader{ctx: ctx, blobs: blobs, e: e, whole: sha256.New()}
}

type contentReader struct {
	ctx   context.Context
	blobs storage.BlobStore
	e     *Entry
	next  int // chunk to open next
	cur   io.ReadCloser
	curN  int64
	chunk hash.Hash
	whole hash.Hash
	n     int64
	err   error
}

func (r *contentReader) Read(p []byte) (int, error) {
	for r.err == nil {
		if r.cur == nil {
			if r.next == len(r.e.Chunks) {
				r.err = r.finish()
				break
			}
			c := r.e.Chunks[r.next]
			rc, err := r.blobs.GetBlobRange(r.ctx, c.Pack, c.Offset, c.Length)
			if err != nil {
				r.err = err
				break
			}
			r.cur, r.curN = rc, 0
			if r.chunk == nil {
				r.chunk = sha256.New()
			}
			r.chunk.Reset()
		}
		c := r.e.Chunks[r.next]
		if rem := c.Length - r.curN; int64(len(p)) > rem {
			p = p[:rem]
		}
		n, err := r.cur.Read(p)
		r.chunk.Write(p[:n])
		r.whole.Write(p[:n])
		r.curN += int64(n)
		r.n += int64(n)
		if r.curN == c.Length || err == io.EOF {
			r.cur.Close()
			r.cur = nil
			r.next++
			if r.curN != c.Length {
				r.err = chunkCorrupt(c, fmt.Sprintf("%d bytes, want %d", r.curN, c.Length))
			} else if got := sumOf(r.chunk); got != c.Digest {
				r.err = chunkCorrupt(c, "content hashes to "+got.String())
			}
			if r.err != nil {
				return n, r.err
			}
		} else if err != nil {
			r.err = err
		}
		if n > 0 {
			return n, nil
		}
	}
	return 0, r.err
}

// finish checks the whole content at its end.
func (r *contentReader) finish() error {
	if r.n != r.e.Size {
		return &storage.CorruptError{Name: storage.BlobName(r.e.Digest), Offset: -1,
			Reason: fmt.Sprintf("%s: chunks hold %d bytes, the file %d", r.e.Path, r.n, r.e.Size), Err: storage.ErrBlobDigest}
	}
	if got := sumOf(r.whole); got != r.e.Digest {
		return &storage.CorruptError{Name: storage.BlobName(r.e.Digest), Offset: -1,
			Reason: r.e.Path + ": content hashes to " + got.String(), Err: storage.ErrBlobDigest}
	}
	return io.EOF
}

func (r *contentReader) Close() error {
	if r.cur != nil {
		r.cur.Close()
		r.cur = nil
	}
	return nil
}

func sumOf(h hash.Hash) storage.Digest {
	var d storage.Digest
	h.Sum(d[:0])
	return d
}

func chunkCorrupt(c Chunk, reason string) error {
	return &storage.CorruptError{Name: storage.BlobName(c.Pack), Offset: c.Offset,
		Reason: "chunk " + c.Digest.String() + ": " + reason, Err: storage.ErrBlobDigest}
}
