package checkpoint

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"time"

	"looprig/rig/storage"
)

// Index caches, per regular file, the stat data it had when it was last
// read and the digest of its content, as git's index does: a Take given
// the previous Take's Index does not read a file whose stat data are all
// unchanged. It is JSON-able (the caller keeps it in a local state file;
// see MarshalIndex and UnmarshalIndex). An Index belongs to one workspace
// on one machine: inode numbers and change times mean nothing elsewhere.
type Index struct {
	Version int                   `json:"version"`
	Files   map[string]IndexEntry `json:"files"`
}

// IndexEntry is one file's cached stat data and digest.
type IndexEntry struct {
	Size    int64          `json:"size"`
	Mode    fs.FileMode    `json:"mode"`
	MtimeNs int64          `json:"mtime_ns"`
	CtimeNs int64          `json:"ctime_ns,omitempty"` // 0 where the OS has none
	Ino     uint64         `json:"ino,omitempty"`
	Digest  storage.Digest `json:"digest"`
}

const indexVersion = 1

// racyWindow: a file modified less than this before a Take started is
// "racily clean" (git's term) and left out of the new index, so the next
// Take reads it again. File times come from a coarse clock (one scheduler
// tick on Linux; 1 s or 2 s on some file systems), so a write just after
// the file was read could leave its size and mtime as they were; only a
// file whose mtime is well in the past when it is read can be trusted to
// show a later write by a new mtime.
const racyWindow = 2 * time.Second

// stamp is the stat data compared.
type stamp struct {
	size    int64
	mode    fs.FileMode
	mtimeNs int64
	ctimeNs int64
	ino     uint64
}

func stampOf(fi fs.FileInfo) stamp {
	ino, ctime := inodeCtime(fi)
	return stamp{size: fi.Size(), mode: fi.Mode(), mtimeNs: fi.ModTime().UnixNano(), ctimeNs: ctime, ino: ino}
}

func (s stamp) matches(e IndexEntry) bool {
	return s.size == e.Size && s.mode == e.Mode && s.mtimeNs == e.MtimeNs && s.ctimeNs == e.CtimeNs && s.ino == e.Ino
}

// sameContent reports whether a re-stat after reading shows the file as
// it was before: a write in between changes size, mtime or ctime.
func (s stamp) sameContent(t stamp) bool {
	return s.size == t.size && s.mtimeNs == t.mtimeNs && s.ctimeNs == t.ctimeNs && s.ino == t.ino
}

func (s stamp) entry(d storage.Digest) IndexEntry {
	return IndexEntry{Size: s.size, Mode: s.mode, MtimeNs: s.mtimeNs, CtimeNs: s.ctimeNs, Ino: s.ino, Digest: d}
}

// lookup returns the digest cached for path p, if its stat data match.
func (ix *Index) lookup(p string, s stamp) (storage.Digest, bool) {
	if ix == nil {
		return storage.Digest{}, false
	}
	e, ok := ix.Files[p]
	if !ok || !s.matches(e) {
		return storage.Digest{}, false
	}
	return e.Digest, true
}

// MarshalIndex encodes ix as JSON.
func MarshalIndex(ix *Index) ([]byte, error) {
	b, err := json.Marshal(ix)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: marshal index: %w", err)
	}
	return b, nil
}

// UnmarshalIndex decodes an Index MarshalIndex encoded. An index of
// another version is an error (the caller drops it: the next Take reads
// every file).
func UnmarshalIndex(b []byte) (*Index, error) {
	var ix Index
	if err := json.Unmarshal(b, &ix); err != nil {
		return nil, fmt.Errorf("checkpoint: unmarshal index: %w", err)
	}
	if ix.Version != indexVersion {
		return nil, fmt.Errorf("checkpoint: unmarshal index: version %d, want %d", ix.Version, indexVersion)
	}
	return &ix, nil
}
