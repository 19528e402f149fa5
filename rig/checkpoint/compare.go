package checkpoint

import (
	"context"
	"fmt"
	"io/fs"
	"sort"

	"looprig/rig/storage"
)

// Differences lists how directory dir differs from the checkpoint whose
// manifest is blob manifestDigest, as Diff would from the checkpoint to
// dir taken now (Added: in dir only; Removed: in the checkpoint only), but
// without patches and without storing anything: files are hashed locally
// unless opts.Index (of dir) vouches for them. dir is walked as Take walks
// it (the same rules leave the same paths out; symlinks leading out and
// special files are left out). Nothing is modified.
func Differences(ctx context.Context, blobs storage.BlobStore, manifestDigest storage.Digest, dir string, opts Options) ([]FileChange, error) {
	want, err := Load(ctx, blobs, manifestDigest)
	if err != nil {
		return nil, err
	}
	have, err := Scan(ctx, dir, opts)
	if err != nil {
		return nil, err
	}
	return compareManifests(want, have), nil
}

// Scan reads directory dir as Take would, without storing anything: its
// files are hashed locally unless opts.Index vouches for them. The
// manifest it returns has no chunks.
func Scan(ctx context.Context, dir string, opts Options) (*Manifest, error) {
	s, err := walk(ctx, dir, opts)
	if err != nil {
		return nil, err
	}
	r := newReader(nil, dir, nil)
	var todo []*fileNode
	for _, f := range s.files {
		if e, ok := opts.Index.lookup(f.rel, f.st); ok {
			f.digest, f.hit = e.Digest, true
		} else {
			todo = append(todo, f)
		}
	}
	if err := r.readAll(ctx, todo, opts.Parallel); err != nil {
		return nil, err
	}
	return s.manifest(), nil
}

// manifest is the scan as a Manifest (files without chunks).
func (s *scan) manifest() *Manifest {
	m := &Manifest{Version: 2, RootMode: s.top.mode, Dirs: make(map[string]fs.FileMode, len(s.dirs)), Excluded: s.excluded}
	for _, d := range s.dirs {
		shown := 0
		for i := range d.entries {
			e := &d.entries[i]
			p := joinPath(d.rel, e.name)
			switch {
			case e.excluded:
				continue
			case e.kind == File:
				if e.file.skip != nil {
					continue
				}
				m.Entries = append(m.Entries, Entry{Path: p, Kind: File, Mode: e.file.st.mode.Perm(), Size: e.file.st.size, Digest: e.file.digest})
			case e.kind == Symlink:
				m.Entries = append(m.Entries, Entry{Path: p, Kind: Symlink, Target: e.target})
			case e.kind == Dir:
				m.Dirs[p] = e.dir.mode
			}
			shown++
		}
		if shown == 0 && d.rel != "" {
			m.Entries = append(m.Entries, Entry{Path: d.rel, Kind: Dir, Mode: d.mode})
		}
	}
	sort.Slice(m.Entries, func(i, j int) bool { return m.Entries[i].Path < m.Entries[j].Path })
	sort.Slice(m.Excluded, func(i, j int) bool { return m.Excluded[i].Path < m.Excluded[j].Path })
	return m
}

// StatDifferences is Differences without reading any file: a regular file
// whose size and mode are the checkpoint's counts as unchanged. It costs a
// walk and a stat per entry.
func StatDifferences(ctx context.Context, blobs storage.BlobStore, manifestDigest storage.Digest, dir string, opts Options) ([]FileChange, error) {
	want, err := Load(ctx, blobs, manifestDigest)
	if err != nil {
		return nil, err
	}
	s, err := walk(ctx, dir, opts)
	if err != nil {
		return nil, err
	}
	have := s.manifest()
	for i := range have.Entries {
		e := &have.Entries[i]
		if e.Kind != File {
			continue
		}
		if w, ok := want.Lookup(e.Path); ok && w.Kind == File && w.Size == e.Size && w.Mode == e.Mode {
			e.Digest = w.Digest
		}
	}
	if err := have.Validate(); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return compareManifests(want, have), nil
}
