package checkpoint

import (
	"context"
	"fmt"
	"io"
	"time"

	"looprig/rig/storage"
)

// Result is what Take stored.
type Result struct {
	Manifest  storage.Digest // the manifest's blob
	Files     int            // regular files in the manifest
	Bytes     int64          // their total size
	BytesRead int64          // bytes read from files this time (not vouched for by the index)
	Index     *Index         // pass as Options.Index to the next Take of this workspace
	Skipped   []Skipped      // paths left out, for the caller to journal
}

// Take checkpoints the workspace at root: it walks it without following
// symlinks, leaves out what .looprigignore and opts.Exclude exclude,
// stores every regular file's content as a blob (streamed: a file is
// never held in memory whole) unless opts.Index vouches for its digest,
// then stores the manifest as a blob. A file that changes while it is
// read is read once more; if it changes again it is left out and reported
// in Result.Skipped (SkipChanged), as are symlinks leading outside the
// workspace and special files.
//
// Blobs stored before a failure stay; they are unreferenced, for a sweep.
func Take(ctx context.Context, blobs storage.BlobStore, root string, opts Options) (Result, error) {
	start := time.Now()
	s, err := walk(ctx, root, opts.Exclude)
	if err != nil {
		return Result{}, err
	}
	if opts.MaxBytes > 0 && s.total > opts.MaxBytes {
		return Result{}, &TooLargeError{Limit: opts.MaxBytes, Size: s.total}
	}
	put := func(ctx context.Context, r io.Reader) (storage.Digest, int64, error) {
		c := &countingReader{r: r}
		info, err := blobs.PutBlob(ctx, c)
		return info.Digest, c.n, err
	}
	read, err := s.digestFiles(ctx, opts.Index, put, opts.Parallel)
	if err != nil {
		return Result{BytesRead: read}, err
	}
	m, err := NewManifest(s.entries)
	if err != nil {
		return Result{BytesRead: read}, fmt.Errorf("checkpoint: %w", err)
	}
	total := m.Size()
	if opts.MaxBytes > 0 && total > opts.MaxBytes {
		return Result{BytesRead: read}, &TooLargeError{Limit: opts.MaxBytes, Size: total}
	}
	d, err := m.store(ctx, blobs)
	if err != nil {
		return Result{BytesRead: read}, err
	}
	return Result{
		Manifest:  d,
		Files:     len(s.files),
		Bytes:     total,
		BytesRead: read,
		Index:     s.newIndex(start),
		Skipped:   s.skipped,
	}, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
