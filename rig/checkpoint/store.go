package checkpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"looprig/rig/storage"
)

// Result is what Take stored.
type Result struct {
	Manifest    storage.Digest // the checkpoint's snapshot blob
	Files       int            // regular files in the checkpoint
	Bytes       int64          // their total size
	BytesRead   int64          // bytes read from files this time (not vouched for by the index)
	BytesStored int64          // bytes put into the store this time (packs, trees, snapshot)
	Index       *Index         // its Manifest is this checkpoint: save it once that is journaled (Options.Index itself when nothing changed)
	Skipped     []Skipped      // paths left out, for the caller to journal
	Excluded    []ExcludedPath // paths a rule left out (names only)
}

// Take checkpoints the workspace at root. It walks it without following
// symlinks, leaving out what the filter excludes (see Filter); reads
// every regular file the index does not vouch for, in content-defined
// chunks appended to a few pack blobs (streamed: a file is never held in
// memory whole, and a chunk stored before, by this Take or one the index
// knows, is not stored again); encodes each directory whose entries
// changed as a tree, all of them in one more pack (a directory whose
// entries did not change keeps the tree the index names); and stores the
// snapshot naming the root tree and every pack (see snapshotHeader). A
// file that changes while it is read is read once more; if it changes
// again it is left out and reported in Result.Skipped (SkipChanged), as
// are symlinks leading outside the workspace and special files.
//
// Blobs stored before a failure stay; they are unreferenced, for a sweep.
func Take(ctx context.Context, blobs storage.BlobStore, root string, opts Options) (Result, error) {
	start := time.Now()
	s, err := walk(ctx, root, opts)
	if err != nil {
		return Result{}, err
	}
	if opts.MaxBytes > 0 && s.total > opts.MaxBytes {
		return Result{}, &TooLargeError{Limit: opts.MaxBytes, Size: s.total}
	}
	ix := opts.Index
	if ix != nil && !opts.IndexTrusted {
		if ix, err = confirmIndex(ctx, blobs, ix); err != nil {
			return Result{}, err
		}
	}
	r := newReader(blobs, root, ix)
	var todo []*fileNode
	for _, f := range s.files {
		if e, ok := ix.lookup(f.rel, f.st); ok {
			f.digest, f.hit = e.Digest, true
			f.chunks = make([]chunkLoc, len(e.Chunks))
			for i, c := range e.Chunks {
				f.chunks[i] = chunkLoc{digest: c.Digest, pack: c.Pack, offset: c.Offset, length: c.Length}
			}
		} else {
			todo = append(todo, f)
		}
	}
	if opts.Progress != nil {
		r.progress = opts.Progress
		r.done = Progress{Files: len(s.files), Bytes: s.total, FilesDone: len(s.files) - len(todo)}
		for _, f := range s.files {
			if f.hit {
				r.done.BytesDone += f.st.size
			}
		}
		opts.Progress(r.done) // how many files there are, before any is read
		r.lastProgress = time.Now()
	}
	if err := r.readAll(ctx, todo, opts.Parallel); err != nil {
		return Result{BytesRead: r.read.Load()}, err
	}
	res := Result{BytesRead: r.read.Load(), BytesStored: r.stored.Load(), Skipped: s.skipped, Excluded: s.excluded}
	for _, f := range s.files {
		if f.skip != nil {
			res.Skipped = append(res.Skipped, *f.skip)
			continue
		}
		res.Files++
		res.Bytes += f.st.size
	}
	if opts.MaxBytes > 0 && res.Bytes > opts.MaxBytes {
		return res, &TooLargeError{Limit: opts.MaxBytes, Size: res.Bytes}
	}
	packs, stored, err := storeTrees(ctx, blobs, s, ix)
	res.BytesStored += stored
	if err != nil {
		return res, err
	}
	for _, f := range s.files {
		for _, c := range f.chunks {
			packs[c.resolve().Pack] = struct{}{}
		}
	}
	snap := &snapshot{RootMode: s.top.mode, Root: s.top.tree, Files: res.Files, Bytes: res.Bytes, Packs: sortPacks(packs)}
	enc := snap.encode()
	res.Manifest = storage.DigestOf(enc)
	if ix == nil || ix.Manifest != res.Manifest || !opts.IndexTrusted {
		if _, err := blobs.PutBlob(ctx, bytes.NewReader(enc)); err != nil {
			return res, fmt.Errorf("checkpoint: store the snapshot: %w", err)
		}
		res.BytesStored += int64(len(enc))
	}
	if ix != nil && ix.Manifest == res.Manifest && s.unchanged() {
		res.Index = ix // nothing it holds moved: the same index (not saved again)
	} else {
		res.Index = s.newIndex(start, res.Manifest)
	}
	if opts.Progress != nil {
		r.progressMu.Lock()
		opts.Progress(Progress{Files: len(s.files), FilesDone: len(s.files), Bytes: s.total, BytesDone: s.total})
		r.progressMu.Unlock()
	}
	return res, nil
}

// storeTrees gives every directory of s its tree, children first: the
// index's where the directory did not change (by its signature, or
// because its entries encode to the tree the index names), else a new
// encoding, appended to one pack put at the end. It returns the packs the
// trees are in and the bytes it stored.
func storeTrees(ctx context.Context, blobs storage.BlobStore, s *scan, ix *Index) (map[storage.Digest]struct{}, int64, error) {
	var buf bytes.Buffer
	var fresh []*dirNode
	var entries []treeEntry
	for _, d := range s.dirs {
		if d.signature(ix) {
			d.tree, d.reused = ix.Dirs[d.rel].Tree, true
			continue
		}
		entries = d.treeEntries(entries[:0])
		if old, ok := ix.lookupDir(d.rel); ok {
			// The same entries where they were before: the same tree.
			if data, ok := encodeIn(entries, old.Tree.Pack); ok && sha256.Sum256(data) == old.Tree.Digest {
				d.tree, d.reused = old.Tree, true
				continue
			}
		}
		data, _ := encodeIn(entries, storage.Digest{})
		d.tree = treeRef{Digest: sha256.Sum256(data), SamePack: true, Offset: int64(buf.Len()), Length: int64(len(data))}
		buf.Write(data)
		fresh = append(fresh, d)
	}
	packs := make(map[storage.Digest]struct{})
	var stored int64
	if len(fresh) > 0 {
		info, err := blobs.PutBlob(ctx, bytes.NewReader(buf.Bytes()))
		if err != nil {
			return nil, 0, fmt.Errorf("checkpoint: store the trees: %w", err)
		}
		stored = info.Size
		for _, d := range fresh {
			d.tree = d.tree.resolve(info.Digest)
		}
	}
	for _, d := range s.dirs {
		packs[d.tree.Pack] = struct{}{}
	}
	return packs, stored, nil
}

// treeEntries appends d's entries as a tree's (subdirectories' trees as
// they are now: stored, or SamePack in the new pack).
func (d *dirNode) treeEntries(entries []treeEntry) []treeEntry {
	for i := range d.entries {
		e := &d.entries[i]
		te := treeEntry{Name: e.name, Kind: e.kind, Excluded: e.excluded}
		switch {
		case e.excluded:
		case e.kind == File:
			if e.file.skip != nil {
				continue
			}
			te.Mode, te.Size, te.Digest = e.file.st.mode.Perm(), e.file.st.size, e.file.digest
			te.Chunks = make([]Chunk, len(e.file.chunks))
			for k, c := range e.file.chunks {
				te.Chunks[k] = c.resolve()
			}
		case e.kind == Symlink:
			te.Target = e.target
		case e.kind == Dir:
			te.Mode, te.Tree = e.dir.mode, e.dir.tree
		}
		entries = append(entries, te)
	}
	return entries
}

// encodeIn encodes entries as a tree stored in pack here: subdirectories'
// trees in here are "-". here zero is the new pack (whose trees are
// SamePack already). ok is false when a subdirectory's tree is in the new
// pack and here is another.
func encodeIn(entries []treeEntry, here storage.Digest) ([]byte, bool) {
	if !here.IsZero() {
		for i := range entries {
			e := &entries[i]
			if e.Kind != Dir || e.Excluded {
				continue
			}
			switch {
			case e.Tree.SamePack:
				return nil, false
			case e.Tree.Pack == here:
				e.Tree.Pack, e.Tree.SamePack = storage.Digest{}, true
				defer func() { e.Tree.Pack, e.Tree.SamePack = here, false }()
			}
		}
	}
	return encodeTree(entries), true
}

// unchanged reports whether the index vouched for every file and every
// directory kept its tree: the index the scan would make is the one it
// was given.
func (s *scan) unchanged() bool {
	for _, f := range s.files {
		if !f.hit {
			return false
		}
	}
	for _, d := range s.dirs {
		if !d.reused {
			return false
		}
	}
	return true
}

// newIndex returns the index of the scan, naming checkpoint manifest;
// the files modified within racyWindow of start are marked Racy.
func (s *scan) newIndex(start time.Time, manifest storage.Digest) *Index {
	ix := &Index{Manifest: manifest, Files: make(map[string]IndexEntry, len(s.files)), Dirs: make(map[string]IndexDir, len(s.dirs))}
	limit := start.Add(-racyWindow).UnixNano()
	for _, f := range s.files {
		if f.skip != nil {
			continue
		}
		chunks := make([]Chunk, len(f.chunks))
		for i, c := range f.chunks {
			chunks[i] = c.resolve()
		}
		e := f.st.entry(f.digest, chunks)
		e.Racy = f.st.mtimeNs >= limit
		ix.Files[f.rel] = e
	}
	for _, d := range s.dirs {
		ix.Dirs[d.rel] = IndexDir{Sig: d.sig, Tree: d.tree}
	}
	return ix
}

// confirmIndex renews every pack ix names (TouchBlob), a few at once, and
// returns ix without what names a pack that is gone: a sweep may have
// deleted what an index not known to be journaled names.
func confirmIndex(ctx context.Context, blobs storage.BlobStore, ix *Index) (*Index, error) {
	set := ix.Packs()
	var (
		mu    sync.Mutex
		gone  = map[storage.Digest]bool{}
		first error
		wg    sync.WaitGroup
		sem   = make(chan struct{}, 8)
	)
	for d := range set {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, err := blobs.TouchBlob(ctx, d)
			var nf *storage.BlobNotFoundError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.As(err, &nf):
				gone[d] = true
			case err != nil && first == nil:
				first = err
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, fmt.Errorf("checkpoint: confirm what the index names: %w", first)
	}
	if len(gone) == 0 {
		return ix, nil
	}
	return ix.without(gone), nil
}
