package checkpoint

import (
	"fmt"

	"looprig/rig/storage"
)

// TooLargeError is returned by Take when the workspace's regular files
// total more than Options.MaxBytes. Nothing is stored for the manifest.
type TooLargeError struct {
	Limit int64 // Options.MaxBytes
	Size  int64 // the total found (at least Limit+1)
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("checkpoint: workspace holds %d bytes, more than the limit of %d", e.Size, e.Limit)
}

// ManifestError reports an encoded manifest that is not valid: malformed,
// not canonical, too big, or describing an unsafe tree.
type ManifestError struct {
	Line   int // 1-based line of the encoding, 0 when not about one line
	Reason string
	Err    error // underlying error (e.g. the store's *storage.CorruptError), if any
}

func (e *ManifestError) Error() string {
	msg := "checkpoint: invalid manifest"
	if e.Line > 0 {
		msg += fmt.Sprintf(" (line %d)", e.Line)
	}
	msg += ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *ManifestError) Unwrap() error { return e.Err }

// MaterializeError reports a file Materialize could not write, most often
// because its blob is missing (*storage.BlobNotFoundError) or damaged
// (*storage.CorruptError wrapping storage.ErrBlobDigest).
type MaterializeError struct {
	Path   string         // the file, relative to the workspace root
	Digest storage.Digest // its blob
	Err    error
}

func (e *MaterializeError) Error() string {
	return fmt.Sprintf("checkpoint: materialize %s (blob %s): %v", e.Path, e.Digest, e.Err)
}

func (e *MaterializeError) Unwrap() error { return e.Err }
