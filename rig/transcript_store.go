package rig

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"looprig/rig/storage"
)

// An agent's transcript is stored as a manifest blob that lists its
// content in chunks of transcriptChunk bytes (the last one shorter). The
// agent only appends to its transcript, so every full chunk of one turn's
// transcript is a chunk of the next turn's, and blobs are stored once by
// content: a turn stores what it added (and the last chunk again), not the
// whole conversation.

// transcriptChunk is the size of a transcript's chunks.
const transcriptChunk = 1 << 20

// maxTranscriptManifest bounds a transcript manifest read back (about 70
// bytes a chunk: a 1 MiB manifest lists some 14 GiB).
const maxTranscriptManifest = 1 << 20

// transcriptManifest lists a stored transcript's chunks.
type transcriptManifest struct {
	V      int      `json:"v"`
	Size   int64    `json:"size"`
	SHA256 string   `json:"sha256"` // of the whole transcript
	Chunks []string `json:"chunks"` // the chunks' digests, in order
}

const transcriptManifestVersion = 1

// putTranscript stores the content of f (read from its start) as chunks
// and a manifest; it returns the manifest's digest and the content's size.
// A chunk that prev (the transcript stored before, nil for none) holds at
// the same place is not put again: it is stored, and referenced by the
// manifest on record, which a sweep keeps.
func putTranscript(ctx context.Context, store storage.BlobStore, f io.Reader, prev *transcriptManifest) (storage.Digest, int64, error) {
	m := transcriptManifest{V: transcriptManifestVersion}
	whole := sha256.New()
	buf := make([]byte, transcriptChunk)
	for i := 0; ; i++ {
		n, err := io.ReadFull(f, buf)
		if n > 0 {
			whole.Write(buf[:n])
			sum := sha256.Sum256(buf[:n])
			digest := hex.EncodeToString(sum[:])
			if prev == nil || i >= len(prev.Chunks) || prev.Chunks[i] != digest {
				if _, perr := store.PutBlob(ctx, bytes.NewReader(buf[:n])); perr != nil {
					return storage.Digest{}, 0, perr
				}
			}
			m.Chunks = append(m.Chunks, digest)
			m.Size += int64(n)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return storage.Digest{}, 0, err
		}
	}
	m.SHA256 = hex.EncodeToString(whole.Sum(nil))
	b, err := json.Marshal(m)
	if err != nil {
		return storage.Digest{}, 0, err
	}
	info, err := store.PutBlob(ctx, bytes.NewReader(b))
	if err != nil {
		return storage.Digest{}, 0, err
	}
	return info.Digest, m.Size, nil
}

// TranscriptManifestError: a stored transcript's manifest cannot be read
// or is not one.
type TranscriptManifestError struct {
	Blob string
	Err  error
}

func (e *TranscriptManifestError) Error() string {
	return fmt.Sprintf("the transcript manifest %.12s: %v", e.Blob, e.Err)
}

func (e *TranscriptManifestError) Unwrap() error { return e.Err }

// loadTranscript reads the manifest of stored transcript d and checks
// it.
func loadTranscript(ctx context.Context, store storage.BlobStore, d storage.Digest) (transcriptManifest, error) {
	var m transcriptManifest
	fail := func(err error) (transcriptManifest, error) {
		return transcriptManifest{}, &TranscriptManifestError{Blob: d.String(), Err: err}
	}
	r, err := store.GetBlob(ctx, d)
	if err != nil {
		return fail(err)
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, maxTranscriptManifest+1))
	switch {
	case err != nil:
		return fail(err)
	case len(b) > maxTranscriptManifest:
		return fail(fmt.Errorf("over %d bytes", maxTranscriptManifest))
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return fail(err)
	}
	if m.V != transcriptManifestVersion {
		return fail(fmt.Errorf("version %d, this looprig reads %d", m.V, transcriptManifestVersion))
	}
	if _, err := hex.DecodeString(m.SHA256); err != nil || len(m.SHA256) != 2*sha256.Size {
		return fail(fmt.Errorf("sha256 %q", m.SHA256))
	}
	for _, c := range m.Chunks {
		if _, err := storage.ParseDigest(c); err != nil {
			return fail(err)
		}
	}
	return m, nil
}

// writeTranscript writes the content of stored transcript m to w, every
// chunk verified by the store, and the whole against the manifest.
func writeTranscript(ctx context.Context, store storage.BlobStore, m transcriptManifest, w io.Writer) error {
	whole := sha256.New()
	var n int64
	for _, c := range m.Chunks {
		d, _ := storage.ParseDigest(c)
		r, err := store.GetBlob(ctx, d)
		if err != nil {
			return err
		}
		k, err := io.Copy(io.MultiWriter(w, whole), r)
		r.Close()
		if err != nil {
			return err
		}
		n += k
	}
	if n != m.Size || hex.EncodeToString(whole.Sum(nil)) != m.SHA256 {
		return fmt.Errorf("the transcript's chunks hold %d bytes that do not match its manifest (%d bytes)", n, m.Size)
	}
	return nil
}

// continues reports whether the file at path holds at least n bytes and
// its first n hash to sum (hex SHA-256).
func continues(path, sum string, n int64) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	h := sha256.New()
	if got, err := io.CopyN(h, f, n); err != nil || got != n {
		return false
	}
	return hex.EncodeToString(h.Sum(nil)) == sum
}
