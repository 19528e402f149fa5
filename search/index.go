// Package search owns looprig's full-text index of every session's
// journal: the commands, the output lines (as a user reads them), the gate
// prompts and answers and the agent exchanges of every session of a
// store, for `looprig search`.
//
// The index is derived and private: everything in it comes from the
// journals, read through rig's public read API (rig.ReadRecords), and it
// can be deleted at any time (the next search rebuilds it). It is one
// bbolt file, by default in a directory "search" beside the store
// (storage.Store.LocalDir: an fsstore's own directory, which the store's
// code never lists, or this machine's directory for a NATS store), made
// 0700 and 0600 like the store; for a store this user cannot write, in
// the user's cache directory. It holds, per session, the lines of its
// journal in compressed blocks of about 28 KiB (each line: turn index,
// kind, time, text), trigram postings of those blocks (lower-cased bytes;
// a trigram that begins a word is noted a second time, marked) to find
// the blocks a query can match, and how far each journal was read, so
// that a search first reads only what journals gained since.
// Hidden input is never journaled, so never indexed.
package search

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"looprig/rig/storage"
)

// indexFormat is the format of the index file; another one is rebuilt.
const indexFormat = "looprig-search v5"

// FileName is the index file's name in its directory.
const FileName = "index.db"

var (
	bucketMeta     = []byte("meta")
	bucketSessions = []byte("sessions")
	bucketBlocks   = []byte("blocks")
	bucketGrams    = []byte("grams")
	keyFormat      = []byte("format")
	keyDead        = []byte("dead") // blocks deleted since the last rebuild
)

// Options configure Open.
type Options struct {
	// Dir is the index's directory; "" is "search" in the store's
	// LocalDir (an error for a store without one).
	Dir string
	// Wait is how long Open waits for another process that has the index
	// open (a search or a rebuild); 0 is 3 seconds.
	Wait time.Duration
	// Notes, when set, receives a line for each rebuild and why.
	Notes io.Writer
	// Cache, when set, keeps the blocks searches decompress, for the
	// next searches (BlockCache); it may serve many Opens.
	Cache *BlockCache
}

// Index is an open search index of one store. It is not safe for
// concurrent use; processes take turns through the file's lock.
type Index struct {
	db    *bolt.DB
	store storage.Store
	path  string
	notes io.Writer
	grams *gramSet
	cache *BlockCache
	wrote bool // a catch-up wrote: Close syncs
	enc   *zstd.Encoder
	dec   *zstd.Decoder
}

// encoder is the index's block compressor, made at its first use.
func (ix *Index) encoder() *zstd.Encoder {
	if ix.enc == nil {
		ix.enc = newEncoder()
	}
	return ix.enc
}

// decoder is the index's block decompressor, made at its first use.
func (ix *Index) decoder() *zstd.Decoder {
	if ix.dec == nil {
		ix.dec = newDecoder()
	}
	return ix.dec
}

// BusyError: another process has the index open for longer than Open
// waits.
type BusyError struct {
	Path string
	Wait time.Duration
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("the search index %s is busy: another looprig search is using or rebuilding it (waited %s); try again in a moment", e.Path, e.Wait)
}

// CorruptError: the index file cannot be read. Open rebuilds such an
// index; a search that meets one rebuilds it and searches again.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string {
	var fe *formatError
	if errors.As(e.Err, &fe) {
		return fmt.Sprintf("the search index %s is of another format (%q; this looprig reads %q)", e.Path, fe.have, fe.want)
	}
	return fmt.Sprintf("the search index %s is damaged: %v", e.Path, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// formatError: the index file was written in another format, an older
// looprig's; it is rebuilt as a damaged one is, but not called damaged.
type formatError struct{ have, want string }

func (e *formatError) Error() string { return fmt.Sprintf("format %q, not %q", e.have, e.want) }

// Path is where the index of store lives with o.Dir.
func Path(store storage.Store, o Options) (string, error) {
	dir := o.Dir
	if dir == "" {
		if store.LocalDir() == "" {
			return "", errors.New("search index: the store has no local directory; give one")
		}
		dir = filepath.Join(store.LocalDir(), "search")
	}
	return filepath.Join(dir, FileName), nil
}

// Open opens the index of store, creating it when there is none and
// rebuilding it from scratch when it is damaged or of another format
// (with a note to o.Notes). It waits up to o.Wait, and ctx's deadline,
// for another process that has it open: then a *BusyError.
func Open(ctx context.Context, store storage.Store, o Options) (*Index, error) {
	path, err := Path(store, o)
	if err != nil {
		return nil, err
	}
	wait := lockWait(ctx, o.Wait)
	db, path, err := openAt(path, wait)
	if unwritable(err) && o.Dir == "" {
		// A store this user cannot write (a read-only mount): the index
		// goes to the user's cache directory instead.
		alt, aerr := cachePath(store.LocalDir())
		if aerr != nil {
			return nil, err
		}
		db, path, err = openAt(alt, wait)
	}
	ix := &Index{store: store, path: path, notes: o.Notes, cache: o.Cache}
	var corrupt *CorruptError
	if errors.As(err, &corrupt) {
		ix.note("search: %v; rebuilding it", corrupt)
		if err := removeIndex(path); err != nil {
			return nil, err
		}
		db, err = openDB(path, wait)
	}
	if err != nil {
		return nil, err
	}
	ix.db = db
	return ix, nil
}

// openAt makes path's directory (0700) and opens the index file there
// (openDB).
func openAt(path string, wait time.Duration) (*bolt.DB, string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, path, fmt.Errorf("search index: %w", err)
	}
	db, err := openDB(path, wait)
	return db, path, err
}

// unwritable reports whether err says a file or directory cannot be
// written: permission denied, or a read-only file system.
func unwritable(err error) bool {
	return errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS)
}

// cachePath is where the index of the store whose LocalDir is dir goes
// when dir cannot be written: the user's cache directory, under a name
// made from dir.
func cachePath(dir string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("search index: %w", err)
	}
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(cache, "looprig", "search", hex.EncodeToString(sum[:8]), FileName), nil
}

// initialMmapSize is the address space the index is mapped with at once
// (not memory: pages are read as they are touched; the file grows on its
// own). A write that grows the file past the mapping remaps it, and bbolt
// then copies every node the transaction touched out of the old mapping:
// mapped large from the start, a rebuild of a gigabyte of journals never
// remaps (it spent a fifth of its time there). 32-bit platforms keep
// bbolt's default.
const initialMmapSize = int((1 << 30) * (^uintptr(0) >> 63))

// openDB opens (creating) the bbolt file at path and checks its format:
// a *CorruptError when it is not a good index, a *BusyError when another
// process holds it past wait.
func openDB(path string, wait time.Duration) (db *bolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			if db != nil {
				db.Close()
			}
			db, err = nil, &CorruptError{Path: path, Err: fmt.Errorf("%v", r)}
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: wait, FreelistType: bolt.FreelistMapType, InitialMmapSize: initialMmapSize})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return nil, &BusyError{Path: path, Wait: wait}
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrChecksum):
		return nil, &CorruptError{Path: path, Err: err}
	case err != nil:
		// bbolt reports other kinds of damage as plain errors; a file that
		// exists and does not open is damaged (permissions aside).
		if unwritable(err) {
			return nil, fmt.Errorf("open search index: %w", err)
		}
		return nil, &CorruptError{Path: path, Err: err}
	}
	// The index is derived: a crash that loses its last writes costs a
	// rebuild, never data. No fsync on every search.
	db.NoSync = true
	// The format is checked in a read transaction: a write one, even
	// empty, writes the freelist and a meta page on every search. Only a
	// new file is written here (its buckets).
	check := db.View
	if err := db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketMeta) == nil {
			check = db.Update
		}
		return nil
	}); err != nil {
		db.Close()
		return nil, &CorruptError{Path: path, Err: err}
	}
	err = check(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		if m == nil {
			if tx.Bucket(bucketSessions) != nil {
				return errors.New("no format recorded")
			}
			return initBuckets(tx)
		}
		if f := string(m.Get(keyFormat)); f != indexFormat {
			return &formatError{have: f, want: indexFormat}
		}
		for _, b := range [][]byte{bucketSessions, bucketBlocks, bucketGrams} {
			if tx.Bucket(b) == nil {
				return fmt.Errorf("bucket %s missing", b)
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, &CorruptError{Path: path, Err: err}
	}
	return db, nil
}

func initBuckets(tx *bolt.Tx) error {
	m, err := tx.CreateBucket(bucketMeta)
	if err != nil {
		return err
	}
	if err := m.Put(keyFormat, []byte(indexFormat)); err != nil {
		return err
	}
	for _, b := range [][]byte{bucketSessions, bucketBlocks, bucketGrams} {
		if _, err := tx.CreateBucket(b); err != nil {
			return err
		}
	}
	return nil
}

func removeIndex(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the search index: %w", err)
	}
	return nil
}

// Path is the index file's path.
func (ix *Index) Path() string { return ix.path }

// Close closes the index, syncing what the last catch-up wrote.
func (ix *Index) Close() error {
	if ix.db == nil {
		return nil
	}
	var err error
	if ix.wrote {
		err = ix.db.Sync()
	}
	if cerr := ix.db.Close(); err == nil {
		err = cerr
	}
	if ix.dec != nil {
		ix.dec.Close()
	}
	ix.db, ix.enc, ix.dec, ix.grams = nil, nil, nil, nil
	return err
}

// Reset empties the index (`looprig search --reindex`): the next Update
// reads every journal from its start. It waits for the file's lock as
// Open does, up to 3 s and ctx's deadline.
func (ix *Index) Reset(ctx context.Context) error {
	if err := ix.db.Close(); err != nil {
		return fmt.Errorf("close the search index: %w", err)
	}
	ix.db = nil
	if err := removeIndex(ix.path); err != nil {
		return err
	}
	db, err := openDB(ix.path, lockWait(ctx, 0))
	if err != nil {
		return err
	}
	ix.db = db
	return nil
}

// recoverCorrupt turns a panic inside bbolt (a damaged page) into a
// *CorruptError in *err.
func (ix *Index) recoverCorrupt(err *error) {
	if r := recover(); r != nil {
		*err = &CorruptError{Path: ix.path, Err: fmt.Errorf("%v", r)}
	}
}

func (ix *Index) note(format string, args ...any) {
	if ix.notes != nil {
		fmt.Fprintf(ix.notes, format+"\n", args...)
	}
}

// Size is the index file's size in bytes.
func (ix *Index) Size() (int64, error) {
	fi, err := os.Stat(ix.path)
	if err != nil {
		return 0, fmt.Errorf("search index: %w", err)
	}
	return fi.Size(), nil
}

// lockWait is how long to wait for the index file's lock: wait (0: 3 s),
// within ctx's deadline.
func lockWait(ctx context.Context, wait time.Duration) time.Duration {
	if wait <= 0 {
		wait = 3 * time.Second
	}
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, max(time.Until(d), time.Millisecond))
	}
	return wait
}

// compactAfter is how much a rebuild must have written before it is
// compacted: a rebuild commits every commitBytes of lines, and the
// posting lists it rewrites at each commit leave free pages behind.
const compactAfter = 2 * commitBytes

// compact rewrites the index into a new file with full pages and no free
// ones (bbolt.Compact), then puts it in the old one's place.
func (ix *Index) compact(ctx context.Context) error {
	tmp := ix.path + ".compact"
	if err := removeIndex(tmp); err != nil {
		return err
	}
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: lockWait(ctx, 0), InitialMmapSize: initialMmapSize})
	if err != nil {
		return fmt.Errorf("compact the search index: %w", err)
	}
	dst.NoSync = true
	dst.AllocSize = 1 << 20 // grown a little at a time: no slack at its end
	err = bolt.Compact(dst, ix.db, 64<<20)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		removeIndex(tmp)
		return fmt.Errorf("compact the search index: %w", err)
	}
	if err := ix.db.Close(); err != nil {
		return fmt.Errorf("compact the search index: %w", err)
	}
	ix.db = nil
	if err := os.Rename(tmp, ix.path); err != nil {
		return fmt.Errorf("compact the search index: %w", err)
	}
	db, err := openDB(ix.path, lockWait(ctx, 0))
	if err != nil {
		return err
	}
	ix.db, ix.wrote = db, false
	return nil
}
