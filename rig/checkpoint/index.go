package checkpoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"looprig/rig/storage"
)

// Index caches, per regular file, the stat data it had when it was last
// read and where its content is, as git's index does: a Take given the
// previous Take's Index does not read a file whose stat data are all
// unchanged, and does not encode again a directory whose entries are all
// unchanged (its tree is reused). Manifest is the checkpoint the index
// describes: the directory's lineage, which a restore compares with the
// journal's checkpoints. An Index belongs to one workspace on one
// machine: inode numbers and change times mean nothing elsewhere. The
// caller keeps it in a local state file (MarshalIndex, UnmarshalIndex),
// saved only once the checkpoint it describes is journaled.
type Index struct {
	Manifest storage.Digest
	Files    map[string]IndexEntry
	Dirs     map[string]IndexDir // "" is the root
}

// IndexEntry is one file's cached stat data and content.
type IndexEntry struct {
	Size    int64
	Mode    fs.FileMode
	MtimeNs int64
	CtimeNs int64 // 0 where the OS has none
	Ino     uint64
	Digest  storage.Digest
	Chunks  []Chunk // none for an empty file
	// Racy: the file was modified too shortly before it was read for its
	// stat data to vouch for its content (see racyWindow): it is read
	// again, but its chunks are known to be stored.
	Racy bool
}

// IndexDir is one directory's tree as last stored, and the signature of
// what the walk saw of its entries then (names, kinds, modes, stat data
// of files, symlink targets, signatures of subdirectories).
type IndexDir struct {
	Sig  storage.Digest
	Tree treeRef // never SamePack
}

// indexMagic opens an encoded index; its number is the format's version.
// An index of another version is dropped (the next Take reads every file).
const indexMagic = "looprig-index 2\n"

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

func (s stamp) matches(e *IndexEntry) bool {
	return s.size == e.Size && s.mode == e.Mode && s.mtimeNs == e.MtimeNs && s.ctimeNs == e.CtimeNs && s.ino == e.Ino
}

// sameContent reports whether a re-stat after reading shows the file as
// it was before: a write in between changes size, mtime or ctime.
func (s stamp) sameContent(t stamp) bool {
	return s.size == t.size && s.mtimeNs == t.mtimeNs && s.ctimeNs == t.ctimeNs && s.ino == t.ino
}

func (s stamp) entry(d storage.Digest, chunks []Chunk) IndexEntry {
	return IndexEntry{Size: s.size, Mode: s.mode, MtimeNs: s.mtimeNs, CtimeNs: s.ctimeNs, Ino: s.ino, Digest: d, Chunks: chunks}
}

// lookup returns the cached entry for path p, if its stat data match.
func (ix *Index) lookup(p string, s stamp) (*IndexEntry, bool) {
	if ix == nil {
		return nil, false
	}
	e, ok := ix.Files[p]
	if !ok || e.Racy || !s.matches(&e) {
		return nil, false
	}
	return &e, true
}

// lookupDir returns the index's record of directory p.
func (ix *Index) lookupDir(p string) (IndexDir, bool) {
	if ix == nil {
		return IndexDir{}, false
	}
	d, ok := ix.Dirs[p]
	return d, ok
}

// Packs returns every pack the index names.
func (ix *Index) Packs() map[storage.Digest]struct{} {
	set := make(map[storage.Digest]struct{})
	if ix == nil {
		return set
	}
	for _, e := range ix.Files {
		for _, c := range e.Chunks {
			set[c.Pack] = struct{}{}
		}
	}
	for _, d := range ix.Dirs {
		set[d.Tree.Pack] = struct{}{}
	}
	return set
}

// without returns a copy of ix that names none of the packs in gone.
func (ix *Index) without(gone map[storage.Digest]bool) *Index {
	out := &Index{Manifest: ix.Manifest, Files: make(map[string]IndexEntry, len(ix.Files)), Dirs: make(map[string]IndexDir, len(ix.Dirs))}
files:
	for p, e := range ix.Files {
		for _, c := range e.Chunks {
			if gone[c.Pack] {
				continue files
			}
		}
		out.Files[p] = e
	}
	for p, d := range ix.Dirs {
		if !gone[d.Tree.Pack] {
			out.Dirs[p] = d
		}
	}
	return out
}

// MarshalIndex encodes ix compactly (varints; the packs it names once,
// in a table).
func MarshalIndex(ix *Index) ([]byte, error) {
	if ix == nil {
		return nil, errors.New("checkpoint: marshal index: no index")
	}
	packs := map[storage.Digest]uint64{}
	var table []storage.Digest
	packNo := func(d storage.Digest) uint64 {
		n, ok := packs[d]
		if !ok {
			n = uint64(len(table))
			packs[d] = n
			table = append(table, d)
		}
		return n
	}
	var body []byte
	body = binary.AppendUvarint(body, uint64(len(ix.Files)))
	for p, e := range ix.Files {
		body = appendString(body, p)
		body = binary.AppendVarint(body, e.Size)
		body = binary.AppendUvarint(body, uint64(e.Mode))
		body = binary.AppendVarint(body, e.MtimeNs)
		body = binary.AppendVarint(body, e.CtimeNs)
		body = binary.AppendUvarint(body, e.Ino)
		body = append(body, e.Digest[:]...)
		racy := uint64(0)
		if e.Racy {
			racy = 1
		}
		body = binary.AppendUvarint(body, uint64(len(e.Chunks))<<1|racy)
		for _, c := range e.Chunks {
			if len(e.Chunks) > 1 {
				body = append(body, c.Digest[:]...)
			}
			body = binary.AppendUvarint(body, packNo(c.Pack))
			body = binary.AppendVarint(body, c.Offset)
			body = binary.AppendVarint(body, c.Length)
		}
	}
	body = binary.AppendUvarint(body, uint64(len(ix.Dirs)))
	for p, d := range ix.Dirs {
		body = appendString(body, p)
		body = append(body, d.Sig[:]...)
		body = append(body, d.Tree.Digest[:]...)
		body = binary.AppendUvarint(body, packNo(d.Tree.Pack))
		body = binary.AppendVarint(body, d.Tree.Offset)
		body = binary.AppendVarint(body, d.Tree.Length)
	}
	out := []byte(indexMagic)
	out = append(out, ix.Manifest[:]...)
	out = binary.AppendUvarint(out, uint64(len(table)))
	for _, d := range table {
		out = append(out, d[:]...)
	}
	return append(out, body...), nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// UnmarshalIndex decodes an Index MarshalIndex encoded. An index of
// another version, or damaged, is an error (the caller drops it: the
// next Take reads every file).
func UnmarshalIndex(b []byte) (*Index, error) {
	if !bytes.HasPrefix(b, []byte(indexMagic)) {
		return nil, errors.New("checkpoint: unmarshal index: not an index of this version")
	}
	r := &indexReader{b: b[len(indexMagic):]}
	ix := &Index{}
	r.digest(&ix.Manifest)
	table := make([]storage.Digest, r.count(32))
	for i := range table {
		r.digest(&table[i])
	}
	pack := func() storage.Digest {
		n := r.uvarint()
		if n >= uint64(len(table)) {
			r.fail()
			return storage.Digest{}
		}
		return table[n]
	}
	nf := r.count(40)
	ix.Files = make(map[string]IndexEntry, nf)
	for i := 0; i < nf && r.err == nil; i++ {
		p := r.string()
		var e IndexEntry
		e.Size = r.varint()
		e.Mode = fs.FileMode(r.uvarint())
		e.MtimeNs = r.varint()
		e.CtimeNs = r.varint()
		e.Ino = r.uvarint()
		r.digest(&e.Digest)
		nr := r.uvarint()
		e.Racy = nr&1 == 1
		nc := int(nr >> 1)
		if uint64(nc) > uint64(len(r.b)/3) {
			r.fail()
		}
		for k := 0; k < nc && r.err == nil; k++ {
			var c Chunk
			if nc > 1 {
				r.digest(&c.Digest)
			} else {
				c.Digest = e.Digest
			}
			c.Pack = pack()
			c.Offset = r.varint()
			c.Length = r.varint()
			e.Chunks = append(e.Chunks, c)
		}
		ix.Files[p] = e
	}
	nd := r.count(68)
	ix.Dirs = make(map[string]IndexDir, nd)
	for i := 0; i < nd && r.err == nil; i++ {
		p := r.string()
		var d IndexDir
		r.digest(&d.Sig)
		r.digest(&d.Tree.Digest)
		d.Tree.Pack = pack()
		d.Tree.Offset = r.varint()
		d.Tree.Length = r.varint()
		ix.Dirs[p] = d
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail()
	}
	if r.err != nil {
		return nil, fmt.Errorf("checkpoint: unmarshal index: %w", r.err)
	}
	return ix, nil
}

// indexReader decodes MarshalIndex's varints; the first error sticks.
type indexReader struct {
	b   []byte
	err error
}

var errIndexDamaged = errors.New("damaged or truncated")

func (r *indexReader) fail() {
	if r.err == nil {
		r.err = errIndexDamaged
	}
	r.b = nil
}

func (r *indexReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *indexReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads a count of items of at least minBytes each, refusing one
// the rest of the input cannot hold.
func (r *indexReader) count(minBytes int) int {
	n := r.uvarint()
	if n > uint64(len(r.b)/minBytes) {
		r.fail()
		return 0
	}
	return int(n)
}

func (r *indexReader) string() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail()
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *indexReader) digest(d *storage.Digest) {
	if len(r.b) < len(d) {
		r.fail()
		return
	}
	copy(d[:], r.b)
	r.b = r.b[len(d):]
}
