package fsstore

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"looprig/fsstore/internal/fsutil"
	"looprig/rig/storage"
)

// A KV file is one header line and the value:
//
//	lrkv1 <revision> <length> <crc32c of value, hex>\n<value>
//
// Updates write a synced temp file and rename it over the key's file, under
// an exclusive flock on the key's directory, so compare-and-swap holds
// across processes and a crash leaves either the old or the new value.
const kvMagic = "lrkv1"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Get implements storage.KV.
func (s *Store) Get(ctx context.Context, key string) (storage.Entry, error) {
	if err := storage.ValidateName(key); err != nil {
		return storage.Entry{}, err
	}
	if err := ctxErr(ctx); err != nil {
		return storage.Entry{}, err
	}
	return s.readKV(key)
}

func (s *Store) readKV(key string) (storage.Entry, error) {
	path := s.kvPath(key)
	b, err := readSmallFile(path, storage.MaxPayload+128)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
		return storage.Entry{}, &storage.NotFoundError{Key: key}
	}
	if err != nil {
		return storage.Entry{}, fmt.Errorf("read %s: %w", key, err)
	}
	rev, value, err := decodeKV(b)
	if err != nil {
		return storage.Entry{}, &storage.CorruptError{Name: key, Path: path, Offset: -1, Reason: err.Error()}
	}
	return storage.Entry{Key: key, Value: value, Revision: rev}, nil
}

func encodeKV(rev uint64, value []byte) []byte {
	header := fmt.Sprintf("%s %d %d %08x\n", kvMagic, rev, len(value), crc32.Checksum(value, castagnoli))
	out := make([]byte, 0, len(header)+len(value))
	return append(append(out, header...), value...)
}

func decodeKV(b []byte) (rev uint64, value []byte, err error) {
	nl := strings.IndexByte(string(b[:min(len(b), 128)]), '\n')
	if nl < 0 {
		return 0, nil, errors.New("no header line")
	}
	fields := strings.Fields(string(b[:nl]))
	if len(fields) != 4 || fields[0] != kvMagic {
		return 0, nil, fmt.Errorf("bad header %q", b[:nl])
	}
	rev, err = strconv.ParseUint(fields[1], 10, 64)
	if err != nil || rev == 0 {
		return 0, nil, fmt.Errorf("bad revision %q", fields[1])
	}
	n, err := strconv.Atoi(fields[2])
	if err != nil || n < 0 || n != len(b)-nl-1 {
		return 0, nil, fmt.Errorf("length %q does not match %d value bytes", fields[2], len(b)-nl-1)
	}
	sum, err := strconv.ParseUint(fields[3], 16, 32)
	value = b[nl+1:]
	if err != nil || uint32(sum) != crc32.Checksum(value, castagnoli) {
		return 0, nil, errors.New("checksum mismatch")
	}
	return rev, value, nil
}

// Put implements storage.KV.
func (s *Store) Put(ctx context.Context, key string, value []byte, expected uint64) (uint64, error) {
	if err := storage.ValidateName(key); err != nil {
		return 0, err
	}
	if len(value) > storage.MaxPayload {
		return 0, &storage.PayloadTooLargeError{Name: key, Size: len(value), Max: storage.MaxPayload}
	}
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	path := s.kvPath(key)
	if err := mkdirAll(filepath.Dir(path)); err != nil {
		return 0, fmt.Errorf("put %s: %w", key, err)
	}
	var rev uint64
	err := withDirLock(ctx, filepath.Dir(path), func() error {
		cur, err := s.currentRevision(key)
		if err != nil {
			return err
		}
		if expected != storage.AnyRevision && expected != cur {
			return &storage.ConflictError{Name: key, Expected: expected, Actual: cur}
		}
		rev = cur + 1
		err = writeFileAtomic(path, encodeKV(rev, value))
		s.touch() // even on error: the rename may have happened
		return err
	})
	if err != nil {
		return 0, wrapOp("put", key, err)
	}
	return rev, nil
}

// DeleteKey implements storage.KV.
func (s *Store) DeleteKey(ctx context.Context, key string, expected uint64) error {
	if err := storage.ValidateName(key); err != nil {
		return err
	}
	if err := ctxErr(ctx); err != nil {
		return err
	}
	path := s.kvPath(key)
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if expected == storage.AnyRevision || expected == storage.MustNotExist {
			return nil
		}
		return &storage.ConflictError{Name: key, Expected: expected, Actual: 0}
	}
	err := withDirLock(ctx, dir, func() error {
		cur, err := s.currentRevision(key)
		var corrupt *storage.CorruptError
		if errors.As(err, &corrupt) && expected == storage.AnyRevision {
			// An unconditional delete removes a damaged entry too: it
			// needs no revision, and a broken entry must be removable.
			cur, err = 1, nil
		}
		if err != nil {
			return err
		}
		if cur == 0 && (expected == storage.AnyRevision || expected == storage.MustNotExist) {
			return nil
		}
		if expected != storage.AnyRevision && expected != cur {
			return &storage.ConflictError{Name: key, Expected: expected, Actual: cur}
		}
		if err := os.Remove(path); err != nil {
			return err
		}
		s.touch()
		return fsutil.SyncDir(dir)
	})
	return wrapOp("delete", key, err)
}

// currentRevision returns the key's revision, 0 when absent.
func (s *Store) currentRevision(key string) (uint64, error) {
	e, err := s.readKV(key)
	var nf *storage.NotFoundError
	if errors.As(err, &nf) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return e.Revision, nil
}

// Children implements storage.ChildLister with one read of the directory
// that holds prefix's keys: "sessions/" lists session ids without opening
// every session's directory.
func (s *Store) Children(ctx context.Context, prefix string) ([]string, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if err := storage.ValidateChildPrefix(prefix); err != nil {
		return nil, err
	}
	dir := filepath.Join(s.dir, "kv")
	if prefix != "" {
		dir = filepath.Dir(namePath(s.dir, "kv", prefix+"x", ""))
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list children of %q: %w", prefix, err)
	}
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		name := e.Name()
		var seg string
		switch {
		case strings.HasPrefix(name, "."): // temporary files
			continue
		case e.IsDir():
			seg = strings.TrimSuffix(name, "~") // see namePath
		case strings.HasSuffix(name, ".kv"):
			seg = strings.TrimSuffix(name, ".kv")
		default:
			continue
		}
		if storage.ValidateName(prefix+seg) == nil {
			out = append(out, seg)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Keys implements storage.KV.
func (s *Store) Keys(ctx context.Context, prefix string) ([]string, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	root := filepath.Join(s.dir, "kv")
	// Start the walk at the deepest directory the prefix names in full.
	start := root
	if i := strings.LastIndexByte(prefix, '/'); i > 0 && storage.ValidateName(prefix[:i]) == nil {
		start = filepath.Dir(namePath(s.dir, "kv", prefix[:i]+"/x", ""))
	}
	var keys []string
	startRel, err := filepath.Rel(root, start)
	if err != nil {
		return nil, fmt.Errorf("list keys %q: %w", prefix, err)
	}
	files, err := walkFiles(start, func(base string) bool {
		return strings.HasSuffix(base, ".kv") && !strings.HasPrefix(base, ".")
	})
	for _, rel := range files {
		if startRel != "." {
			rel = filepath.ToSlash(startRel) + "/" + rel
		}
		key := keyFromPath(rel)
		if strings.HasPrefix(key, prefix) && storage.ValidateName(key) == nil {
			keys = append(keys, key)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("list keys %q: %w", prefix, err)
	}
	sort.Strings(keys)
	return keys, nil
}

// withDirLock runs fn holding an exclusive flock on dir. It waits for the
// lock while ctx allows.
func withDirLock(ctx context.Context, dir string, fn func() error) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(fd)
	if err := flockWait(ctx, fd); err != nil {
		return err
	}
	defer unix.Flock(fd, unix.LOCK_UN)
	return fn()
}

// flockWait takes an exclusive flock on fd, polling so that ctx can stop
// the wait. Holders keep these locks for one small write, so the wait is
// short.
func flockWait(ctx context.Context, fd int) error {
	delay := 50 * time.Microsecond
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("flock: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Millisecond)
	}
}

func wrapOp(op, name string, err error) error {
	if err == nil {
		return nil
	}
	var conflict *storage.ConflictError
	var corrupt *storage.CorruptError
	if errors.As(err, &conflict) || errors.As(err, &corrupt) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%s %s: %w", op, name, err)
}
