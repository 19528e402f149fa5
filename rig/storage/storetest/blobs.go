package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"looprig/rig/storage"
)

// BlobDamager is implemented by a store under test (or a wrapper its test
// passes to Run) that can replace a stored blob's content under its
// digest, as a disk error would; the suite then checks that readers see
// the damage. It reports whether the blob was there.
type BlobDamager interface {
	DamageBlob(d storage.Digest, data []byte) bool
}

var blobCases = []testCase{
	{"PutGet", testBlobPutGet},
	{"Empty", testBlobEmpty},
	{"Streamed", testBlobStreamed},
	{"PutAgain", testBlobPutAgain},
	{"Absent", testBlobAbsent},
	{"Delete", testBlobDelete},
	{"List", testBlobList},
	{"ReaderError", testBlobReaderError},
	{"Concurrent", testBlobConcurrent},
	{"Damaged", testBlobDamaged},
	{"DoneContext", testBlobDoneContext},
}

// blobs returns s's blobs.
func blobs(_ *testing.T, s storage.Store) storage.BlobStore { return s }

func putBlob(t *testing.T, b storage.BlobStore, data []byte) storage.BlobInfo {
	t.Helper()
	info, err := b.PutBlob(t.Context(), bytes.NewReader(data))
	if err != nil {
		t.Fatalf("PutBlob(%d bytes): %v", len(data), err)
	}
	if want := storage.DigestOf(data); info.Digest != want || info.Size != int64(len(data)) {
		t.Fatalf("PutBlob(%d bytes) = %s, %d bytes; want %s", len(data), info.Digest, info.Size, want)
	}
	return info
}

// readBlob reads blob d to its end.
func readBlob(t *testing.T, b storage.BlobStore, d storage.Digest) ([]byte, error) {
	t.Helper()
	r, err := b.GetBlob(t.Context(), d)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func randomBytes(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// What is put comes back, byte for byte, with its size.
func testBlobPutGet(t *testing.T, s storage.Store) {
	b := blobs(t, s)
	for _, data := range [][]byte{[]byte("hello\n"), randomBytes(100_000, 1), bytes.Repeat([]byte{0}, 70_000)} {
		info := putBlob(t, b, data)
		got, err := readBlob(t, b, info.Digest)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("GetBlob after PutBlob of %d bytes: %d bytes, %v", len(data), len(got), err)
		}
		st, err := b.StatBlob(t.Context(), info.Digest)
		if err != nil || st.Digest != info.Digest || st.Size != int64(len(data)) || st.Modified.IsZero() {
			t.Fatalf("StatBlob = %+v, %v; want %d bytes with a time", st, err, len(data))
		}
	}
}

// The empty blob is a blob like any other.
func testBlobEmpty(t *testing.T, s storage.Store) {
	b := blobs(t, s)
	info := putBlob(t, b, nil)
	got, err := readBlob(t, b, info.Digest)
	if err != nil || len(got) != 0 {
		t.Fatalf("empty blob read back as %d bytes, %v", len(got), err)
	}
}

// chunkReader yields n pseudo-random bytes in small reads, without holding
// them, and hashes them as it goes.
type chunkReader struct {
	rng  *rand.Rand
	left int
	h    io.Writer
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), c.left, 4096+c.rng.IntN(8192))
	for i := range p[:n] {
		p[i] = byte(c.rng.Uint32())
	}
	c.h.Write(p[:n])
	c.left -= n
	return n, nil
}

// A blob of several MiB streamed in small reads is stored and read back
// whole (the suite checks the digest; stores bound their memory).
func testBlobStreamed(t *testing.T, s storage.Store) {
	b := blobs(t, s)
	const n = 9<<20 + 12345
	h := sha256.New()
	info, err := b.PutBlob(t.Context(), &chunkReader{rng: rand.New(rand.NewPCG(7, 8)), left: n, h: h})
	if err != nil {
		t.Fatal(err)
	}
	var want storage.Digest
	h.Sum(want[:0])
	if info.Digest != want || info.Size != n {
		t.Fatalf("PutBlob = %s, %d; want %s, %d", info.Digest, info.Size, want, n)
	}
	r, err := b.GetBlob(t.Context(), want)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h2 := sha256.New()
	m, err := io.Copy(h2, r)
	var got storage.Digest
	h2.Sum(got[:0])
	if err != nil || m != n || got != want {
		t.Fatalf("read back %d bytes hashing to %s, %v", m, got, err)
	}
}

// Putting content that is there already succeeds, keeps one blob and
// renews its time.
func testBlobPutAgain(t *testing.T, s storage.Store) {
	b := blobs(t, s)
	data := []byte("the same content")
	first := putBlob(t, b, data)
	st1, err := b.StatBlob(t.Context(), first.Digest)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	putBlob(t, b, data)
	st2, err := b.StatBlob(t.Context(), first.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if !st2.Modified.After(st1.Modified) {
		t.Errorf("put again: Modified %v, was %v; want it renewed", st2.Modified, st1.Modified)
	}
	n := 0
	if err := b.ListBlobs(t.Context(), func(in storage.BlobInfo) error {
		if in.Digest == first.Digest {
			n++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("listed %d times, want once", n)
	}
}

// An absent blob is *BlobNotFoundError for Get and Stat.
func testBlobAbsent(t *testing.T, s storage.Store) {
	b := blobs(t, s)
	d := storage.DigestOf([]byte("never put"))
	var nf *storage.BlobNotFoundError
	if _, err := b.GetBlob(t.Context(), d); !errors.As(err, &nf) || nf.Digest != d {
		t.Errorf("GetBlob of an absent blob: %v; want *BlobNotFoundError", err)
	}
	if _, err := b.StatBlob(t.Context(), d); !errors.As(err, &nf) {
		t.Errorf("StatBlob of an absent blob: %v; want *BlobNotFoundError", err)
	}
}

// A deleted blob is absent; deleting an absent one is no error; a reader
// opened before the delete still reads the content (or fails; it never
// yields other bytes as good).
func testBlobDelete(t *testing.T, s storage.Store) {
	b := blobs(t, s)
	data := randomBytes(50_000, 3)
	info := putBlob(t, b, data)
	open, err := b.GetBlob(t.Context(), info.Digest)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if err := b.DeleteBlob(t.Context(), info.Digest); err != nil {
		t.Fatal(err)
	}
	var nf *storage.BlobNotFoundError
	if _, err := b.GetBlob(t.Context(), info.Digest); !errors.As(err, &nf) {
		t.Errorf("GetBlob after DeleteBlob: %v; want *BlobNotFoundError", err)
	}
	if err := b.DeleteBlob(t.Context(), info.Digest); err != nil {
		t.Errorf("DeleteBlob of an absent blob: %v", err)
	}
	if got, err := io.ReadAll(open); err == nil && !bytes.Equal(got, data) {
		t.Errorf("a reader opened before the delete yielded %d other bytes without an error", len(got))
	}
}

// ListBlobs lists every blob once with its size; an error of fn stops it
// and is returned.
func testBlobList(t *testing.T, s storage.Store) {
	b := blobs(t, s)
	want := map[storage.Digest]int64{}
	for i := range 20 {
		info := putBlob(t, b, randomBytes(i*37, uint64(i)+10))
		want[info.Digest] = info.Size
	}
	got := map[storage.Digest]int64{}
	if err := b.ListBlobs(t.Context(), func(in storage.BlobInfo) error {
		if _, dup := got[in.Digest]; dup {
			t.Errorf("%s listed twice", in.Digest)
		}
		got[in.Digest] = in.Size
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("listed %d blobs, want %d", len(got), len(want))
	}
	for d, n := range want {
		if got[d] != n {
			t.Errorf("%s listed with %d bytes, want %d", d, got[d], n)
		}
	}
	stop := errors.New("enough")
	calls := 0
	if err := b.ListBlobs(t.Context(), func(storage.BlobInfo) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Errorf("ListBlobs with fn failing = %v after %d calls; want fn's error after 1", err, calls)
	}
}

type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// A reader that fails fails the put, wrapped, and stores nothing.
func testBlobReaderError(t *testing.T, s storage.Store) {
	b := blobs(t, s)
	boom := errors.New("disk went away")
	data := randomBytes(200_000, 4)
	if _, err := b.PutBlob(t.Context(), &failingReader{data: data, err: boom}); !errors.Is(err, boom) {
		t.Fatalf("PutBlob with a failing reader: %v; want it wrapped", err)
	}
	n := 0
	b.ListBlobs(t.Context(), func(storage.BlobInfo) error { n++; return nil })
	if n != 0 {
		t.Errorf("%d blobs stored by a failed put", n)
	}
	var nf *storage.BlobNotFoundError
	if _, err := b.StatBlob(t.Context(), storage.DigestOf(data)); !errors.As(err, &nf) {
		t.Errorf("the whole content of a failed put is a blob: %v", err)
	}
}

// Eight writers putting the same content at once all succeed, and one
// intact blob is left.
func testBlobConcurrent(t *testing.T, s storage.Store) {
	b := blobs(t, s)
	data := randomBytes(300_000, 5)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = b.PutBlob(t.Context(), bytes.NewReader(data))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	got, err := readBlob(t, b, storage.DigestOf(data))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("after concurrent puts: %d bytes, %v", len(got), err)
	}
}

// Damaged content is never read as good: the reader fails with a
// *CorruptError wrapping ErrBlobDigest, whether the damage changes the
// bytes, shortens or lengthens them.
func testBlobDamaged(t *testing.T, s storage.Store) {
	b := blobs(t, s)
	dm, ok := s.(BlobDamager)
	if !ok {
		t.Skip("the store under test cannot damage a blob")
	}
	data := randomBytes(40_000, 6)
	for _, c := range []struct {
		name string
		bad  []byte
	}{
		{"flipped", append(bytes.Clone(data[:20_000]), append([]byte{data[20_000] ^ 1}, data[20_001:]...)...)},
		{"short", data[:39_999]},
		{"long", append(bytes.Clone(data), 'x')},
		{"empty", nil},
	} {
		info := putBlob(t, b, data)
		if !dm.DamageBlob(info.Digest, c.bad) {
			t.Fatalf("%s: the blob to damage is not there", c.name)
		}
		got, err := readBlob(t, b, info.Digest)
		var ce *storage.CorruptError
		if !errors.As(err, &ce) || !errors.Is(err, storage.ErrBlobDigest) {
			t.Errorf("%s: read %d bytes, %v; want *CorruptError wrapping ErrBlobDigest", c.name, len(got), err)
		}
		if err := b.DeleteBlob(t.Context(), info.Digest); err != nil {
			t.Fatal(err)
		}
	}
}

// A done context fails every method.
func testBlobDoneContext(t *testing.T, s storage.Store) {
	b := blobs(t, s)
	info := putBlob(t, b, []byte("x"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := b.PutBlob(ctx, bytes.NewReader([]byte("y"))); !errors.Is(err, context.Canceled) {
		t.Errorf("PutBlob: %v", err)
	}
	if _, err := b.GetBlob(ctx, info.Digest); !errors.Is(err, context.Canceled) {
		t.Errorf("GetBlob: %v", err)
	}
	if _, err := b.StatBlob(ctx, info.Digest); !errors.Is(err, context.Canceled) {
		t.Errorf("StatBlob: %v", err)
	}
	if err := b.DeleteBlob(ctx, info.Digest); !errors.Is(err, context.Canceled) {
		t.Errorf("DeleteBlob: %v", err)
	}
	if err := b.ListBlobs(ctx, func(storage.BlobInfo) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("ListBlobs: %v", err)
	}
}
