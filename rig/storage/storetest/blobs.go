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
	{"Touch", testBlobTouch},
	{"TouchAbsent", testBlobTouchAbsent},
	{"DeleteBlobs", testBlobDeleteBlobs},
	{"DeleteBlobsAll", testBlobDeleteBlobsAll},
	{"DeleteBlobsRacingTouch", testBlobDeleteBlobsRacingTouch},
	{"Range", testBlobRange},
	{"RangeErrors", testBlobRangeErrors},
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
		// A range is not verified, but one the content no longer holds
		// is corrupt, whether the store sees it at the open or the read.
		if len(c.bad) < len(data) {
			got, err := readRange(t, b, info.Digest, int64(len(data))-1000, 1000)
			if !errors.As(err, &ce) {
				t.Errorf("%s: range at the end read as %d bytes, %v; want *CorruptError", c.name, len(got), err)
			}
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
	if _, err := b.TouchBlob(ctx, info.Digest); !errors.Is(err, context.Canceled) {
		t.Errorf("TouchBlob: %v", err)
	}
	if _, err := b.DeleteBlobs(ctx, []storage.Digest{info.Digest}, time.Time{}); !errors.Is(err, context.Canceled) {
		t.Errorf("DeleteBlobs: %v", err)
	}
	if _, err := b.GetBlobRange(ctx, info.Digest, 0, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("GetBlobRange: %v", err)
	}
	if _, err := b.StatBlob(t.Context(), info.Digest); err != nil {
		t.Errorf("the blob after methods with a done context: %v", err)
	}
}

// statBlob is StatBlob that fails the test on an error.
func statBlob(t *testing.T, b storage.BlobStore, d storage.Digest) storage.BlobInfo {
	t.Helper()
	st, err := b.StatBlob(t.Context(), d)
	if err != nil {
		t.Fatalf("StatBlob(%s): %v", d, err)
	}
	return st
}

// touchUntilAfter touches blob d until StatBlob reports it modified at or
// after at (a store's clock may tick coarsely: a few milliseconds), for
// a second at most, and returns what the last TouchBlob returned.
func touchUntilAfter(t *testing.T, b storage.BlobStore, d storage.Digest, at time.Time) storage.BlobInfo {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		touched, err := b.TouchBlob(t.Context(), d)
		if err != nil {
			t.Fatalf("TouchBlob(%s): %v", d, err)
		}
		if st := statBlob(t, b, d); !st.Modified.Before(at) {
			return touched
		}
		if time.Now().After(deadline) {
			t.Fatalf("TouchBlob(%s) for a second: StatBlob still says modified before %v", d, at)
		}
		time.Sleep(time.Millisecond)
	}
}

// TouchBlob renews a blob's time, as putting it again does, without its
// content: StatBlob and ListBlobs see the new time, the blob is intact,
// and the time TouchBlob returns is not before the put's.
func testBlobTouch(t *testing.T, s storage.Store) {
	b := blobs(t, s)
	data := randomBytes(5000, 20)
	put := putBlob(t, b, data)
	before := statBlob(t, b, put.Digest)
	deadline := time.Now().Add(time.Second)
	for {
		touched, err := b.TouchBlob(t.Context(), put.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if touched.Digest != put.Digest || touched.Size != put.Size || touched.Modified.Before(put.Modified) {
			t.Fatalf("TouchBlob = %s, %d bytes, %v; want %s, %d bytes, not before the put's %v",
				touched.Digest, touched.Size, touched.Modified, put.Digest, put.Size, put.Modified)
		}
		if statBlob(t, b, put.Digest).Modified.After(before.Modified) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("touched for a second, StatBlob still says %v, the time of the put", before.Modified)
		}
		time.Sleep(time.Millisecond) // a store's clock may tick coarsely
	}
	after := statBlob(t, b, put.Digest)
	listed := false
	if err := b.ListBlobs(t.Context(), func(in storage.BlobInfo) error {
		if in.Digest == put.Digest {
			listed = true
			if !in.Modified.After(before.Modified) {
				t.Errorf("ListBlobs after TouchBlob: modified %v, the time of the put; want %v", in.Modified, after.Modified)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !listed {
		t.Error("a touched blob is not listed")
	}
	if got, err := readBlob(t, b, put.Digest); err != nil || !bytes.Equal(got, data) {
		t.Errorf("a touched blob reads back as %d bytes, %v", len(got), err)
	}
}

// TouchBlob of an absent blob is *BlobNotFoundError and creates nothing,
// also where the blob was deleted.
func testBlobTouchAbsent(t *testing.T, s storage.Store) {
	b := blobs(t, s)
	never := storage.DigestOf([]byte("never put"))
	gone := putBlob(t, b, []byte("put, then deleted")).Digest
	if err := b.DeleteBlob(t.Context(), gone); err != nil {
		t.Fatal(err)
	}
	for _, d := range []storage.Digest{never, gone} {
		var nf *storage.BlobNotFoundError
		if _, err := b.TouchBlob(t.Context(), d); !errors.As(err, &nf) || nf.Digest != d {
			t.Errorf("TouchBlob of an absent blob: %v; want *BlobNotFoundError naming it", err)
		}
		if _, err := b.StatBlob(t.Context(), d); !errors.As(err, &nf) {
			t.Errorf("StatBlob after TouchBlob of an absent blob: %v; want *BlobNotFoundError", err)
		}
	}
	n := 0
	if err := b.ListBlobs(t.Context(), func(storage.BlobInfo) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d blobs listed after touching absent ones, want none", n)
	}
}

// blobSet is the digests of infos with their sizes; it fails the test on
// a digest returned twice.
func blobSet(t *testing.T, what string, infos []storage.BlobInfo) map[storage.Digest]int64 {
	t.Helper()
	set := map[storage.Digest]int64{}
	for _, in := range infos {
		if _, dup := set[in.Digest]; dup {
			t.Errorf("%s: %s returned twice", what, in.Digest)
		}
		set[in.Digest] = in.Size
	}
	return set
}

// DeleteBlobs removes those of the blobs named that were last modified
// before the cutoff and returns exactly them with their sizes: a blob
// touched or put again since the cutoff survives, as one put after it
// does; absent and repeated digests are no error.
func testBlobDeleteBlobs(t *testing.T, s storage.Store) {
	b := blobs(t, s)
	var old []storage.BlobInfo
	var cutoff time.Time
	for i := range 4 {
		info := putBlob(t, b, randomBytes(1000+i, uint64(30+i)))
		old = append(old, info)
		if m := statBlob(t, b, info.Digest).Modified; m.After(cutoff) {
			cutoff = m
		}
	}
	cutoff = cutoff.Add(time.Nanosecond) // the four are before it
	// After the cutoff: old[2] touched, old[3] put again, a new blob put
	// (and touched, should the store's clock not have moved since).
	touchUntilAfter(t, b, old[2].Digest, cutoff)
	putBlob(t, b, randomBytes(1003, 33))
	for statBlob(t, b, old[3].Digest).Modified.Before(cutoff) {
		time.Sleep(time.Millisecond)
		putBlob(t, b, randomBytes(1003, 33))
	}
	fresh := putBlob(t, b, []byte("put after the cutoff"))
	touchUntilAfter(t, b, fresh.Digest, cutoff)

	absent := storage.DigestOf([]byte("never put"))
	ds := []storage.Digest{old[0].Digest, absent, old[1].Digest, old[2].Digest, old[3].Digest, fresh.Digest, old[0].Digest}
	removed, err := b.DeleteBlobs(t.Context(), ds, cutoff)
	if err != nil {
		t.Fatalf("DeleteBlobs: %v", err)
	}
	got := blobSet(t, "DeleteBlobs", removed)
	want := map[storage.Digest]int64{old[0].Digest: old[0].Size, old[1].Digest: old[1].Size}
	if len(got) != len(want) || len(removed) != len(want) {
		t.Errorf("DeleteBlobs removed %d blobs, want 2 (the ones before the cutoff)", len(removed))
	}
	for d, n := range want {
		if got[d] != n {
			t.Errorf("DeleteBlobs: %s returned with %d bytes, want %d", d, got[d], n)
		}
	}
	var nf *storage.BlobNotFoundError
	for _, in := range old[:2] {
		if _, err := b.StatBlob(t.Context(), in.Digest); !errors.As(err, &nf) {
			t.Errorf("a blob older than the cutoff after DeleteBlobs: %v; want *BlobNotFoundError", err)
		}
	}
	for i, d := range []storage.Digest{old[2].Digest, old[3].Digest, fresh.Digest} {
		if _, err := b.StatBlob(t.Context(), d); err != nil {
			t.Errorf("blob %d, renewed or put after the cutoff, after DeleteBlobs: %v", i, err)
		}
	}
	if got, err := readBlob(t, b, old[2].Digest); err != nil || !bytes.Equal(got, randomBytes(1002, 32)) {
		t.Errorf("a blob DeleteBlobs spared reads back as %d bytes, %v", len(got), err)
	}
	// Nothing named: nothing done.
	if removed, err := b.DeleteBlobs(t.Context(), nil, time.Time{}); err != nil || len(removed) != 0 {
		t.Errorf("DeleteBlobs of no blob = %d removed, %v", len(removed), err)
	}
}

// DeleteBlobs with a zero cutoff removes every blob named, however recent,
// and nothing else.
func testBlobDeleteBlobsAll(t *testing.T, s storage.Store) {
	b := blobs(t, s)
	want := map[storage.Digest]int64{}
	var ds []storage.Digest
	for i := range 40 { // across many of a directory store's subdirectories
		info := putBlob(t, b, randomBytes(i*50, uint64(40+i)))
		want[info.Digest] = info.Size
		ds = append(ds, info.Digest)
	}
	keep := putBlob(t, b, []byte("not named"))
	ds = append(ds, storage.DigestOf([]byte("never put")))
	removed, err := b.DeleteBlobs(t.Context(), ds, time.Time{})
	if err != nil {
		t.Fatalf("DeleteBlobs: %v", err)
	}
	got := blobSet(t, "DeleteBlobs", removed)
	if len(got) != len(want) {
		t.Errorf("DeleteBlobs with a zero cutoff removed %d blobs, want %d", len(got), len(want))
	}
	for d, n := range want {
		if got[d] != n {
			t.Errorf("DeleteBlobs: %s returned with %d bytes, want %d", d, got[d], n)
		}
	}
	left := 0
	if err := b.ListBlobs(t.Context(), func(in storage.BlobInfo) error {
		left++
		if in.Digest != keep.Digest {
			t.Errorf("%s listed after DeleteBlobs removed it", in.Digest)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if left != 1 {
		t.Errorf("%d blobs left, want the one not named", left)
	}
	// Again: all absent now.
	if removed, err := b.DeleteBlobs(t.Context(), ds, time.Time{}); err != nil || len(removed) != 0 {
		t.Errorf("DeleteBlobs of deleted blobs = %d removed, %v; want none, no error", len(removed), err)
	}
}

// A TouchBlob and a DeleteBlobs at once leave the blob either removed
// (and returned as such) or there and whole, never named with its
// content gone.
func testBlobDeleteBlobsRacingTouch(t *testing.T, s storage.Store) {
	b := blobs(t, s)
	for i := range 20 {
		data := randomBytes(20_000+i, uint64(60+i))
		info := putBlob(t, b, data)
		cutoff := statBlob(t, b, info.Digest).Modified.Add(time.Nanosecond)
		if i%2 == 0 {
			cutoff = time.Time{}
		}
		var removed []storage.BlobInfo
		var delErr, touchErr error
		var wg sync.WaitGroup
		wg.Go(func() { removed, delErr = b.DeleteBlobs(t.Context(), []storage.Digest{info.Digest}, cutoff) })
		wg.Go(func() { _, touchErr = b.TouchBlob(t.Context(), info.Digest) })
		wg.Wait()
		var nf *storage.BlobNotFoundError
		if delErr != nil || touchErr != nil && !errors.As(touchErr, &nf) {
			t.Fatalf("round %d: DeleteBlobs: %v; TouchBlob: %v", i, delErr, touchErr)
		}
		got, err := readBlob(t, b, info.Digest)
		switch {
		case len(removed) > 1 || len(removed) == 1 && removed[0].Digest != info.Digest:
			t.Fatalf("round %d: DeleteBlobs of one blob returned %v", i, removed)
		case len(removed) == 1 && !errors.As(err, &nf):
			t.Fatalf("round %d: DeleteBlobs says it removed the blob, which reads as %d bytes, %v", i, len(got), err)
		case len(removed) == 0 && (err != nil || !bytes.Equal(got, data)):
			t.Fatalf("round %d: DeleteBlobs says it kept the blob, which reads as %d bytes, %v", i, len(got), err)
		}
		if _, err := b.DeleteBlobs(t.Context(), []storage.Digest{info.Digest}, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
}

// readRange reads blob d's range to its end.
func readRange(t *testing.T, b storage.BlobStore, d storage.Digest, offset, length int64) ([]byte, error) {
	t.Helper()
	r, err := b.GetBlobRange(t.Context(), d, offset, length)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// rangeChunk is the chunk size of natsstore's blobs (128 KiB): the ranges
// below start, end and cross at its multiples.
const rangeChunk = 128 << 10

// GetBlobRange yields exactly the bytes of the range: at the start, in the
// middle, at the end, empty, within one chunk of a chunked store, across
// one or several chunk boundaries, aligned on them.
func testBlobRange(t *testing.T, s storage.Store) {
	b := blobs(t, s)
	data := randomBytes(3*rangeChunk+1000, 50)
	info := putBlob(t, b, data)
	size := int64(len(data))
	for _, c := range []struct{ off, n int64 }{
		{0, 0}, {0, 100}, {0, size}, {1000, 5000}, {size - 7, 7}, {size, 0}, {1, size - 1},
		{rangeChunk - 10, 20}, {rangeChunk, rangeChunk}, {rangeChunk, 1}, {rangeChunk - 1, 1},
		{2 * rangeChunk, 0}, {100, 2*rangeChunk + 50}, {2*rangeChunk + 5, size - 2*rangeChunk - 5},
		{3 * rangeChunk, 1000}, {3*rangeChunk - 1, 2},
	} {
		got, err := readRange(t, b, info.Digest, c.off, c.n)
		if err != nil || !bytes.Equal(got, data[c.off:c.off+c.n]) {
			t.Errorf("GetBlobRange(%d, %d) = %d bytes (equal: %v), %v; want the %d bytes there",
				c.off, c.n, len(got), bytes.Equal(got, data[c.off:c.off+c.n]), err, c.n)
		}
	}
	// Read in small pieces, past the end of a range.
	r, err := b.GetBlobRange(t.Context(), info.Digest, rangeChunk-3, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	buf := make([]byte, 3)
	for {
		n, err := r.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	if want := data[rangeChunk-3 : rangeChunk+7]; !bytes.Equal(got, want) {
		t.Errorf("GetBlobRange read 3 bytes at a time = %x, want %x", got, want)
	}
	// A blob put from a reader that yields a little at a time (a pipe, as
	// a checkpoint's pack is put): its ranges are the same bytes.
	pieces := randomBytes(2*rangeChunk+777, 52)
	pr, pw := io.Pipe()
	go func() {
		for rest := pieces; len(rest) > 0; rest = rest[min(len(rest), 1000):] {
			pw.Write(rest[:min(len(rest), 1000)])
		}
		pw.Close()
	}()
	piecewise, err := b.PutBlob(t.Context(), pr)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ off, n int64 }{{0, 10}, {rangeChunk - 5, 10}, {rangeChunk + 999, 4000}, {int64(len(pieces)) - 3, 3}} {
		got, err := readRange(t, b, piecewise.Digest, c.off, c.n)
		if err != nil || !bytes.Equal(got, pieces[c.off:c.off+c.n]) {
			t.Errorf("GetBlobRange(%d, %d) of a blob put piecewise = %d bytes, %v; want the %d bytes there", c.off, c.n, len(got), err, c.n)
		}
	}
	// The empty blob has an empty range.
	empty := putBlob(t, b, nil)
	if got, err := readRange(t, b, empty.Digest, 0, 0); err != nil || len(got) != 0 {
		t.Errorf("GetBlobRange(0, 0) of the empty blob = %d bytes, %v", len(got), err)
	}
}

// GetBlobRange of a range past the blob's end is a *CorruptError, of a
// negative offset or length an error, of an absent blob
// *BlobNotFoundError.
func testBlobRangeErrors(t *testing.T, s storage.Store) {
	b := blobs(t, s)
	data := randomBytes(rangeChunk+10, 51)
	info := putBlob(t, b, data)
	size := int64(len(data))
	for _, c := range []struct{ off, n int64 }{
		{size - 5, 6}, {size + 1, 0}, {0, size + 1}, {rangeChunk, rangeChunk}, {1 << 62, 1 << 62}, {size, 1},
	} {
		_, err := readRange(t, b, info.Digest, c.off, c.n)
		var ce *storage.CorruptError
		if !errors.As(err, &ce) {
			t.Errorf("GetBlobRange(%d, %d) of a %d-byte blob: %v; want *CorruptError", c.off, c.n, size, err)
		}
	}
	for _, c := range []struct{ off, n int64 }{{-1, 5}, {0, -1}, {-5, -5}} {
		if _, err := readRange(t, b, info.Digest, c.off, c.n); err == nil {
			t.Errorf("GetBlobRange(%d, %d): no error", c.off, c.n)
		}
	}
	var nf *storage.BlobNotFoundError
	absent := storage.DigestOf([]byte("never put"))
	if _, err := b.GetBlobRange(t.Context(), absent, 0, 0); !errors.As(err, &nf) || nf.Digest != absent {
		t.Errorf("GetBlobRange of an absent blob: %v; want *BlobNotFoundError", err)
	}
	if _, err := b.GetBlobRange(t.Context(), absent, 0, 10); !errors.As(err, &nf) {
		t.Errorf("GetBlobRange of an absent blob: %v; want *BlobNotFoundError", err)
	}
}
