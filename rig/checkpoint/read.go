package checkpoint

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/restic/chunker"

	"looprig/rig/storage"
)

// chunkLoc is where a chunk is: in a pack being written (pw set: its
// digest is known once it is closed) or in a stored one.
type chunkLoc struct {
	digest storage.Digest
	pw     *packWriter
	pack   storage.Digest
	offset int64
	length int64
}

func (c chunkLoc) resolve() Chunk {
	p := c.pack
	if c.pw != nil {
		p = c.pw.info.Digest
	}
	return Chunk{Digest: c.digest, Pack: p, Offset: c.offset, Length: c.length}
}

// reader reads the files a Take must read, parallel at once, each
// worker appending chunks to a pack of its own. Chunks already stored
// (by this Take, or named by the index) are not stored again. With no
// blobs it only hashes (Differences).
type reader struct {
	blobs storage.BlobStore
	root  string

	ix     *Index
	mu     sync.Mutex
	known  map[storage.Digest]chunkLoc // chunks stored, by digest (knownLocked)
	packs  []*packWriter               // every pack started
	read   atomic.Int64                // bytes read from files
	stored atomic.Int64                // bytes put in packs

	progress     func(Progress)
	progressMu   sync.Mutex
	lastProgress time.Time
	done         Progress
}

func newReader(blobs storage.BlobStore, root string, ix *Index) *reader {
	return &reader{blobs: blobs, root: root, ix: ix}
}

// knownLocked returns the chunks stored, made from the index the first
// time (a Take that reads nothing never needs it); r.mu is held.
func (r *reader) knownLocked() map[storage.Digest]chunkLoc {
	if r.known == nil {
		r.known = make(map[storage.Digest]chunkLoc)
		if r.ix != nil {
			for _, e := range r.ix.Files {
				for _, c := range e.Chunks {
					r.known[c.Digest] = chunkLoc{digest: c.Digest, pack: c.Pack, offset: c.Offset, length: c.Length}
				}
			}
		}
	}
	return r.known
}

// testHookRead, when set by a test, is called after each file is read
// and before it is stat'ed again.
var testHookRead func(*fileNode)

// worker is one reading goroutine's state.
type worker struct {
	r      *reader
	pack   *packWriter
	small  []byte
	chunk  []byte
	cutter *chunker.Chunker
}

// readAll reads files with parallel workers. A file that changes while
// read, twice, or vanishes gets its skip set.
func (r *reader) readAll(ctx context.Context, files []*fileNode, parallel int) error {
	if parallel <= 0 {
		parallel = 4
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	for w := 0; w < min(parallel, len(files)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wk := &worker{r: r}
			err := func() error {
				for {
					k := int(next.Add(1)) - 1
					if k >= len(files) || ctx.Err() != nil {
						return nil
					}
					if err := wk.readFile(ctx, files[k]); err != nil {
						return err
					}
					r.fileDone(files[k].st.size)
				}
			}()
			if err == nil {
				err = wk.closePack()
			}
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				cancel()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		r.abort()
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		r.abort()
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// abort abandons every pack still being written.
func (r *reader) abort() {
	r.mu.Lock()
	packs := r.packs
	r.mu.Unlock()
	for _, p := range packs {
		select {
		case <-p.done:
		default:
			p.abort()
		}
	}
}

// fileDone counts a file as done for Progress.
func (r *reader) fileDone(size int64) {
	if r.progress == nil {
		return
	}
	r.progressMu.Lock()
	defer r.progressMu.Unlock()
	r.done.FilesDone++
	r.done.BytesDone += size
	if now := time.Now(); now.Sub(r.lastProgress) >= 100*time.Millisecond {
		r.lastProgress = now
		r.progress(r.done)
	}
}

// readFile digests f, storing what is not stored yet, re-stating the open
// file after reading it: when its size, mtime, ctime or inode moved
// meanwhile, it tries once more, then gives up on the file (SkipChanged)
// rather than keep content that may be torn.
func (w *worker) readFile(ctx context.Context, f *fileNode) error {
	abs := filepath.Join(w.r.root, filepath.FromSlash(f.rel))
	for try := 0; try < 2; try++ {
		// O_NONBLOCK: a FIFO put in the file's place must not block the open.
		fd, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if errors.Is(err, fs.ErrNotExist) {
			f.skip = &Skipped{Path: f.rel, Reason: SkipVanished}
			return nil
		}
		if errors.Is(err, syscall.ELOOP) { // became a symlink
			f.skip = &Skipped{Path: f.rel, Reason: SkipChanged, Detail: "became a symlink"}
			return nil
		}
		if err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		ok, err := w.readOpen(ctx, fd, f)
		fd.Close()
		if err != nil || ok || f.skip != nil {
			return err
		}
	}
	f.skip = &Skipped{Path: f.rel, Reason: SkipChanged}
	return nil
}

// readOpen reads the open file fd as f; ok is false when it changed
// while read.
func (w *worker) readOpen(ctx context.Context, fd *os.File, f *fileNode) (ok bool, err error) {
	before, err := fd.Stat()
	if err != nil {
		return false, fmt.Errorf("checkpoint: %w", err)
	}
	if !before.Mode().IsRegular() {
		f.skip = &Skipped{Path: f.rel, Reason: SkipChanged, Detail: before.Mode().Type().String()}
		return false, nil
	}
	b := stampOf(before)
	var digest storage.Digest
	var chunks []chunkLoc
	var n int64
	if b.size <= smallFileMax {
		digest, chunks, n, err = w.readSmall(ctx, fd, b.size)
	} else {
		digest, chunks, n, err = w.readLarge(ctx, fd)
	}
	w.r.read.Add(n)
	if err != nil {
		return false, fmt.Errorf("checkpoint: read %s: %w", f.rel, err)
	}
	if testHookRead != nil {
		testHookRead(f)
	}
	after, err := fd.Stat()
	if err != nil {
		return false, fmt.Errorf("checkpoint: %w", err)
	}
	a := stampOf(after)
	if !b.sameContent(a) || n != a.size {
		return false, nil
	}
	f.st, f.digest, f.chunks = a, digest, chunks
	return true, nil
}

// readSmall reads a file of at most smallFileMax bytes whole (one more
// byte is asked for, to see it grow) and stores it as one chunk.
func (w *worker) readSmall(ctx context.Context, fd *os.File, size int64) (storage.Digest, []chunkLoc, int64, error) {
	if w.small == nil {
		w.small = make([]byte, smallFileMax+1)
	}
	n, err := io.ReadFull(fd, w.small[:size+1])
	if err != io.ErrUnexpectedEOF && err != io.EOF && err != nil {
		return storage.Digest{}, nil, int64(n), err
	}
	if int64(n) != size {
		return storage.Digest{}, nil, int64(n), nil // grew or shrank: the caller sees n != size
	}
	data := w.small[:n]
	d := sha256.Sum256(data)
	if n == 0 {
		return d, nil, 0, nil
	}
	loc, err := w.store(ctx, d, data)
	if err != nil {
		return d, nil, int64(n), err
	}
	return d, []chunkLoc{loc}, int64(n), nil
}

// readLarge cuts a file into content-defined chunks and stores each.
func (w *worker) readLarge(ctx context.Context, fd *os.File) (storage.Digest, []chunkLoc, int64, error) {
	if w.cutter == nil {
		w.cutter = chunker.NewWithBoundaries(fd, chunkPolynomial, chunkMin, chunkMax)
		w.chunk = make([]byte, chunkMax)
	} else {
		w.cutter.ResetWithBoundaries(fd, chunkPolynomial, chunkMin, chunkMax)
	}
	h := sha256.New()
	var chunks []chunkLoc
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return storage.Digest{}, nil, n, err
		}
		c, err := w.cutter.Next(w.chunk)
		if err == io.EOF {
			break
		}
		if err != nil {
			return storage.Digest{}, nil, n, err
		}
		n += int64(len(c.Data))
		h.Write(c.Data)
		loc, err := w.store(ctx, sha256.Sum256(c.Data), c.Data)
		if err != nil {
			return storage.Digest{}, nil, n, err
		}
		chunks = append(chunks, loc)
	}
	var d storage.Digest
	h.Sum(d[:0])
	return d, chunks, n, nil
}

// store returns where the chunk of digest d (data) is, appending it to the
// worker's pack unless it is stored already.
func (w *worker) store(ctx context.Context, d storage.Digest, data []byte) (chunkLoc, error) {
	if w.r.blobs == nil { // hashing only (Differences)
		return chunkLoc{digest: d, length: int64(len(data))}, nil
	}
	w.r.mu.Lock()
	if loc, ok := w.r.knownLocked()[d]; ok {
		w.r.mu.Unlock()
		return loc, nil
	}
	w.r.mu.Unlock()
	if w.pack == nil {
		w.pack = startPack(ctx, w.r.blobs)
		w.r.mu.Lock()
		w.r.packs = append(w.r.packs, w.pack)
		w.r.mu.Unlock()
	}
	off, err := w.pack.write(data)
	if err != nil {
		return chunkLoc{}, err
	}
	loc := chunkLoc{digest: d, pw: w.pack, offset: off, length: int64(len(data))}
	w.r.mu.Lock()
	if prev, ok := w.r.knownLocked()[d]; ok {
		loc = prev // stored twice at once: one copy is used
	} else {
		w.r.known[d] = loc
	}
	w.r.mu.Unlock()
	if w.pack.size >= packTarget {
		if err := w.closePack(); err != nil {
			return chunkLoc{}, err
		}
	}
	return loc, nil
}

// closePack puts the worker's pack, if it has one.
func (w *worker) closePack() error {
	if w.pack == nil {
		return nil
	}
	p := w.pack
	w.pack = nil
	info, err := p.close()
	if err != nil {
		return err
	}
	w.r.stored.Add(info.Size)
	return nil
}
