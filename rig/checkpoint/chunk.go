package checkpoint

import (
	"github.com/restic/chunker"

	"looprig/rig/storage"
)

// Chunk is a piece of a file's content stored in a pack: Length bytes at
// Offset of the pack blob, hashing to Digest.
type Chunk struct {
	Digest storage.Digest
	Pack   storage.Digest
	Offset int64
	Length int64
}

// Content-defined chunking (restic's chunker, Rabin fingerprints over a
// 64-byte window): a file larger than smallFileMax is cut where the
// fingerprint says, so an edit in the middle of a large file changes the
// chunks around it, not every chunk after it. Files up to smallFileMax
// are one chunk, read whole.
const (
	smallFileMax = 512 << 10
	chunkMin     = 512 << 10
	chunkMax     = 4 << 20
	// chunkPolynomial is the irreducible polynomial the chunker uses. It
	// is fixed: the same content is cut the same way on every machine and
	// in every checkpoint, so a chunk seen before is found again.
	chunkPolynomial = chunker.Pol(0x3DA3358B4DC173)
)

// Packs: chunks (and the trees of directories) are appended to pack blobs
// a few MiB large, so a checkpoint of many small files is a few puts.
const (
	// packTarget is the size at which a pack is closed and put.
	packTarget = 8 << 20
	// maxChunksPerFile bounds a decoded file's chunks (a 1 TiB file of
	// chunkMin pieces).
	maxChunksPerFile = 1 << 21
)
