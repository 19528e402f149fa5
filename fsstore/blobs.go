package fsstore

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"looprig/fsstore/internal/fsutil"
	"looprig/rig/storage"
)

// Blobs (storage.BlobStore): one file per blob, named by its digest,
//
//	blobs/<first 2 hex of the digest>/<64 hex>
//
// written whole or not at all. PutBlob streams the content into a temp
// file in blobs/tmp/ while it hashes it, fsyncs it, renames it to its
// digest's name and fsyncs that directory before it returns; a crash
// before the rename leaves only a temp file, which is never a blob. The
// same content put twice, by goroutines or processes at once, is one file:
// each put has its own temp file and the rename is atomic, so the last
// rename leaves one intact copy. A put of content that is already there
// drops its temp file and renews the blob's mtime (its Modified time), as
// TouchBlob does. DeleteBlobs unlinks blobs a directory at a time, with
// one fsync of each directory; GetBlobRange preads.
//
// Every file is reached from the store directory through descriptors of
// its directories opened with O_NOFOLLOW: a symbolic link (or a FIFO, a
// socket...) planted under blobs/ is never followed or read, and reading a
// blob whose file is one is a *storage.CorruptError.
//
// The directories are created when first needed (0700, their parent
// fsynced); files are 0600 whatever the umask.

const (
	blobsArea   = "blobs"
	blobTempDir = "tmp"
	// blobChunk is what PutBlob reads, hashes and writes at a time: its
	// memory does not grow with the blob.
	blobChunk = 256 << 10
	// staleBlobTemp is how old (by mtime) a temp file in blobs/tmp/ must
	// be for ListBlobs to remove it as the scrap of a crashed put. A put
	// in progress writes its temp file at least once per blobChunk, so
	// only a put whose reader stalls for that long loses its temp file
	// (and fails).
	staleBlobTemp = time.Hour
)

var blobBufs = sync.Pool{New: func() any { return new([blobChunk]byte) }}

var _ storage.BlobStore = (*Store)(nil)

// blobDirPath is the path of blobs/<sub> ("" for blobs/ itself).
func (s *Store) blobDirPath(sub string) string {
	return filepath.Join(s.dir, blobsArea, sub)
}

// blobFile returns the directory (2 hex) and file (64 hex) names of blob d.
func blobFile(d storage.Digest) (sub, name string) {
	name = d.String()
	return name[:2], name
}

// blobCorrupt is the *storage.CorruptError about blob d stored at path.
func blobCorrupt(d storage.Digest, path, reason string) error {
	return &storage.CorruptError{Name: storage.BlobName(d), Path: path, Offset: -1, Reason: reason}
}

// errNotDirectory marks a path under blobs/ that should be a directory and
// is something else (a symbolic link, a file): see openBlobDir.
var errNotDirectory = errors.New("not a directory (a symbolic link or a file in the way)")

// openBlobDir opens blobs/<sub> ("" for blobs/ itself) for use with the
// *at system calls, without following a symbolic link below the store
// directory. A missing directory is created when create is set, else an
// error matching fs.ErrNotExist. An entry in the way that is not a
// directory is an *fs.PathError wrapping errNotDirectory.
func (s *Store) openBlobDir(sub string, create bool) (int, error) {
	fd, err := fsutil.Open(s.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: s.dir, Err: err}
	}
	path := s.dir
	for _, name := range []string{blobsArea, sub} {
		if name == "" {
			continue
		}
		child, err := openChildDir(fd, path, name, create)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd, path = child, filepath.Join(path, name)
	}
	return fd, nil
}

// openChildDir opens the directory name in the open directory parent
// (whose path is parentPath), never through a symbolic link, creating it
// (0700 exactly, parent fsynced) when create is set.
func openChildDir(parent int, parentPath, name string, create bool) (int, error) {
	path := filepath.Join(parentPath, name)
	for attempt := 0; ; attempt++ {
		fd, err := openDirAt(parent, name)
		switch {
		case err == nil:
			return fd, nil
		case err == unix.ELOOP || err == unix.ENOTDIR:
			return -1, &fs.PathError{Op: "open", Path: path, Err: errNotDirectory}
		case err != unix.ENOENT || !create || attempt > 0:
			return -1, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		err = unix.Mkdirat(parent, name, dirMode)
		if err == unix.EEXIST {
			continue // made by another put meanwhile
		}
		if err != nil {
			return -1, &fs.PathError{Op: "mkdir", Path: path, Err: err}
		}
		if fd, err = openDirAt(parent, name); err != nil {
			return -1, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		if err := unix.Fchmod(fd, dirMode); err != nil { // undo any umask
			unix.Close(fd)
			return -1, &fs.PathError{Op: "chmod", Path: path, Err: err}
		}
		if err := fsutil.Fsync(parent, parentPath); err != nil {
			unix.Close(fd)
			return -1, err
		}
		return fd, nil
	}
}

// PutBlob implements storage.BlobStore (see the comment at the top of
// this file). Content already stored under its digest as a regular file
// of the right size is kept and its mtime renewed; anything else there (a
// file of another size, a symbolic link) is damage, and the put replaces
// it with the content it has just verified.
func (s *Store) PutBlob(ctx context.Context, r io.Reader) (storage.BlobInfo, error) {
	if err := ctxErr(ctx); err != nil {
		return storage.BlobInfo{}, fmt.Errorf("put blob: %w", err)
	}
	tmpDir, err := s.openBlobDir(blobTempDir, true)
	if err != nil {
		return storage.BlobInfo{}, fmt.Errorf("put blob: %w", err)
	}
	defer unix.Close(tmpDir)
	tmpDirPath := s.blobDirPath(blobTempDir)
	f, tmpName, err := createBlobTemp(tmpDir, tmpDirPath)
	if err != nil {
		return storage.BlobInfo{}, fmt.Errorf("put blob: %w", err)
	}
	keepTemp := false
	defer func() {
		if f != nil {
			f.Close()
		}
		if !keepTemp {
			unix.Unlinkat(tmpDir, tmpName, 0)
		}
	}()

	d, size, err := copyHashed(ctx, f, r)
	if err != nil {
		return storage.BlobInfo{}, fmt.Errorf("put blob: %w", err)
	}
	if err := fsutil.SyncFile(f); err != nil {
		return storage.BlobInfo{}, fmt.Errorf("put blob: %w", err)
	}
	var tst unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &tst); err != nil {
		return storage.BlobInfo{}, fmt.Errorf("put blob: %w", &fs.PathError{Op: "fstat", Path: f.Name(), Err: err})
	}
	if err := f.Close(); err != nil {
		f = nil
		return storage.BlobInfo{}, fmt.Errorf("put blob: %w", err)
	}
	f = nil

	sub, name := blobFile(d)
	dir, err := s.openBlobDir(sub, true)
	if err != nil {
		return storage.BlobInfo{}, fmt.Errorf("put blob %s: %w", d, err)
	}
	defer unix.Close(dir)
	dirPath := s.blobDirPath(sub)
	path := filepath.Join(dirPath, name)
	info := storage.BlobInfo{Digest: d, Size: size}

	// Stored already: renew its mtime. If it vanishes meanwhile (a
	// delete), store it after all. The new mtime is not synced: it only
	// matters to a sweep running now, which a crash ends too.
	var st unix.Stat_t
	err = fstatat(dir, name, &st)
	if err == nil && isRegular(&st) && st.Size == size {
		err = unix.UtimesNanoAt(dir, name, nil, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil {
			err = fstatat(dir, name, &st)
		}
		if err == nil {
			// Another put may have renamed the file a moment ago and not
			// fsynced the directory yet: this put is only durable once
			// the directory is.
			if err := fsutil.Fsync(dir, dirPath); err != nil {
				return storage.BlobInfo{}, fmt.Errorf("put blob: %w", err)
			}
			info.Modified = statMtime(&st)
			return info, nil
		}
		if err != unix.ENOENT {
			return storage.BlobInfo{}, fmt.Errorf("put blob: %w", &fs.PathError{Op: "utimes", Path: path, Err: err})
		}
	}
	if err := unix.Renameat(tmpDir, tmpName, dir, name); err != nil {
		if err == unix.ENOENT {
			return storage.BlobInfo{}, fmt.Errorf("put blob: rename %s: temp file removed meanwhile (a put stalled for %v?): %w",
				filepath.Join(tmpDirPath, tmpName), staleBlobTemp, err)
		}
		if fstatat(dir, name, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return storage.BlobInfo{}, blobCorrupt(d, path, "a directory in the place of the blob file")
		}
		return storage.BlobInfo{}, fmt.Errorf("put blob: %w", &os.LinkError{Op: "rename", Old: filepath.Join(tmpDirPath, tmpName), New: path, Err: err})
	}
	keepTemp = true // it is the blob now
	if err := fsutil.Fsync(dir, dirPath); err != nil {
		return storage.BlobInfo{}, fmt.Errorf("put blob: %w", err)
	}
	info.Modified = statMtime(&tst)
	return info, nil
}

// createBlobTemp creates a new temp file (0600 exactly) in the open
// directory dir (at dirPath) under a name no other put uses.
func createBlobTemp(dir int, dirPath string) (*os.File, string, error) {
	for {
		name := "put-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(rand.Uint64(), 36)
		path := filepath.Join(dirPath, name)
		fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, fileMode)
		if err == unix.EEXIST || err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, "", &fs.PathError{Op: "create", Path: path, Err: err}
		}
		if err := unix.Fchmod(fd, fileMode); err != nil { // undo any umask
			unix.Close(fd)
			unix.Unlinkat(dir, name, 0)
			return nil, "", &fs.PathError{Op: "chmod", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), name, nil
	}
}

// copyHashed copies r to f, blobChunk bytes at a time through one pooled
// buffer, and returns the SHA-256 and length of what it copied. ctx is
// checked before each chunk; an error of r is wrapped.
func copyHashed(ctx context.Context, f *os.File, r io.Reader) (storage.Digest, int64, error) {
	buf := blobBufs.Get().(*[blobChunk]byte)
	defer blobBufs.Put(buf)
	h := sha256.New()
	var size int64
	for eof := false; !eof; {
		if err := ctx.Err(); err != nil {
			return storage.Digest{}, 0, err
		}
		// Fill the buffer, so that a reader yielding small pieces still
		// makes large writes.
		n := 0
		for n < len(buf) && !eof {
			m, err := r.Read(buf[n:])
			if m < 0 || m > len(buf)-n {
				return storage.Digest{}, 0, fmt.Errorf("read content: reader returned %d bytes for a %d-byte buffer", m, len(buf)-n)
			}
			n += m
			switch {
			case err == io.EOF:
				eof = true
			case err != nil:
				return storage.Digest{}, 0, fmt.Errorf("read content: %w", err)
			}
		}
		h.Write(buf[:n])
		if _, err := f.Write(buf[:n]); err != nil {
			return storage.Digest{}, 0, err
		}
		size += int64(n)
	}
	var d storage.Digest
	h.Sum(d[:0])
	return d, size, nil
}

// GetBlob implements storage.BlobStore. The file is opened read-only and
// never through a symbolic link; anything but a regular file under the
// digest's name is a *storage.CorruptError.
func (s *Store) GetBlob(ctx context.Context, d storage.Digest) (io.ReadCloser, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, fmt.Errorf("get blob %s: %w", d, err)
	}
	f, size, err := s.openBlobFile("get", d)
	if err != nil {
		return nil, err
	}
	return storage.VerifyingReader(f, d, size, f.Name()), nil
}

// GetBlobRange implements storage.BlobStore. The file is opened as
// GetBlob opens it and read with pread(2) from offset on: nothing before
// offset is read.
func (s *Store) GetBlobRange(ctx context.Context, d storage.Digest, offset, length int64) (io.ReadCloser, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, fmt.Errorf("get blob range %s: %w", d, err)
	}
	f, size, err := s.openBlobFile("get", d)
	if err != nil {
		return nil, err
	}
	if err := storage.CheckRange(d, size, offset, length, f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("get blob range: %w", err)
	}
	section := struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, offset, length), f}
	return storage.RangeReader(section, d, offset, length, f.Name()), nil
}

// openBlobFile opens blob d's file for reading, read-only and never
// through a symbolic link, and returns it with its size. An absent blob
// is *storage.BlobNotFoundError; anything but a regular file under the
// digest's name is a *storage.CorruptError. op names the operation in
// other errors.
func (s *Store) openBlobFile(op string, d storage.Digest) (*os.File, int64, error) {
	sub, name := blobFile(d)
	path := filepath.Join(s.blobDirPath(sub), name)
	dir, err := s.openBlobDir(sub, false)
	if err != nil {
		return nil, 0, s.blobDirError(op, d, err)
	}
	defer unix.Close(dir)
	// O_NONBLOCK: opening a FIFO planted here must not wait for a writer.
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	}
	switch {
	case err == unix.ENOENT:
		return nil, 0, &storage.BlobNotFoundError{Digest: d}
	case err == unix.ELOOP:
		return nil, 0, blobCorrupt(d, path, "a symbolic link in the place of the blob file")
	case err != nil:
		return nil, 0, fmt.Errorf("%s blob: %w", op, &fs.PathError{Op: "open", Path: path, Err: err})
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, 0, fmt.Errorf("%s blob: %w", op, &fs.PathError{Op: "fstat", Path: path, Err: err})
	}
	if !isRegular(&st) {
		unix.Close(fd)
		return nil, 0, blobCorrupt(d, path, "not a regular file")
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, 0, fmt.Errorf("%s blob: %w", op, &fs.PathError{Op: "fcntl", Path: path, Err: err})
	}
	return os.NewFile(uintptr(fd), path), st.Size, nil
}

// StatBlob implements storage.BlobStore. Anything but a regular file
// under the digest's name is a *storage.CorruptError.
func (s *Store) StatBlob(ctx context.Context, d storage.Digest) (storage.BlobInfo, error) {
	if err := ctxErr(ctx); err != nil {
		return storage.BlobInfo{}, fmt.Errorf("stat blob %s: %w", d, err)
	}
	sub, name := blobFile(d)
	path := filepath.Join(s.blobDirPath(sub), name)
	dir, err := s.openBlobDir(sub, false)
	if err != nil {
		return storage.BlobInfo{}, s.blobDirError("stat", d, err)
	}
	defer unix.Close(dir)
	var st unix.Stat_t
	switch err := fstatat(dir, name, &st); {
	case err == unix.ENOENT:
		return storage.BlobInfo{}, &storage.BlobNotFoundError{Digest: d}
	case err != nil:
		return storage.BlobInfo{}, fmt.Errorf("stat blob: %w", &fs.PathError{Op: "lstat", Path: path, Err: err})
	case !isRegular(&st):
		return storage.BlobInfo{}, blobCorrupt(d, path, "not a regular file")
	}
	return storage.BlobInfo{Digest: d, Size: st.Size, Modified: statMtime(&st)}, nil
}

// DeleteBlob implements storage.BlobStore. It removes whatever is under
// the digest's name (a damaged file, a symbolic link: never what a link
// points to), except a directory.
func (s *Store) DeleteBlob(ctx context.Context, d storage.Digest) error {
	if err := ctxErr(ctx); err != nil {
		return fmt.Errorf("delete blob %s: %w", d, err)
	}
	sub, name := blobFile(d)
	dirPath := s.blobDirPath(sub)
	dir, err := s.openBlobDir(sub, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return s.blobDirError("delete", d, err)
	}
	defer unix.Close(dir)
	switch err := unix.Unlinkat(dir, name, 0); err {
	case nil:
	case unix.ENOENT:
		return nil
	default:
		return fmt.Errorf("delete blob: %w", &fs.PathError{Op: "remove", Path: filepath.Join(dirPath, name), Err: err})
	}
	if err := fsutil.Fsync(dir, dirPath); err != nil {
		return fmt.Errorf("delete blob: %w", err)
	}
	return nil
}

// TouchBlob implements storage.BlobStore: utimensat(2) of the blob's
// name, never through a symbolic link, then an fsync of its directory, as
// a put of content already stored does (see PutBlob): a blob another put
// renamed into place a moment ago is durable once TouchBlob returns. The
// new mtime is not synced (it matters only to a sweep running now, which
// a crash ends too). Anything but a regular file under the digest's name
// is a *storage.CorruptError, and is not touched.
func (s *Store) TouchBlob(ctx context.Context, d storage.Digest) (storage.BlobInfo, error) {
	if err := ctxErr(ctx); err != nil {
		return storage.BlobInfo{}, fmt.Errorf("touch blob %s: %w", d, err)
	}
	sub, name := blobFile(d)
	dirPath := s.blobDirPath(sub)
	path := filepath.Join(dirPath, name)
	dir, err := s.openBlobDir(sub, false)
	if err != nil {
		return storage.BlobInfo{}, s.blobDirError("touch", d, err)
	}
	defer unix.Close(dir)
	// Stat before the touch, so as to touch only a blob, and after, for
	// its new time.
	var st unix.Stat_t
	if err := lstatBlob(dir, name, path, d, &st); err != nil {
		return storage.BlobInfo{}, fmt.Errorf("touch blob: %w", err)
	}
	switch err := utimesNow(dir, name); {
	case err == unix.ENOENT:
		return storage.BlobInfo{}, &storage.BlobNotFoundError{Digest: d}
	case err != nil:
		return storage.BlobInfo{}, fmt.Errorf("touch blob: %w", &fs.PathError{Op: "utimes", Path: path, Err: err})
	}
	if err := lstatBlob(dir, name, path, d, &st); err != nil {
		return storage.BlobInfo{}, fmt.Errorf("touch blob: %w", err)
	}
	if err := fsutil.Fsync(dir, dirPath); err != nil {
		return storage.BlobInfo{}, fmt.Errorf("touch blob: %w", err)
	}
	return storage.BlobInfo{Digest: d, Size: st.Size, Modified: statMtime(&st)}, nil
}

// lstatBlob is fstatat of blob d's file name (at path) in its open
// directory dir: an absent blob is *storage.BlobNotFoundError, anything
// but a regular file a *storage.CorruptError.
func lstatBlob(dir int, name, path string, d storage.Digest, st *unix.Stat_t) error {
	switch err := fstatat(dir, name, st); {
	case err == unix.ENOENT:
		return &storage.BlobNotFoundError{Digest: d}
	case err != nil:
		return &fs.PathError{Op: "lstat", Path: path, Err: err}
	case !isRegular(st):
		return blobCorrupt(d, path, "not a regular file")
	}
	return nil
}

// deleteParallel is how many blobs/<xx>/ directories DeleteBlobs works in
// at once, so that their fsyncs overlap.
const deleteParallel = 8

// DeleteBlobs implements storage.BlobStore. It groups ds by their
// blobs/<xx>/ directory and, in each, lstats and unlinks every blob
// older than cutoff (the check and the removal a few microseconds apart:
// a renewal in between is lost, as with any stat-then-unlink), then
// fsyncs the directory once: a few hundred fsyncs however many blobs,
// against one per blob for DeleteBlob. Up to deleteParallel directories
// are done at once. Like DeleteBlob it removes whatever is under a
// digest's name (a symbolic link, never what it points to), except a
// directory, which is a *storage.CorruptError. The first error stops it:
// the directories in progress finish (they are fsynced), and the blobs
// returned are those removed in directories whose fsync succeeded.
func (s *Store) DeleteBlobs(ctx context.Context, ds []storage.Digest, cutoff time.Time) ([]storage.BlobInfo, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, fmt.Errorf("delete blobs: %w", err)
	}
	bySub := map[string][]storage.Digest{}
	seen := make(map[storage.Digest]bool, len(ds))
	for _, d := range ds {
		if !seen[d] {
			seen[d] = true
			sub, _ := blobFile(d)
			bySub[sub] = append(bySub[sub], d)
		}
	}
	if len(bySub) == 0 {
		return nil, nil
	}
	root, err := s.openBlobDir("", false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("delete blobs: %w", err)
	}
	defer unix.Close(root)
	subs := make([]string, 0, len(bySub))
	for sub := range bySub {
		subs = append(subs, sub)
	}
	slices.Sort(subs)

	removed, err := storage.DeleteInParallel(len(subs), deleteParallel, func(i int) ([]storage.BlobInfo, error) {
		return s.deleteInBlobDir(ctx, root, subs[i], bySub[subs[i]], cutoff)
	})
	if err != nil {
		return removed, fmt.Errorf("delete blobs: %w", err)
	}
	return removed, nil
}

// deleteInBlobDir is DeleteBlobs in blobs/<sub>/ (root is blobs/ open):
// it removes those of ds last modified before cutoff (all when cutoff is
// zero), stopping at the first error, and fsyncs the directory once if it
// removed any. It returns what it removed, none if the fsync failed.
func (s *Store) deleteInBlobDir(ctx context.Context, root int, sub string, ds []storage.Digest, cutoff time.Time) ([]storage.BlobInfo, error) {
	dirPath := s.blobDirPath(sub)
	dir, err := openChildDir(root, s.blobDirPath(""), sub, false)
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, errNotDirectory) && errors.As(err, &pe):
		return nil, blobCorrupt(ds[0], pe.Path, "not a directory (a symbolic link or a file in the way)")
	case err != nil:
		return nil, err
	}
	defer unix.Close(dir)
	var removed []storage.BlobInfo
	var failed error
	for _, d := range ds {
		if failed = ctxErr(ctx); failed != nil {
			break
		}
		_, name := blobFile(d)
		path := filepath.Join(dirPath, name)
		var st unix.Stat_t
		switch err := fstatat(dir, name, &st); {
		case err == unix.ENOENT:
			continue
		case err != nil:
			failed = &fs.PathError{Op: "lstat", Path: path, Err: err}
		case st.Mode&unix.S_IFMT == unix.S_IFDIR:
			failed = blobCorrupt(d, path, "a directory in the place of the blob file")
		}
		if failed != nil {
			break
		}
		if mtime := statMtime(&st); cutoff.IsZero() || mtime.Before(cutoff) {
			switch err := unix.Unlinkat(dir, name, 0); err {
			case nil:
				removed = append(removed, storage.BlobInfo{Digest: d, Size: st.Size, Modified: mtime})
			case unix.ENOENT:
			default:
				failed = &fs.PathError{Op: "remove", Path: path, Err: err}
			}
			if failed != nil {
				break
			}
		}
	}
	if len(removed) > 0 {
		if err := fsutil.Fsync(dir, dirPath); err != nil {
			return nil, err
		}
	}
	return removed, failed
}

// blobDirError is the error of op on blob d when its directory did not
// open: absent is *storage.BlobNotFoundError, something else in its place
// is corrupt.
func (s *Store) blobDirError(op string, d storage.Digest, err error) error {
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &storage.BlobNotFoundError{Digest: d}
	case errors.Is(err, errNotDirectory) && errors.As(err, &pe):
		return blobCorrupt(d, pe.Path, "not a directory (a symbolic link or a file in the way)")
	}
	return fmt.Errorf("%s blob: %w", op, err)
}

// ListBlobs implements storage.BlobStore. It reads one blobs/<xx>/
// directory at a time (its names, then a stat of each), so its memory is
// that of the largest directory, about 1/256 of the blobs. Temp files,
// names that are not 64 lower-case hex in the directory of their first
// two, and entries that are not regular files (which GetBlob refuses as
// corrupt) are not blobs and are skipped. It also removes the temp files
// of puts that crashed (older than staleBlobTemp).
func (s *Store) ListBlobs(ctx context.Context, fn func(storage.BlobInfo) error) error {
	if err := ctxErr(ctx); err != nil {
		return fmt.Errorf("list blobs: %w", err)
	}
	s.sweepBlobTemps(time.Now().Add(-staleBlobTemp))
	root, err := s.openBlobDir("", false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list blobs: %w", err)
	}
	subs, err := readDirNames(root, s.blobDirPath(""))
	unix.Close(root)
	if err != nil {
		return fmt.Errorf("list blobs: %w", err)
	}
	for _, sub := range subs {
		if len(sub) != 2 || !isLowerHex(sub) {
			continue
		}
		if err := ctxErr(ctx); err != nil {
			return fmt.Errorf("list blobs: %w", err)
		}
		if err := s.listBlobDir(sub, fn); err != nil {
			return err
		}
	}
	return nil
}

// listBlobDir calls fn with each blob in blobs/<sub>/.
func (s *Store) listBlobDir(sub string, fn func(storage.BlobInfo) error) error {
	dirPath := s.blobDirPath(sub)
	dir, err := s.openBlobDir(sub, false)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDirectory) {
		return nil // vanished, or not a directory of ours
	}
	if err != nil {
		return fmt.Errorf("list blobs: %w", err)
	}
	defer unix.Close(dir)
	names, err := readDirNames(dir, dirPath)
	if err != nil {
		return fmt.Errorf("list blobs: %w", err)
	}
	for _, name := range names {
		if len(name) != 2*len(storage.Digest{}) || name[:2] != sub {
			continue
		}
		d, err := storage.ParseDigest(name)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		switch err := fstatat(dir, name, &st); {
		case err == unix.ENOENT:
			continue // deleted meanwhile
		case err != nil:
			return fmt.Errorf("list blobs: %w", &fs.PathError{Op: "lstat", Path: filepath.Join(dirPath, name), Err: err})
		case !isRegular(&st):
			continue
		}
		if err := fn(storage.BlobInfo{Digest: d, Size: st.Size, Modified: statMtime(&st)}); err != nil {
			return err
		}
	}
	return nil
}

// sweepBlobTemps removes the temp files in blobs/tmp/ last modified
// before cutoff: scraps of puts that crashed. It is best effort: a temp
// file left is harmless, so nothing here fails a listing.
func (s *Store) sweepBlobTemps(cutoff time.Time) {
	dir, err := s.openBlobDir(blobTempDir, false)
	if err != nil {
		return
	}
	defer unix.Close(dir)
	names, err := readDirNames(dir, s.blobDirPath(blobTempDir))
	if err != nil {
		return
	}
	removed := false
	for _, name := range names {
		var st unix.Stat_t
		if fstatat(dir, name, &st) != nil || st.Mode&unix.S_IFMT == unix.S_IFDIR || !statMtime(&st).Before(cutoff) {
			continue
		}
		if unix.Unlinkat(dir, name, 0) == nil {
			removed = true
		}
	}
	if removed {
		_ = fsutil.Fsync(dir, s.blobDirPath(blobTempDir))
	}
}

// readDirNames returns the names in the open directory fd (at path),
// which it leaves open.
func readDirNames(fd int, path string) ([]string, error) {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	for err == unix.EINTR {
		dup, err = unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "dup", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(dup), path)
	defer f.Close()
	return f.Readdirnames(-1)
}

// utimesNow sets the times of name in the open directory dir to now, never
// through a symbolic link, retried on EINTR.
func utimesNow(dir int, name string) error {
	for {
		if err := unix.UtimesNanoAt(dir, name, nil, unix.AT_SYMLINK_NOFOLLOW); err != unix.EINTR {
			return err
		}
	}
}

// fstatat is lstat of name in the open directory dir, retried on EINTR.
func fstatat(dir int, name string, st *unix.Stat_t) error {
	for {
		if err := unix.Fstatat(dir, name, st, unix.AT_SYMLINK_NOFOLLOW); err != unix.EINTR {
			return err
		}
	}
}

func isRegular(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFREG }

func statMtime(st *unix.Stat_t) time.Time { return time.Unix(st.Mtim.Unix()) }

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
