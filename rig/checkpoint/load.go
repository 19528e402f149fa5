package checkpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"sort"
	"sync"

	"looprig/rig/storage"
)

// readManifestBlob reads blob d whole (at most MaxManifestBytes),
// verified, and says which version of manifest it holds.
func readManifestBlob(ctx context.Context, blobs storage.BlobStore, d storage.Digest) ([]byte, int, error) {
	rc, err := blobs.GetBlob(ctx, d)
	if err != nil {
		return nil, 0, fmt.Errorf("checkpoint: load manifest %s: %w", d, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, MaxManifestBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("checkpoint: load manifest %s: %w", d, &ManifestError{Reason: "read", Err: err})
	}
	if len(b) > MaxManifestBytes {
		return nil, 0, fmt.Errorf("checkpoint: load manifest %s: %w", d, &ManifestError{Reason: fmt.Sprintf("more than %d bytes", MaxManifestBytes)})
	}
	switch {
	case bytes.HasPrefix(b, []byte(snapshotHeader+"\n")):
		return b, 2, nil
	case bytes.HasPrefix(b, []byte(manifestHeader+"\n")):
		return b, 1, nil
	}
	return b, 0, fmt.Errorf("checkpoint: load manifest %s: %w", d, &ManifestError{Line: 1, Reason: "not a checkpoint manifest of a known version"})
}

// Load reads the checkpoint named d whole: a version 1 manifest, or a
// snapshot and every tree below it (each verified against its digest).
func Load(ctx context.Context, blobs storage.BlobStore, d storage.Digest) (*Manifest, error) {
	b, version, err := readManifestBlob(ctx, blobs, d)
	if err != nil {
		return nil, err
	}
	var m *Manifest
	if version == 1 {
		m, err = Decode(bytes.NewReader(b))
	} else {
		var snap *snapshot
		if snap, err = decodeSnapshot(b); err == nil {
			m, err = loadTrees(ctx, blobs, snap)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: load manifest %s: %w", d, err)
	}
	return m, nil
}

// References lists the blobs checkpoint d needs: its manifest and, for a
// version 1 manifest, every file's blob, for a version 2 snapshot, the
// packs it lists. Neither reads a tree.
func References(ctx context.Context, blobs storage.BlobStore, d storage.Digest) ([]storage.Digest, error) {
	b, version, err := readManifestBlob(ctx, blobs, d)
	if err != nil {
		return nil, err
	}
	refs := []storage.Digest{d}
	if version == 1 {
		m, err := Decode(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("checkpoint: load manifest %s: %w", d, err)
		}
		for _, e := range m.Entries {
			if e.Kind == File {
				refs = append(refs, e.Digest)
			}
		}
		return refs, nil
	}
	snap, err := decodeSnapshot(b)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: load manifest %s: %w", d, err)
	}
	return append(refs, snap.Packs...), nil
}

// pendingTree is a tree to load and the path of its directory.
type pendingTree struct {
	dir string
	ref treeRef
}

// loadTrees reads the trees below snap, a level at a time (the trees of
// one level that lie close together in a pack are read at once), into a
// flat Manifest.
func loadTrees(ctx context.Context, blobs storage.BlobStore, snap *snapshot) (*Manifest, error) {
	m := &Manifest{Version: 2, RootMode: snap.RootMode, Dirs: map[string]fs.FileMode{}}
	level := []pendingTree{{dir: "", ref: snap.Root}}
	var read int64
	for len(level) > 0 {
		trees, n, err := fetchTrees(ctx, blobs, level)
		if err != nil {
			return nil, err
		}
		if read += n; read > MaxManifestBytes {
			return nil, &ManifestError{Reason: fmt.Sprintf("trees of more than %d bytes", MaxManifestBytes)}
		}
		var next []pendingTree
		for i, t := range level {
			shown := 0
			for _, e := range trees[i] {
				p := e.Name
				if t.dir != "" {
					p = t.dir + "/" + e.Name
				}
				if r := checkPath(p); r != "" {
					return nil, &ManifestError{Reason: fmt.Sprintf("%q: %s", p, r)}
				}
				if len(m.Entries)+len(m.Excluded)+len(m.Dirs) >= MaxEntries {
					return nil, &ManifestError{Reason: fmt.Sprintf("more than %d entries", MaxEntries)}
				}
				switch {
				case e.Excluded:
					m.Excluded = append(m.Excluded, ExcludedPath{Path: p, IsDir: e.Kind == Dir})
					continue
				case e.Kind == Dir:
					m.Dirs[p] = e.Mode
					next = append(next, pendingTree{dir: p, ref: e.Tree.resolve(t.ref.Pack)})
				case e.Kind == Symlink:
					if r := checkTarget(p, e.Target); r != "" {
						return nil, &ManifestError{Reason: fmt.Sprintf("%q -> %q: %s", p, e.Target, r)}
					}
					m.Entries = append(m.Entries, Entry{Path: p, Kind: Symlink, Target: e.Target})
				case e.Kind == File:
					m.Entries = append(m.Entries, Entry{Path: p, Kind: File, Mode: e.Mode, Size: e.Size, Digest: e.Digest, Chunks: e.Chunks})
				}
				shown++
			}
			if shown == 0 && t.dir != "" {
				m.Entries = append(m.Entries, Entry{Path: t.dir, Kind: Dir, Mode: m.Dirs[t.dir]})
			}
		}
		level = next
	}
	sort.Slice(m.Entries, func(i, j int) bool { return m.Entries[i].Path < m.Entries[j].Path })
	sort.Slice(m.Excluded, func(i, j int) bool { return m.Excluded[i].Path < m.Excluded[j].Path })
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// treeSpanGap is the most unread bytes between two trees of a pack read
// at once.
const treeSpanGap = 256 << 10

// fetchTrees reads and decodes the trees of level, in its order; it
// returns how many bytes it read.
func fetchTrees(ctx context.Context, blobs storage.BlobStore, level []pendingTree) ([][]treeEntry, int64, error) {
	out := make([][]treeEntry, len(level))
	byPack := map[storage.Digest][]int{}
	for i, t := range level {
		byPack[t.ref.Pack] = append(byPack[t.ref.Pack], i)
	}
	var (
		mu    sync.Mutex
		first error
		read  int64
		wg    sync.WaitGroup
		sem   = make(chan struct{}, 8)
	)
	for pack, idx := range byPack {
		slices.SortFunc(idx, func(a, b int) int { return int(level[a].ref.Offset - level[b].ref.Offset) })
		for _, span := range spans(idx, func(i int) (int64, int64) { return level[i].ref.Offset, level[i].ref.Length }, treeSpanGap) {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				n, err := fetchSpan(ctx, blobs, pack, span, level, out)
				mu.Lock()
				defer mu.Unlock()
				read += n
				if err != nil && first == nil {
					first = err
				}
			}()
		}
	}
	wg.Wait()
	return out, read, first
}

// fetchSpan reads the trees span (indexes into level, sorted by offset,
// all in pack) with one ranged read, verifies and decodes each into out.
func fetchSpan(ctx context.Context, blobs storage.BlobStore, pack storage.Digest, span []int, level []pendingTree, out [][]treeEntry) (int64, error) {
	start := level[span[0]].ref.Offset
	end := start
	for _, i := range span {
		end = max(end, level[i].ref.Offset+level[i].ref.Length)
	}
	if end-start > maxTreeBytes {
		return 0, &ManifestError{Reason: fmt.Sprintf("trees spanning %d bytes of pack %s", end-start, pack)}
	}
	rc, err := blobs.GetBlobRange(ctx, pack, start, end-start)
	if err != nil {
		return 0, fmt.Errorf("read trees in pack %s: %w", pack, err)
	}
	defer rc.Close()
	buf := make([]byte, end-start)
	if _, err := io.ReadFull(rc, buf); err != nil {
		return 0, fmt.Errorf("read trees in pack %s: %w", pack, err)
	}
	for _, i := range span {
		r := level[i].ref
		data := buf[r.Offset-start : r.Offset-start+r.Length]
		if sha256.Sum256(data) != r.Digest {
			return 0, &storage.CorruptError{Name: storage.BlobName(pack), Offset: r.Offset,
				Reason: "the tree of " + describeDir(level[i].dir) + " does not match its digest " + formatRef(r), Err: storage.ErrBlobDigest}
		}
		entries, err := decodeTree(data)
		if err != nil {
			return 0, fmt.Errorf("the tree of %s: %w", describeDir(level[i].dir), err)
		}
		out[i] = entries
	}
	return end - start, nil
}

func describeDir(dir string) string {
	if dir == "" {
		return "the workspace's root"
	}
	return fmt.Sprintf("%q", dir)
}

// spans groups idx (sorted by offset, offsets and lengths given by at)
// into runs whose gaps are at most gap bytes.
func spans(idx []int, at func(int) (off, length int64), gap int64) [][]int {
	var out [][]int
	var end int64
	for _, i := range idx {
		off, n := at(i)
		if len(out) == 0 || off > end+gap {
			out = append(out, []int{i})
			end = off + n
			continue
		}
		out[len(out)-1] = append(out[len(out)-1], i)
		end = max(end, off+n)
	}
	return out
}

// joinPath is p below dir ("" for the root).
func joinPath(dir, p string) string {
	if dir == "" {
		return p
	}
	return path.Join(dir, p)
}
