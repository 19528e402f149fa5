// Package fsstore is the filesystem backend of looprig's storage contracts:
// leases from flock plus epoch files, one append-only framed file per ledger,
// small revisioned KV files, and content-addressed blob files, all under
// one store directory.
//
// Layout (directories 0700, files 0600):
//
//	FORMAT                 format name and version
//	leases/<name>.lock     flock target only
//	leases/<name>.epoch    {"epoch":N,"pid":..,"host":..,"acquired":..}, replaced atomically
//	ledgers/<name>.log     one append-only framed file per ledger
//	kv/<key>.kv            revisioned values, replaced atomically
//	workspaces/<uuid>/     per-session workspaces (owned by the runtime)
//	blobs/<xx>/<digest>    content-addressed blobs, named by the SHA-256 of
//	                       their content (64 hex; xx its first 2), written
//	                       once through a temp file and a rename (blobs.go)
//	blobs/tmp/             temp files of puts in progress (ListBlobs removes
//	                       those of crashed puts once an hour old)
//
// A Store is safe for concurrent use by many goroutines, and several
// processes may open the same directory: leases, ledger appends and KV
// updates are coordinated through flock, blob puts through atomic renames.
package fsstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"looprig/fsstore/internal/fsutil"
	"looprig/fsstore/internal/lease"
	"looprig/fsstore/internal/seam"
	"looprig/rig/storage"
)

// FormatName is written to the FORMAT file of every store this version
// creates, and the only one it opens.
const FormatName = "looprig-fsstore v1"

const (
	dirMode  = 0o700
	fileMode = 0o600
)

// FormatError refuses a store directory whose FORMAT file names another
// format (or a directory that is not a looprig store at all).
type FormatError struct {
	Path     string
	Found    string
	Expected string
}

func (e *FormatError) Error() string {
	if e.Found == "" {
		return fmt.Sprintf("%s: not a looprig store (no FORMAT file, directory not empty); expected format %q", e.Path, e.Expected)
	}
	return fmt.Sprintf("%s: unsupported store format %q, this looprig reads %q", e.Path, e.Found, e.Expected)
}

// UnsafeStoreError refuses a store directory that others could tamper with
// or that lives on a filesystem where flock does not exclude other hosts.
type UnsafeStoreError struct {
	Path   string
	Reason string
	Fix    string
}

func (e *UnsafeStoreError) Error() string {
	msg := fmt.Sprintf("refusing store %s: %s", e.Path, e.Reason)
	if e.Fix != "" {
		msg += " (" + e.Fix + ")"
	}
	return msg
}

// Option configures Open.
type Option func(*options)

type options struct {
	watchdog     time.Duration
	allowNetwork bool
}

// WithWatchdog sets how often held leases are checked for loss (default
// 500ms) where the store cannot be told of changes. On Linux a change in a
// lease's directory (inotify) triggers the check at once, and the period
// is 10 s at least: an idle holder then wakes up seldom.
func WithWatchdog(d time.Duration) Option { return func(o *options) { o.watchdog = d } }

// WithNetworkFilesystem allows a store on a network file system (NFS or
// SMB; on Darwin also AFP, WebDAV, FTP: see netfs.go). flock there does not
// exclude processes on other hosts; only use it when one host uses the store.
func WithNetworkFilesystem() Option { return func(o *options) { o.allowNetwork = true } }

// Store is an open store directory. It implements storage.Store.
type Store struct {
	dir    string
	leases *lease.Manager

	mu       sync.Mutex
	logs     map[string]*openLog     // open ledgers by name, at most maxOpenLogs idle
	useClock uint64                  // orders uses of logs, for eviction
	held     map[string]*lease.Lease // live grants of this Store, for writer epochs
	closed   bool

	unsettledCount atomic.Uint64 // see ChangeStamp
}

var _ storage.Store = (*Store)(nil)

// Open opens the store in dir, creating it (0700) when it does not exist.
// It refuses a directory with another FORMAT, a non-empty directory that is
// not a store, a group- or world-writable directory, a directory owned by
// another user, and network filesystems (unless WithNetworkFilesystem).
func Open(dir string, opts ...Option) (*Store, error) {
	o := options{watchdog: 500 * time.Millisecond}
	for _, opt := range opts {
		opt(&o)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	if err := prepareDir(abs, o.allowNetwork); err != nil {
		return nil, err
	}
	for _, sub := range []string{"leases", "ledgers", "kv", "workspaces"} {
		if err := mkdirAll(filepath.Join(abs, sub)); err != nil {
			return nil, fmt.Errorf("open store %s: %w", abs, err)
		}
	}
	s := &Store{
		dir:  abs,
		logs: make(map[string]*openLog),
		held: make(map[string]*lease.Lease),
	}
	s.leases = lease.NewManager(lease.Options{
		Watchdog: o.watchdog, Changed: s.touch,
	})
	return s, nil
}

// prepareDir creates dir if needed, checks it is safe, and checks or writes
// its FORMAT file.
func prepareDir(dir string, allowNetwork bool) error {
	created := false
	if err := os.Mkdir(dir, dirMode); err == nil {
		created = true
	} else if !errors.Is(err, fs.ErrExist) {
		if errors.Is(err, fs.ErrNotExist) {
			if err := mkdirAll(dir); err != nil {
				return fmt.Errorf("create store %s: %w", dir, err)
			}
			created = true
		} else {
			return fmt.Errorf("create store %s: %w", dir, err)
		}
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("open store %s: %w", dir, err)
	}
	if !fi.IsDir() {
		if fi.Mode()&fs.ModeSymlink != 0 {
			// A symlinked store root is fine if it points at a directory.
			if fi, err = os.Stat(dir); err != nil || !fi.IsDir() {
				return &UnsafeStoreError{Path: dir, Reason: "it is a symlink that does not name a directory"}
			}
		} else {
			return &UnsafeStoreError{Path: dir, Reason: "it is not a directory"}
		}
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return &UnsafeStoreError{Path: dir, Reason: fmt.Sprintf("it is writable by group or others (mode %04o)", fi.Mode().Perm()),
			Fix: "run: chmod 700 " + dir}
	}
	if uid, ok := ownerUID(fi); ok && uid != uint32(os.Geteuid()) {
		return &UnsafeStoreError{Path: dir, Reason: fmt.Sprintf("it is owned by uid %d, not by you (uid %d)", uid, os.Geteuid()),
			Fix: "use a store of your own with --store or $LOOPRIG_STORE"}
	}
	if !allowNetwork {
		if fsName, network := networkFilesystem(dir); network {
			return &UnsafeStoreError{Path: dir, Reason: "it is on " + fsName + ", where flock does not exclude other hosts",
				Fix: "put the store on a local disk"}
		}
	}
	formatPath := filepath.Join(dir, "FORMAT")
	err = checkFormat(dir, formatPath)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		if !created {
			entries, err := os.ReadDir(dir)
			if err != nil {
				return fmt.Errorf("open store %s: %w", dir, err)
			}
			// Another process creating this store at the same moment may
			// have written its FORMAT since (read it again), or have it
			// half written (a temporary file, renamed into place next:
			// writing it too is as good).
			if slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return e.Name() == "FORMAT" }) {
				return checkFormat(dir, formatPath)
			}
			for _, e := range entries {
				if !isFormatTemp(e.Name()) {
					return &FormatError{Path: dir, Expected: FormatName}
				}
			}
		}
		if err := writeFileAtomic(formatPath, []byte(FormatName+"\n")); err != nil {
			return fmt.Errorf("create store %s: %w", dir, err)
		}
		return nil
	default:
		return err
	}
}

// checkFormat checks the FORMAT file of the store in dir: an error
// matching fs.ErrNotExist when there is none.
func checkFormat(dir, formatPath string) error {
	found, err := readSmallFile(formatPath, 256)
	if err != nil {
		return fmt.Errorf("open store %s: read FORMAT: %w", dir, err)
	}
	if got := strings.TrimSpace(string(found)); got != FormatName {
		return &FormatError{Path: dir, Found: got, Expected: FormatName}
	}
	return nil
}

// isFormatTemp reports whether name is a temporary file writeFileAtomic
// makes while it writes FORMAT.
func isFormatTemp(name string) bool { return strings.HasPrefix(name, ".FORMAT.tmp-") }

// ownerUID is the owner of fi. (os.Lstat gives a *syscall.Stat_t, not a
// *unix.Stat_t: asserting the latter made this check a no-op.)
func ownerUID(fi fs.FileInfo) (uint32, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}

// Dir returns the store's absolute directory.
func (s *Store) Dir() string { return s.dir }

// LocalDir returns the store's absolute directory: everything the store
// keeps is in it (storage.Store).
func (s *Store) LocalDir() string { return s.dir }

// WorkspacesDir returns the directory under which per-session workspaces
// live.
func (s *Store) WorkspacesDir() string { return filepath.Join(s.dir, "workspaces") }

// Close stops lease watchdogs and closes open ledger files. Leases stay held
// until released; Close does not release them.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for name, ol := range s.logs {
		if err := ol.log.Close(); err != nil {
			errs = append(errs, err)
		}
		delete(s.logs, name)
	}
	if err := s.leases.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (s *Store) leasePaths(name string) (lockPath, epochPath string) {
	return namePath(s.dir, "leases", name, ".lock"), namePath(s.dir, "leases", name, ".epoch")
}

func (s *Store) ledgerPath(name string) string { return namePath(s.dir, "ledgers", name, ".log") }

func (s *Store) kvPath(key string) string { return namePath(s.dir, "kv", key, ".kv") }

// reservedSuffixes are the endings fsstore gives its files.
var reservedSuffixes = []string{".lock", ".epoch", ".log", ".kv"}

// namePath maps a valid name to its file: each segment but the last is a
// directory, the last gets suffix. A directory segment that ends like one
// of our files ("a.lock" in "a.lock/b") gets a "~" appended, which no valid
// name contains, so lease "a" (a.lock) and lease "a.lock/b" (a.lock~/b.lock)
// never collide.
func namePath(root, area, name, suffix string) string {
	segs := strings.Split(name, "/")
	for i := range segs[:len(segs)-1] {
		for _, r := range reservedSuffixes {
			if strings.HasSuffix(segs[i], r) {
				segs[i] += "~"
				break
			}
		}
	}
	segs[len(segs)-1] += suffix
	return filepath.Join(append([]string{root, area}, segs...)...)
}

// keyFromPath inverts namePath for a KV file path relative to kv/.
func keyFromPath(rel string) string {
	segs := strings.Split(filepath.ToSlash(rel), "/")
	for i := range segs[:len(segs)-1] {
		segs[i] = strings.TrimSuffix(segs[i], "~")
	}
	segs[len(segs)-1] = strings.TrimSuffix(segs[len(segs)-1], ".kv")
	return strings.Join(segs, "/")
}

func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return nil
}

// mkdirAll creates dir and its missing parents with mode 0700.
func mkdirAll(dir string) error {
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return err
	}
	return nil
}

const smallRead = 4 << 10

var smallBufs = sync.Pool{New: func() any { return new([smallRead]byte) }}

// readSmallFile reads a file that must be at most limit bytes, without
// following a symlink at path.
//
// It uses the system calls directly (open, pread, close): listing
// thousands of sessions reads thousands of these, and an *os.File costs
// several more calls each.
func readSmallFile(path string, limit int64) ([]byte, error) {
	fd, err := fsutil.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	// Most files here are well under a page: one pread answers. A short
	// pread of a regular file is its end; a FIFO or socket fails it
	// (ESPIPE), a directory too (EISDIR).
	small := smallBufs.Get().(*[smallRead]byte)
	defer smallBufs.Put(small)
	for {
		n, err := unix.Pread(fd, small[:], 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n < smallRead {
			if int64(n) > limit {
				return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
			}
			return bytes.Clone(small[:n]), nil
		}
		break
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, &fs.PathError{Op: "read", Path: path, Err: errors.New("not a regular file")}
	}
	if st.Size > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	// One byte more than fstat said, so a file that grew since is seen.
	b := make([]byte, 0, st.Size+1)
	for {
		if len(b) == cap(b) {
			if int64(len(b)) > limit {
				return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
			}
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			break
		}
		b = b[:len(b)+n]
		if int64(len(b)) == st.Size && len(b) < cap(b) {
			// A regular file returns less than asked only at its end, and
			// files here are replaced by rename, never grown in place.
			break
		}
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return b, nil
}

// writeFileAtomic replaces a KV file (or FORMAT) with data: a synced temp
// file renamed over it, then a directory fsync, behind the KV test seams.
func writeFileAtomic(path string, data []byte) error {
	return fsutil.WriteFileAtomic(path, data, fileMode, -1, fsutil.Seams{TempWritten: seam.KVTempWritten, Renamed: seam.KVRenamed})
}
