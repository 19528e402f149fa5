package checkpoint

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"looprig/rig/storage"
)

// implicitDirMode is the mode of the directories a version 1 manifest
// implies (those that hold something), and of its materialized root.
const implicitDirMode fs.FileMode = 0o755

// Materialize writes the checkpoint whose manifest is blob manifestDigest
// as a new directory dir, which must not exist (else an error wrapping
// fs.ErrExist). It builds the tree in a temporary sibling directory (mode
// 0700 while it is built): directories as real directories, then every
// file's content, read pack by pack in order (a few packs at once), each
// chunk verified against its digest (a missing or damaged blob fails with
// *MaterializeError naming the file), files created without following
// symlinks and given their modes, then the symlinks, each target checked
// again to stay inside. It makes the tree durable (one syncfs on Linux),
// gives the directories their modes and renames the temporary directory
// to dir, never replacing one that appeared meanwhile. On any failure the
// temporary directory is removed and dir is not created.
//
// progress, when not nil, is called with the bytes of file content
// written so far and the total, from one goroutine at a time.
func Materialize(ctx context.Context, blobs storage.BlobStore, manifestDigest storage.Digest, dir string, progress func(done, total int64)) error {
	_, err := MaterializeIndexed(ctx, blobs, manifestDigest, dir, progress)
	return err
}

// MaterializeIndexed is Materialize, and returns the stat index of the
// directory it made, naming the checkpoint: the next Take of dir given it
// reads no file that did not change since. Every file's times are set a
// little before the materialization began (a file written in the same
// tick of the clock as its stat data were recorded could change unseen:
// see racyWindow), so that any later write shows.
func MaterializeIndexed(ctx context.Context, blobs storage.BlobStore, manifestDigest storage.Digest, dir string, progress func(done, total int64)) (_ *Index, err error) {
	start := time.Now()
	m, err := Load(ctx, blobs, manifestDigest)
	if err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir)
	if _, err := os.Lstat(dir); err == nil {
		return nil, fmt.Errorf("checkpoint: materialize into %s: %w", dir, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint: materialize: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".materialize-")
	if err != nil {
		return nil, fmt.Errorf("checkpoint: materialize: %w", err)
	}
	defer func() {
		if err != nil {
			removeTree(tmp)
		}
	}()
	b := &builder{root: tmp, dirs: make(map[string]fs.FileMode), at: start.Add(-racyWindow - time.Second), stamps: make(map[string]stamp)}
	if err := b.mkdirs(m); err != nil {
		return nil, err
	}
	if err := b.writeFiles(ctx, blobs, m.Entries, progress); err != nil {
		return nil, err
	}
	if err := b.symlinks(m.Entries); err != nil {
		return nil, err
	}
	ix, err := b.index(m, manifestDigest)
	if err != nil {
		return nil, err
	}
	if err := syncTree(tmp, m.Entries); err != nil {
		return nil, fmt.Errorf("checkpoint: materialize: %w", err)
	}
	rootMode := implicitDirMode
	if m.Version >= 2 {
		rootMode = m.RootMode
	}
	if err := b.finishDirs(rootMode); err != nil {
		return nil, err
	}
	if err := renameNoReplace(tmp, dir); err != nil {
		return nil, fmt.Errorf("checkpoint: materialize: rename into %s: %w", dir, err)
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		// dir is there and complete; only its durability is in doubt.
		return nil, fmt.Errorf("checkpoint: materialize: %w", errors.Join(err, removeTreeErr(dir)))
	}
	return ix, nil
}

// builder creates a tree under root.
type builder struct {
	root string
	dirs map[string]fs.FileMode // every directory created, relative, and its final mode
	// at is the time every file is given; stamps, what each file written
	// whole in one piece was stamped with then (the index needs no
	// other look at it).
	at     time.Time
	mu     sync.Mutex
	stamps map[string]stamp
}

func (b *builder) abs(rel string) string { return filepath.Join(b.root, filepath.FromSlash(rel)) }

// mkdirs creates every directory the manifest names or implies, parents
// first, one element at a time with Mkdir (which never follows a symlink
// at its last element, and no symlink exists yet).
func (b *builder) mkdirs(m *Manifest) error {
	mode := func(p string) fs.FileMode {
		if md, ok := m.Dirs[p]; ok {
			return md
		}
		return implicitDirMode
	}
	for i := range m.Entries {
		e := &m.Entries[i]
		if r := checkPath(e.Path); r != "" {
			return fmt.Errorf("checkpoint: materialize %q: %s", e.Path, r)
		}
		for j := 0; j < len(e.Path); j++ {
			if e.Path[j] == '/' {
				if err := b.mkdir(e.Path[:j], mode(e.Path[:j])); err != nil {
					return err
				}
			}
		}
		if e.Kind == Dir {
			if err := b.mkdir(e.Path, e.Mode); err != nil {
				return err
			}
		}
	}
	// Directories whose only entries were left out (excluded).
	rest := make([]string, 0, len(m.Dirs))
	for p := range m.Dirs {
		if _, ok := b.dirs[p]; !ok {
			rest = append(rest, p)
		}
	}
	sort.Strings(rest)
	for _, p := range rest {
		if r := checkPath(p); r != "" {
			return fmt.Errorf("checkpoint: materialize %q: %s", p, r)
		}
		for j := 0; j <= len(p); j++ {
			if j == len(p) || p[j] == '/' {
				if err := b.mkdir(p[:j], mode(p[:j])); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (b *builder) mkdir(rel string, mode fs.FileMode) error {
	if _, ok := b.dirs[rel]; ok {
		return nil
	}
	if err := os.Mkdir(b.abs(rel), 0o700); err != nil {
		return fmt.Errorf("checkpoint: materialize: %w", err)
	}
	b.dirs[rel] = mode
	return nil
}

// piece is a chunk to write: chunk k of entries[entry], at off in its file.
type piece struct {
	entry int
	chunk Chunk
	off   int64
}

// writeFiles writes the regular files of entries: the empty ones and the
// files of several chunks are created first, then the chunks are read
// pack by pack, a few packs at once, each pack's chunks in order of
// offset (chunks close together in one ranged read).
func (b *builder) writeFiles(ctx context.Context, blobs storage.BlobStore, entries []Entry, progress func(done, total int64)) error {
	byPack := map[storage.Digest][]piece{}
	var total int64
	for i := range entries {
		e := &entries[i]
		if e.Kind != File {
			continue
		}
		total += e.Size
		if len(e.Chunks) != 1 {
			if err := b.create(e); err != nil {
				return &MaterializeError{Path: e.Path, Digest: e.Digest, Err: err}
			}
		}
		var off int64
		for _, c := range e.Chunks {
			byPack[c.Pack] = append(byPack[c.Pack], piece{entry: i, chunk: c, off: off})
			off += c.Length
		}
	}
	packs := make([]storage.Digest, 0, len(byPack))
	for p := range byPack {
		packs = append(packs, p)
	}
	var (
		done  atomic.Int64
		next  atomic.Int64
		mu    sync.Mutex // serializes progress and guards first
		first error
		wg    sync.WaitGroup
	)
	report := func(n int64) {
		d := done.Add(n)
		if progress != nil {
			mu.Lock()
			progress(d, total)
			mu.Unlock()
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for w := 0; w < min(4, len(packs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256<<10)
			for {
				k := int(next.Add(1)) - 1
				if k >= len(packs) || ctx.Err() != nil {
					return
				}
				if err := b.writePack(ctx, blobs, packs[k], byPack[packs[k]], entries, buf, report); err != nil {
					mu.Lock()
					if first == nil {
						first = err
						cancel()
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("checkpoint: materialize: %w", err)
	}
	for i := range entries {
		if e := &entries[i]; e.Kind == File && len(e.Chunks) != 1 { // the others have theirs
			if err := os.Chmod(b.abs(e.Path), e.Mode); err != nil {
				return fmt.Errorf("checkpoint: materialize: %w", err)
			}
		}
	}
	if progress != nil && total == 0 {
		progress(0, 0)
	}
	return nil
}

// create creates file e empty (exclusively, not following a symlink), at
// its size.
func (b *builder) create(e *Entry) error {
	f, err := os.OpenFile(b.abs(e.Path), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if e.Size > 0 {
		err = f.Truncate(e.Size)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// packGap is the most unread bytes between two chunks of a pack read at
// once: a gap is cheaper to read through than a new read to start.
const packGap = 1 << 20

// writePack writes the pieces of one pack.
func (b *builder) writePack(ctx context.Context, blobs storage.BlobStore, pack storage.Digest, pieces []piece, entries []Entry, buf []byte, report func(int64)) error {
	slices.SortFunc(pieces, func(x, y piece) int {
		switch {
		case x.chunk.Offset < y.chunk.Offset:
			return -1
		case x.chunk.Offset > y.chunk.Offset:
			return 1
		}
		return 0
	})
	idx := make([]int, len(pieces))
	for i := range idx {
		idx[i] = i
	}
	for _, span := range spans(idx, func(i int) (int64, int64) { return pieces[i].chunk.Offset, pieces[i].chunk.Length }, packGap) {
		start := pieces[span[0]].chunk.Offset
		end := start
		for _, i := range span {
			end = max(end, pieces[i].chunk.Offset+pieces[i].chunk.Length)
		}
		rc, err := blobs.GetBlobRange(ctx, pack, start, end-start)
		if err != nil {
			e := &entries[pieces[span[0]].entry]
			return &MaterializeError{Path: e.Path, Digest: pack, Err: err}
		}
		err = b.writeSpan(rc, start, pieces, span, entries, buf, report)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// writeSpan writes the pieces of span from rc, which starts at pack
// offset start. Pieces may overlap (one chunk used twice): each is read
// from a copy when it starts before the reader's position.
func (b *builder) writeSpan(rc io.Reader, start int64, pieces []piece, span []int, entries []Entry, buf []byte, report func(int64)) error {
	pos := start
	var last *piece
	for _, i := range span {
		p := &pieces[i]
		e := &entries[p.entry]
		fail := func(err error) error { return &MaterializeError{Path: e.Path, Digest: p.chunk.Pack, Err: err} }
		if p.chunk.Offset < pos {
			// The same chunk again (a file whose content another has):
			// copy it from the file written last.
			if last == nil || last.chunk != p.chunk {
				return fail(errors.New("chunks overlap in the pack"))
			}
			if err := b.copyPiece(&entries[last.entry], last.off, e, p, buf, report); err != nil {
				return fail(err)
			}
			continue
		}
		if _, err := io.CopyN(io.Discard, rc, p.chunk.Offset-pos); err != nil {
			return fail(err)
		}
		pos = p.chunk.Offset
		if err := b.writePiece(io.LimitReader(rc, p.chunk.Length), e, p, buf, report); err != nil {
			return fail(err)
		}
		pos += p.chunk.Length
		last = p
	}
	return nil
}

// writePiece writes chunk p of file e from r, verifying it.
func (b *builder) writePiece(r io.Reader, e *Entry, p *piece, buf []byte, report func(int64)) error {
	var f *os.File
	var err error
	if len(e.Chunks) == 1 {
		f, err = os.OpenFile(b.abs(e.Path), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	} else {
		f, err = os.OpenFile(b.abs(e.Path), os.O_WRONLY|syscall.O_NOFOLLOW, 0)
		if err == nil {
			_, err = f.Seek(p.off, io.SeekStart)
		}
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		return err
	}
	h := sha256.New()
	n, err := io.CopyBuffer(&progressWriter{w: io.MultiWriter(f, h), report: report}, struct{ io.Reader }{r}, buf)
	if err == nil && len(e.Chunks) == 1 {
		err = b.finishFile(f, e)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if n != p.chunk.Length {
		return chunkCorrupt(p.chunk, fmt.Sprintf("the pack ends after %d of its %d bytes", n, p.chunk.Length))
	}
	if got := sumOf(h); got != p.chunk.Digest {
		return chunkCorrupt(p.chunk, "content hashes to "+got.String())
	}
	return nil
}

// finishFile gives the open file f, all of e written, its mode and times,
// and records its stat data.
func (b *builder) finishFile(f *os.File, e *Entry) error {
	if err := f.Chmod(e.Mode); err != nil {
		return err
	}
	ts := []unix.Timespec{unix.NsecToTimespec(b.at.UnixNano()), unix.NsecToTimespec(b.at.UnixNano())}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, f.Name(), ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "utimes", Path: f.Name(), Err: err}
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.stamps[e.Path] = stampOf(fi)
	b.mu.Unlock()
	return nil
}

// copyPiece writes chunk p of file e from the same chunk at offset off of
// file from, written before (and verified then).
func (b *builder) copyPiece(from *Entry, off int64, e *Entry, p *piece, buf []byte, report func(int64)) error {
	src, err := os.Open(b.abs(from.Path))
	if err != nil {
		return err
	}
	defer src.Close()
	return b.writePiece(io.NewSectionReader(src, off, p.chunk.Length), e, p, buf, report)
}

type progressWriter struct {
	w      io.Writer
	report func(int64)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.report(int64(n))
	return n, err
}

// index records every file's stat data with its content's digest and
// chunks (setting the times of those not stamped as they were written):
// the index of the tree built, naming checkpoint d.
func (b *builder) index(m *Manifest, d storage.Digest) (*Index, error) {
	ix := &Index{Manifest: d, Files: make(map[string]IndexEntry), Dirs: make(map[string]IndexDir)}
	for i := range m.Entries {
		e := &m.Entries[i]
		if e.Kind != File {
			continue
		}
		st, ok := b.stamps[e.Path]
		if !ok {
			p := b.abs(e.Path)
			if err := os.Chtimes(p, b.at, b.at); err != nil {
				return nil, fmt.Errorf("checkpoint: materialize: %w", err)
			}
			fi, err := os.Lstat(p)
			if err != nil {
				return nil, fmt.Errorf("checkpoint: materialize: %w", err)
			}
			st = stampOf(fi)
		}
		ix.Files[e.Path] = st.entry(e.Digest, e.Chunks)
	}
	return ix, nil
}

// symlinks creates the symlinks, last, so that no file or directory is
// ever created through one.
func (b *builder) symlinks(entries []Entry) error {
	for i := range entries {
		e := &entries[i]
		if e.Kind != Symlink {
			continue
		}
		if r := checkTarget(e.Path, e.Target); r != "" {
			return fmt.Errorf("checkpoint: materialize %q -> %q: %s", e.Path, e.Target, r)
		}
		if _, ok := b.dirs[path.Dir(e.Path)]; !ok && path.Dir(e.Path) != "." {
			return fmt.Errorf("checkpoint: materialize %q: parent not created", e.Path)
		}
		if err := os.Symlink(e.Target, b.abs(e.Path)); err != nil {
			return fmt.Errorf("checkpoint: materialize: %w", err)
		}
	}
	return nil
}

// finishDirs gives each directory its mode, deepest first (a read-only
// directory must be filled before it is made so), and the root rootMode.
func (b *builder) finishDirs(rootMode fs.FileMode) error {
	rels := make([]string, 0, len(b.dirs))
	for rel := range b.dirs {
		rels = append(rels, rel)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(rels)))
	for _, rel := range rels {
		if err := os.Chmod(b.abs(rel), b.dirs[rel]); err != nil {
			return fmt.Errorf("checkpoint: materialize: %w", err)
		}
	}
	if err := os.Chmod(b.root, rootMode); err != nil {
		return fmt.Errorf("checkpoint: materialize: %w", err)
	}
	return nil
}

func syncDir(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// removeTree removes a tree this package built, first making its
// directories writable (a checkpoint may hold read-only ones).
func removeTree(root string) { _ = removeTreeErr(root) }

func removeTreeErr(root string) error {
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700) // before WalkDir reads it
		}
		return nil
	})
	return os.RemoveAll(root)
}
