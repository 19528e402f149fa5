package fsstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"looprig/fsstore"
	"looprig/rig/storage"
)

// blobPath is where fsstore keeps blob d in the store in dir.
func blobPath(dir string, d storage.Digest) string {
	h := d.String()
	return filepath.Join(dir, "blobs", h[:2], h)
}

func mustPutBlob(t testing.TB, s *fsstore.Store, data []byte) storage.BlobInfo {
	t.Helper()
	info, err := s.PutBlob(context.Background(), bytes.NewReader(data))
	if err != nil {
		t.Fatalf("PutBlob(%d bytes): %v", len(data), err)
	}
	if info.Digest != storage.DigestOf(data) || info.Size != int64(len(data)) {
		t.Fatalf("PutBlob(%d bytes) = %s, %d", len(data), info.Digest, info.Size)
	}
	return info
}

func readAllBlob(s *fsstore.Store, d storage.Digest) ([]byte, error) {
	r, err := s.GetBlob(context.Background(), d)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func listBlobs(t testing.TB, s *fsstore.Store) map[storage.Digest]storage.BlobInfo {
	t.Helper()
	got := map[storage.Digest]storage.BlobInfo{}
	if err := s.ListBlobs(context.Background(), func(in storage.BlobInfo) error {
		got[in.Digest] = in
		return nil
	}); err != nil {
		t.Fatalf("ListBlobs: %v", err)
	}
	return got
}

// tempFiles lists blobs/tmp/ of the store in dir.
func tempFiles(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "blobs", "tmp"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// Blob files are blobs/<xx>/<digest>, 0600, in directories 0700, whatever
// the umask; no temp file outlives a put.
func TestBlobLayoutAndModes(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	old := syscall.Umask(0o277) // would make 0500 directories and 0400 files
	defer syscall.Umask(old)
	var infos []storage.BlobInfo
	for i := range 5 {
		infos = append(infos, mustPutBlob(t, s, []byte(fmt.Sprintf("blob %d", i))))
	}
	syscall.Umask(old)
	for _, in := range infos {
		if _, err := os.Lstat(blobPath(dir, in.Digest)); err != nil {
			t.Errorf("blob %s: %v", in.Digest, err)
		}
	}
	seen := checkPrivateModes(t, filepath.Join(dir, "blobs"))
	if seen < 1+1+5+1 { // blobs/, tmp/, the files, their directories
		t.Errorf("walked only %d entries", seen)
	}
	if tmp := tempFiles(t, dir); len(tmp) != 0 {
		t.Errorf("temp files left: %v", tmp)
	}
}

// A symbolic link, a FIFO or a directory planted under a digest's name is
// never followed or read: the blob is corrupt (and not listed); a
// symlinked blobs/<xx>/ directory likewise.
func TestBlobPlantedEntriesAreCorrupt(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	ctx := context.Background()
	mustPutBlob(t, s, []byte("something else, so that blobs/ exists"))

	outside := filepath.Join(t.TempDir(), "target")
	good := []byte("the content the link points at, intact")
	if err := os.WriteFile(outside, good, 0o600); err != nil {
		t.Fatal(err)
	}
	linked := storage.DigestOf(good)
	plant := func(d storage.Digest, do func(path string) error) string {
		t.Helper()
		path := blobPath(dir, d)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := do(path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	fifo := storage.DigestOf([]byte("fifo"))
	subdir := storage.DigestOf([]byte("dir"))
	cases := map[storage.Digest]string{
		linked: plant(linked, func(p string) error { return os.Symlink(outside, p) }),
		fifo:   plant(fifo, func(p string) error { return unix.Mkfifo(p, 0o600) }),
		subdir: plant(subdir, func(p string) error { return os.Mkdir(p, 0o700) }),
	}
	for d, path := range cases {
		var ce *storage.CorruptError
		done := make(chan struct{})
		go func() {
			defer close(done)
			got, err := readAllBlob(s, d)
			if !errors.As(err, &ce) || ce.Path != path || ce.Name != storage.BlobName(d) {
				t.Errorf("GetBlob of %s: %d bytes, %v; want *CorruptError naming %s", path, len(got), err, path)
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("GetBlob of %s blocks", path)
		}
		if _, err := s.StatBlob(ctx, d); !errors.As(err, &ce) {
			t.Errorf("StatBlob of %s: %v; want *CorruptError", path, err)
		}
	}
	for d := range listBlobs(t, s) {
		if _, bad := cases[d]; bad {
			t.Errorf("ListBlobs lists planted %s", d)
		}
	}

	// A symlinked blobs/<xx>/ directory is not entered either.
	elsewhere := t.TempDir()
	hidden := []byte("hidden behind a symlinked directory")
	hd := storage.DigestOf(hidden)
	if err := os.WriteFile(filepath.Join(elsewhere, hd.String()), hidden, 0o600); err != nil {
		t.Fatal(err)
	}
	xx := filepath.Dir(blobPath(dir, hd))
	if err := os.RemoveAll(xx); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, xx); err != nil {
		t.Fatal(err)
	}
	var ce *storage.CorruptError
	if _, err := readAllBlob(s, hd); !errors.As(err, &ce) || ce.Path != xx {
		t.Errorf("GetBlob through a symlinked directory: %v; want *CorruptError naming %s", err, xx)
	}
	if _, ok := listBlobs(t, s)[hd]; ok {
		t.Errorf("ListBlobs lists a blob behind a symlinked directory")
	}
	if err := s.DeleteBlob(ctx, hd); !errors.As(err, &ce) {
		t.Errorf("DeleteBlob through a symlinked directory: %v; want *CorruptError", err)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, hd.String())); err != nil {
		t.Errorf("the file behind the symlinked directory: %v", err)
	}

	// Putting the content replaces a planted link (not its target) or FIFO
	// with the blob; a directory in the way is corrupt.
	if got := mustPutBlob(t, s, good); got.Digest != linked {
		t.Fatal("digest")
	}
	if fi, err := os.Lstat(cases[linked]); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("after a put over a planted link: %v, %v", fi, err)
	}
	if got, err := readAllBlob(s, linked); err != nil || !bytes.Equal(got, good) {
		t.Errorf("after a put over a planted link: %q, %v", got, err)
	}
	if b, err := os.ReadFile(outside); err != nil || !bytes.Equal(b, good) {
		t.Errorf("the link's target changed: %q, %v", b, err)
	}
	mustPutBlob(t, s, []byte("fifo"))
	if got, err := readAllBlob(s, fifo); err != nil || string(got) != "fifo" {
		t.Errorf("after a put over a planted FIFO: %q, %v", got, err)
	}
	if _, err := s.PutBlob(ctx, strings.NewReader("dir")); !errors.As(err, &ce) || ce.Path != cases[subdir] {
		t.Errorf("PutBlob over a directory: %v; want *CorruptError naming %s", err, cases[subdir])
	}
	if tmp := tempFiles(t, dir); len(tmp) != 0 {
		t.Errorf("temp files left: %v", tmp)
	}
}

// A put of content whose file has the wrong size (damaged) replaces it; a
// put of content stored intact keeps the file and renews its mtime.
func TestBlobPutAgain(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	data := []byte("some content put twice")
	info := mustPutBlob(t, s, data)
	path := blobPath(dir, info.Digest)
	fi1, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi1.ModTime().Equal(info.Modified) {
		t.Errorf("Modified %v, file mtime %v", info.Modified, fi1.ModTime())
	}
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	again := mustPutBlob(t, s, data)
	fi2, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(fi1, fi2) {
		t.Errorf("put again replaced the intact file")
	}
	if time.Since(fi2.ModTime()) > time.Hour || !fi2.ModTime().Equal(again.Modified) {
		t.Errorf("put again: mtime %v, Modified %v; want both now", fi2.ModTime(), again.Modified)
	}
	if err := os.WriteFile(path, data[:5], 0o600); err != nil {
		t.Fatal(err)
	}
	mustPutBlob(t, s, data)
	if got, err := readAllBlob(s, info.Digest); err != nil || !bytes.Equal(got, data) {
		t.Errorf("after a put over a short file: %q, %v", got, err)
	}
}

// ListBlobs lists only 64-hex names in the directory of their first two
// hex digits; temp files and strays are not blobs.
func TestBlobListSkipsStrays(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	info := mustPutBlob(t, s, []byte("the one blob"))
	other := storage.DigestOf([]byte("other")).String()
	wrongDir := "00"
	if other[:2] == wrongDir {
		wrongDir = "01"
	}
	for name, data := range map[string]string{
		"blobs/" + wrongDir + "/" + other:                   "in the wrong directory",
		"blobs/" + other[:2] + "/" + strings.ToUpper(other): "upper-case",
		"blobs/" + other[:2] + "/" + other + ".tmp":         "suffixed",
		"blobs/" + other[:2] + "/." + other[1:]:             "dot-prefixed",
		"blobs/zz/" + strings.Repeat("z", 64):               "not hex",
		"blobs/tmp/" + other:                                "a temp file with a digest's name",
		"blobs/" + other:                                    "not in a directory",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got := listBlobs(t, s)
	if len(got) != 1 || got[info.Digest].Size != info.Size {
		t.Errorf("ListBlobs = %v; want only %s", got, info.Digest)
	}
}

// ListBlobs removes temp files an hour old (crashed puts), not younger
// ones (puts in progress).
func TestBlobStaleTempsSwept(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	mustPutBlob(t, s, []byte("x"))
	tmp := filepath.Join(dir, "blobs", "tmp")
	for _, name := range []string{"put-stale", "put-fresh"} {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-61 * time.Minute)
	if err := os.Chtimes(filepath.Join(tmp, "put-stale"), old, old); err != nil {
		t.Fatal(err)
	}
	if n := len(listBlobs(t, s)); n != 1 {
		t.Errorf("listed %d blobs, want 1", n)
	}
	if got := tempFiles(t, dir); len(got) != 1 || got[0] != "put-fresh" {
		t.Errorf("temp files after ListBlobs: %v; want [put-fresh]", got)
	}
}

// A put whose context ends during the copy fails with the context's
// error, leaving no blob and no temp file; so does a failing reader.
func TestBlobPutCanceledMidway(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &patternReader{left: 64 << 20, onRead: func(done int64) {
		if done >= 4<<20 {
			cancel()
		}
	}}
	if _, err := s.PutBlob(ctx, r); !errors.Is(err, context.Canceled) {
		t.Fatalf("PutBlob canceled midway: %v; want context.Canceled", err)
	}
	if r.done >= 64<<20 {
		t.Errorf("the put read all %d bytes after its context ended", r.done)
	}
	boom := errors.New("boom")
	_, err := s.PutBlob(context.Background(), io.MultiReader(&patternReader{left: 1 << 20}, &errReader{boom}))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "put blob") {
		t.Fatalf("PutBlob with a failing reader: %v; want boom, wrapped", err)
	}
	if n := len(listBlobs(t, s)); n != 0 {
		t.Errorf("%d blobs stored", n)
	}
	if tmp := tempFiles(t, dir); len(tmp) != 0 {
		t.Errorf("temp files left: %v", tmp)
	}
}

type errReader struct{ err error }

func (e *errReader) Read([]byte) (int, error) { return 0, e.err }

// patternBlock is the content patternReader repeats.
var patternBlock = func() []byte {
	b := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
	}
	return b
}()

// patternReader yields left bytes of patternBlock repeated, the first 8
// bytes replaced by seed, in reads of up to 64 KiB, allocating nothing.
// onRead, if set, is called after each read with the bytes yielded so far.
type patternReader struct {
	seed   uint64
	left   int64
	done   int64
	onRead func(done int64)
}

func (p *patternReader) Read(b []byte) (int, error) {
	if p.left == 0 {
		return 0, io.EOF
	}
	off := int(p.done % int64(len(patternBlock)))
	n := copy(b[:min(int64(len(b)), p.left, 64<<10)], patternBlock[off:])
	if p.done < 8 {
		var s [8]byte
		binary.LittleEndian.PutUint64(s[:], p.seed)
		copy(b[:n], s[p.done:])
	}
	p.left -= int64(n)
	p.done += int64(n)
	if p.onRead != nil {
		p.onRead(p.done)
	}
	return n, nil
}

// A 256 MiB put runs in bounded memory: what it allocates does not grow
// with the blob.
func TestBlobPutBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 256 MiB")
	}
	dir := t.TempDir()
	s := openStore(t, dir)
	mustPutBlob(t, s, []byte("warm up the pools"))
	const size = 256 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	info, err := s.PutBlob(context.Background(), &patternReader{seed: 42, left: size})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != size {
		t.Fatalf("stored %d bytes, want %d", info.Size, size)
	}
	grew := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d MiB put allocated %d KiB; heap in use %d → %d KiB", size>>20, grew>>10, before.HeapInuse>>10, after.HeapInuse>>10)
	if grew > 32<<20 {
		t.Errorf("a %d MiB put allocated %d MiB; want < 32 MiB", size>>20, grew>>20)
	}
	if fi, err := os.Stat(blobPath(dir, info.Digest)); err != nil || fi.Size() != size {
		t.Errorf("blob file: %v, %v", fi, err)
	}
}

// putBlobUntilKilled (helper role "putblob-killed") puts a 1 GiB blob
// slowly: it prints "started" once 8 MiB are in, and waits for its kill.
func putBlobUntilKilled(s *fsstore.Store) int {
	var once sync.Once
	r := &patternReader{seed: 7, left: 1 << 30, onRead: func(done int64) {
		if done >= 8<<20 {
			once.Do(func() { fmt.Println("started") })
			time.Sleep(time.Millisecond)
		}
	}}
	_, err := s.PutBlob(context.Background(), r)
	fmt.Fprintln(os.Stderr, "helper: put ended before its kill:", err)
	return 1
}

// A process killed (SIGKILL) in the middle of a large put leaves no blob,
// only a temp file, which a listing never takes for a blob and removes
// once it is an hour old; the content can be put again.
func TestBlobPutKilled(t *testing.T) {
	dir := t.TempDir()
	openStore(t, dir).Close() // create the store
	cmd := helperCmd(t, "putblob-killed", dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(out, 8))
		line <- string(b)
	}()
	select {
	case l := <-line:
		if l != "started\n" {
			t.Fatalf("helper said %q", l)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("helper did not start its put")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	s := openStore(t, dir)
	if got := listBlobs(t, s); len(got) != 0 {
		t.Errorf("after a killed put, ListBlobs = %v; want none", got)
	}
	tmp := tempFiles(t, dir)
	if len(tmp) != 1 {
		t.Fatalf("temp files after a killed put: %v; want the partial one", tmp)
	}
	fi, err := os.Stat(filepath.Join(dir, "blobs", "tmp", tmp[0]))
	if err != nil || fi.Size() < 7<<20 || fi.Size() >= 1<<30 { // 8 MiB read, all but the last chunk written
		t.Fatalf("the partial temp file: %v, %v", fi, err)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "blobs"))
	if err != nil || len(entries) != 1 || entries[0].Name() != "tmp" {
		t.Errorf("blobs/ holds %v (%v); want only tmp/", entries, err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "blobs", "tmp", tmp[0]), old, old); err != nil {
		t.Fatal(err)
	}
	listBlobs(t, s)
	if tmp := tempFiles(t, dir); len(tmp) != 0 {
		t.Errorf("the crashed put's temp file, two hours old, outlived a listing: %v", tmp)
	}
	// The same content, put in full, is stored.
	info, err := s.PutBlob(context.Background(), &patternReader{seed: 7, left: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if got := listBlobs(t, s); len(got) != 1 || got[info.Digest].Size != 32<<20 {
		t.Errorf("ListBlobs = %v", got)
	}
}

// putSameBlob (helper role "putblob-same") puts the same 3 MiB blob 20
// times.
func putSameBlob(s *fsstore.Store) int {
	for range 20 {
		if _, err := s.PutBlob(context.Background(), &patternReader{seed: 99, left: 3 << 20}); err != nil {
			fmt.Fprintln(os.Stderr, "helper put:", err)
			return 1
		}
	}
	return 0
}

// Four processes putting the same content at once all succeed and leave
// one intact blob.
func TestBlobCrossProcessPuts(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			cmd := helperCmd(t, "putblob-same", dir)
			if out, err := cmd.Output(); err != nil {
				errs[i] = fmt.Errorf("helper: %v %s", err, out)
			}
		})
	}
	// Meanwhile, read it whenever it is there: never damaged.
	stop := make(chan struct{})
	readErr := make(chan error, 1)
	h := sha256.New()
	io.Copy(h, &patternReader{seed: 99, left: 3 << 20})
	var d storage.Digest
	h.Sum(d[:0])
	go func() {
		defer close(readErr)
		for {
			select {
			case <-stop:
				return
			default:
			}
			r, err := s.GetBlob(context.Background(), d)
			var nf *storage.BlobNotFoundError
			if errors.As(err, &nf) {
				time.Sleep(time.Millisecond)
				continue
			}
			if err == nil {
				_, err = io.Copy(io.Discard, r)
				r.Close()
			}
			if err != nil {
				readErr <- err
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	if err := <-readErr; err != nil {
		t.Errorf("reading during the puts: %v", err)
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	got := listBlobs(t, s)
	if len(got) != 1 || got[d].Size != 3<<20 {
		t.Fatalf("ListBlobs = %v; want one blob %s", got, d)
	}
	if _, err := readAllBlob(s, d); err != nil {
		t.Fatal(err)
	}
	if tmp := tempFiles(t, dir); len(tmp) != 0 {
		t.Errorf("temp files left: %v", tmp)
	}
}

// BenchmarkPutBlob measures PutBlob of new content (MB/s), against a
// baseline in the same run: the least any durable put costs, a write of
// the same bytes in the same chunks to a new file, its SHA-256, and an
// fsync of the file and its directory.
func BenchmarkPutBlob(b *testing.B) {
	for _, size := range []int64{1 << 20, 64 << 20} {
		name := fmt.Sprintf("%dMiB", size>>20)
		b.Run("put/"+name, func(b *testing.B) {
			s, err := fsstore.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			b.SetBytes(size)
			var seed uint64
			for b.Loop() {
				seed++
				info, err := s.PutBlob(ctx, &patternReader{seed: seed, left: size})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := s.DeleteBlob(ctx, info.Digest); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
		b.Run("baseline/"+name, func(b *testing.B) {
			dir := b.TempDir()
			buf := make([]byte, 256<<10)
			b.SetBytes(size)
			var seed uint64
			for b.Loop() {
				seed++
				path := filepath.Join(dir, "f")
				if err := writeHashSync(path, dir, &patternReader{seed: seed, left: size}, buf); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				os.Remove(path)
				b.StartTimer()
			}
		})
	}
}

func writeHashSync(path, dir string, r io.Reader, buf []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	for {
		n, err := io.ReadFull(r, buf)
		h.Write(buf[:n])
		if _, werr := f.Write(buf[:n]); werr != nil {
			return werr
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return err
		}
	}
	h.Sum(nil)
	if err := f.Sync(); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Errors name the path concerned: here a file where blobs/tmp/ should be.
func TestBlobErrorsNameThePath(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	if err := os.Mkdir(filepath.Join(dir, "blobs"), 0o700); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "blobs", "tmp")
	if err := os.WriteFile(tmp, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := s.PutBlob(context.Background(), strings.NewReader("x"))
	var pe *fs.PathError
	if err == nil || !strings.HasPrefix(err.Error(), "put blob: ") || !errors.As(err, &pe) || pe.Path != tmp {
		t.Fatalf("PutBlob with a file in the place of blobs/tmp: %v; want a wrapped *fs.PathError naming %s", err, tmp)
	}
	t.Log(err)
}

// TouchBlob, DeleteBlobs and GetBlobRange never follow a symbolic link
// planted under a digest's name or in the place of a blobs/<xx>/
// directory: touch and range are corrupt and change nothing, DeleteBlobs
// removes the link itself (as DeleteBlob does), never its target, and
// refuses a directory.
func TestBlobOpsOnPlantedEntries(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	ctx := context.Background()
	mustPutBlob(t, s, []byte("something else, so that blobs/ exists"))

	outside := filepath.Join(t.TempDir(), "target")
	good := []byte("the content the link points at, intact")
	if err := os.WriteFile(outside, good, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	if err := os.Chtimes(outside, old, old); err != nil {
		t.Fatal(err)
	}
	linked := storage.DigestOf(good)
	path := blobPath(dir, linked)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, path); err != nil {
		t.Fatal(err)
	}
	var ce *storage.CorruptError
	if _, err := s.TouchBlob(ctx, linked); !errors.As(err, &ce) || ce.Path != path {
		t.Errorf("TouchBlob of a planted link: %v; want *CorruptError naming %s", err, path)
	}
	if _, err := s.GetBlobRange(ctx, linked, 0, 5); !errors.As(err, &ce) || ce.Path != path {
		t.Errorf("GetBlobRange of a planted link: %v; want *CorruptError naming %s", err, path)
	}
	if fi, err := os.Stat(outside); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("the link's target after TouchBlob: %v, %v; want its mtime %v kept", fi, err, old)
	}
	subdir := storage.DigestOf([]byte("dir"))
	if err := os.MkdirAll(blobPath(dir, subdir), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteBlobs(ctx, []storage.Digest{subdir}, time.Time{}); !errors.As(err, &ce) || ce.Path != blobPath(dir, subdir) {
		t.Errorf("DeleteBlobs of a directory in a blob's place: %v; want *CorruptError naming it", err)
	}
	if fi, err := os.Lstat(blobPath(dir, subdir)); err != nil || !fi.IsDir() {
		t.Errorf("the directory in a blob's place after DeleteBlobs: %v, %v", fi, err)
	}
	removed, err := s.DeleteBlobs(ctx, []storage.Digest{linked}, time.Time{})
	if err != nil || len(removed) != 1 || removed[0].Digest != linked {
		t.Errorf("DeleteBlobs of a planted link = %v, %v; want it removed", removed, err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the planted link after DeleteBlobs: %v", err)
	}
	if b, err := os.ReadFile(outside); err != nil || !bytes.Equal(b, good) {
		t.Errorf("the link's target after DeleteBlobs: %q, %v", b, err)
	}

	// A symlinked blobs/<xx>/ directory.
	elsewhere := t.TempDir()
	hidden := []byte("hidden behind a symlinked directory")
	hd := storage.DigestOf(hidden)
	behind := filepath.Join(elsewhere, hd.String())
	if err := os.WriteFile(behind, hidden, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(behind, old, old); err != nil {
		t.Fatal(err)
	}
	xx := filepath.Dir(blobPath(dir, hd))
	if err := os.RemoveAll(xx); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, xx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TouchBlob(ctx, hd); !errors.As(err, &ce) || ce.Path != xx {
		t.Errorf("TouchBlob through a symlinked directory: %v; want *CorruptError naming %s", err, xx)
	}
	if _, err := s.GetBlobRange(ctx, hd, 0, 5); !errors.As(err, &ce) || ce.Path != xx {
		t.Errorf("GetBlobRange through a symlinked directory: %v; want *CorruptError naming %s", err, xx)
	}
	if removed, err := s.DeleteBlobs(ctx, []storage.Digest{hd}, time.Time{}); !errors.As(err, &ce) || len(removed) != 0 {
		t.Errorf("DeleteBlobs through a symlinked directory = %v, %v; want *CorruptError", removed, err)
	}
	if fi, err := os.Stat(behind); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("the file behind the symlinked directory: %v, %v; want it there, untouched", fi, err)
	}
}

// DeleteBlobs goes by each file's mtime: of blobs last put two days ago
// and one put now, a cutoff of an hour ago removes the old ones, returned
// with their times; TouchBlob makes an old blob new (its mtime now), and
// the cutoff spares it.
func TestBlobDeleteBlobsByMtime(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	ctx := context.Background()
	old := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	var ds []storage.Digest
	for i := range 4 {
		info := mustPutBlob(t, s, []byte(fmt.Sprintf("blob %d", i)))
		ds = append(ds, info.Digest)
		if i < 3 {
			if err := os.Chtimes(blobPath(dir, info.Digest), old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	touched, err := s.TouchBlob(ctx, ds[2])
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(blobPath(dir, ds[2]))
	if err != nil || time.Since(fi.ModTime()) > time.Hour || !fi.ModTime().Equal(touched.Modified) {
		t.Fatalf("TouchBlob = %v; the file's mtime %v, %v; want both now", touched.Modified, fi.ModTime(), err)
	}
	removed, err := s.DeleteBlobs(ctx, ds, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	got := map[storage.Digest]time.Time{}
	for _, in := range removed {
		got[in.Digest] = in.Modified
	}
	if len(removed) != 2 || !got[ds[0]].Equal(old) || !got[ds[1]].Equal(old) {
		t.Errorf("DeleteBlobs removed %v; want blobs 0 and 1, modified %v", removed, old)
	}
	left := listBlobs(t, s)
	if _, ok := left[ds[2]]; !ok || len(left) != 2 {
		t.Errorf("left after DeleteBlobs: %v; want the touched blob and the new one", left)
	}
}

// BenchmarkDeleteBlobs measures gc's deletion of 5,000 unreferenced blobs
// of 2 KiB: DeleteBlobs of all of them (bulk-ms), against the baseline of
// DeleteBlob of each in turn (onebyone-ms), on stores of 5,000 such
// blobs made anew for each (not timed), in the same run. ratio is
// onebyone-ms over bulk-ms. Nothing is asserted about the times.
func BenchmarkDeleteBlobs(b *testing.B) {
	const n = 5000
	s, err := fsstore.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var bulk, single time.Duration
	var round uint64
	for b.Loop() {
		round++
		ds := putBenchBlobs(b, s, n, round)
		start := time.Now()
		removed, err := s.DeleteBlobs(ctx, ds, time.Time{})
		bulk += time.Since(start)
		if err != nil || len(removed) != n {
			b.Fatalf("DeleteBlobs removed %d of %d, %v", len(removed), n, err)
		}
		round++
		ds = putBenchBlobs(b, s, n, round)
		start = time.Now()
		for _, d := range ds {
			if err := s.DeleteBlob(ctx, d); err != nil {
				b.Fatal(err)
			}
		}
		single += time.Since(start)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(b.N) / float64(time.Millisecond) }
	b.ReportMetric(ms(bulk), "bulk-ms")
	b.ReportMetric(ms(single), "onebyone-ms")
	b.ReportMetric(float64(single)/float64(bulk), "ratio")
}

// BenchmarkListBlobs measures ListBlobs over 5,000 blobs of 2 KiB (gc
// lists them before it deletes any).
func BenchmarkListBlobs(b *testing.B) {
	const n = 5000
	s, err := fsstore.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	putBenchBlobs(b, s, n, 1)
	ctx := context.Background()
	for b.Loop() {
		got := 0
		if err := s.ListBlobs(ctx, func(storage.BlobInfo) error { got++; return nil }); err != nil || got != n {
			b.Fatalf("listed %d of %d, %v", got, n, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(time.Millisecond), "ms")
}

// putBenchBlobs puts n distinct blobs of 2 KiB (their content depends on
// round), 16 at a time, and returns their digests.
func putBenchBlobs(b *testing.B, s *fsstore.Store, n int, round uint64) []storage.Digest {
	b.Helper()
	ds := make([]storage.Digest, n)
	errs := make([]error, 16)
	var wg sync.WaitGroup
	for w := range errs {
		wg.Go(func() {
			buf := make([]byte, 2048)
			for i := w; i < n; i += len(errs) {
				binary.LittleEndian.PutUint64(buf, round)
				binary.LittleEndian.PutUint64(buf[8:], uint64(i))
				info, err := s.PutBlob(context.Background(), bytes.NewReader(buf))
				if err != nil {
					errs[w] = err
					return
				}
				ds[i] = info.Digest
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	return ds
}
