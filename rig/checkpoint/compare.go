package checkpoint

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"

	"looprig/rig/storage"
)

// Differences lists how directory dir differs from the checkpoint whose
// manifest is blob manifestDigest, as Diff would from the checkpoint to
// dir taken now (Added: in dir only; Removed: in the checkpoint only), but
// without patches and without storing anything: files are hashed locally
// unless opts.Index (of dir) vouches for them. dir is walked as Take walks
// it (opts.Exclude and dir's .looprigignore apply; symlinks leading out
// and special files are left out). Nothing is modified.
func Differences(ctx context.Context, blobs storage.BlobStore, manifestDigest storage.Digest, dir string, opts Options) ([]FileChange, error) {
	want, err := Load(ctx, blobs, manifestDigest)
	if err != nil {
		return nil, err
	}
	s, err := walk(ctx, dir, opts.Exclude)
	if err != nil {
		return nil, err
	}
	hash := func(ctx context.Context, r io.Reader) (storage.Digest, int64, error) {
		h := sha256.New()
		n, err := io.Copy(h, &ctxReader{ctx: ctx, r: r})
		var d storage.Digest
		h.Sum(d[:0])
		return d, n, err
	}
	if _, err := s.digestFiles(ctx, opts.Index, hash, opts.Parallel); err != nil {
		return nil, err
	}
	have, err := NewManifest(s.entries)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return compareManifests(want, have), nil
}

// ctxReader stops reading once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// StatDifferences is Differences without reading any file: a regular file
// whose size and mode are the checkpoint's counts as unchanged. It costs a
// walk and a stat per entry, for a restore to say whether the workspace it
// found is its checkpoint's.
func StatDifferences(ctx context.Context, blobs storage.BlobStore, manifestDigest storage.Digest, dir string, opts Options) ([]FileChange, error) {
	want, err := Load(ctx, blobs, manifestDigest)
	if err != nil {
		return nil, err
	}
	s, err := walk(ctx, dir, opts.Exclude)
	if err != nil {
		return nil, err
	}
	for i := range s.entries {
		e := &s.entries[i]
		if e.Kind != File {
			continue
		}
		if w, ok := want.Lookup(e.Path); ok && w.Kind == File && w.Size == e.Size && w.Mode == e.Mode {
			e.Digest = w.Digest
		}
	}
	have, err := NewManifest(s.entries)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return compareManifests(want, have), nil
}
