package fsstore_test

import (
	"path/filepath"

	"looprig/rig/storage"
)

// blobPath is where fsstore keeps blob d in the store in dir.
func blobPath(dir string, d storage.Digest) string {
	h := d.String()
	return filepath.Join(dir, "blobs", h[:2], h)
}
