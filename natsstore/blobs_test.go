package natsstore

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"looprig/rig/storage"
)

// genReader yields n pseudo-random bytes without holding them.
type genReader struct {
	rng  *rand.Rand
	left int64
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.left == 0 {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), g.left))
	for i := range p[:n] {
		p[i] = byte(g.rng.Uint32())
	}
	g.left -= int64(n)
	return n, nil
}

// heapPeak samples the live heap every millisecond until stop is called,
// and returns the highest value seen above the starting one.
func heapPeak() (stop func() uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > base && ms.HeapAlloc-base > peak.Load() {
				peak.Store(ms.HeapAlloc - base)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak.Load()
	}
}

// A 64 MiB blob is put and read back in bounded memory: this process's
// heap grows by well under the blob's size. The server runs in a helper
// process (startServerProcess), so that what it holds does not count.
func TestBlobBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("puts 64 MiB")
	}
	url, kill := startServerProcess(t, t.TempDir(), 0)
	t.Cleanup(kill)
	s := openStore(t, url)
	// Collect often, so that the heap follows what is live rather than
	// the garbage the pacer lets pile up (up to GOGC% more than live).
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	const n = 64 << 20
	const limit = 8 << 20

	h := sha256.New()
	stop := heapPeak()
	info, err := s.PutBlob(t.Context(), io.TeeReader(&genReader{rng: rand.New(rand.NewPCG(1, 2)), left: n}, h))
	peak := stop()
	if err != nil {
		t.Fatal(err)
	}
	var want storage.Digest
	h.Sum(want[:0])
	if info.Digest != want || info.Size != n {
		t.Fatalf("PutBlob = %s, %d bytes; want %s, %d", info.Digest, info.Size, want, n)
	}
	t.Logf("put of %d MiB: heap grew by at most %.1f MiB", n>>20, float64(peak)/(1<<20))
	if peak > limit {
		t.Errorf("put of %d MiB: heap grew by %.1f MiB, want at most %d MiB", n>>20, float64(peak)/(1<<20), limit>>20)
	}

	stop = heapPeak()
	r, err := s.GetBlob(t.Context(), want)
	if err != nil {
		t.Fatal(err)
	}
	m, err := io.Copy(io.Discard, r)
	r.Close()
	peak = stop()
	if err != nil || m != n {
		t.Fatalf("read back %d bytes, %v", m, err)
	}
	t.Logf("get of %d MiB: heap grew by at most %.1f MiB", n>>20, float64(peak)/(1<<20))
	if peak > limit {
		t.Errorf("get of %d MiB: heap grew by %.1f MiB, want at most %d MiB", n>>20, float64(peak)/(1<<20), limit>>20)
	}
}

// What a put that crashed after its upload leaves (a temporary object) is
// no blob: not listed, not found under its digest; a put of the same
// content afterwards makes the blob.
func TestBlobCrashedPutLeavesNoBlob(t *testing.T) {
	s := openStore(t, startServer(t).URL())
	data := []byte("content of a put that crashed")
	d := storage.DigestOf(data)
	if _, err := s.blobs.PutBytes(t.Context(), tmpBlobPrefix+"crashed", data); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := s.ListBlobs(t.Context(), func(storage.BlobInfo) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("ListBlobs listed %d blobs, %v; want none", n, err)
	}
	var nf *storage.BlobNotFoundError
	if _, err := s.StatBlob(t.Context(), d); !errors.As(err, &nf) {
		t.Fatalf("StatBlob: %v; want *BlobNotFoundError", err)
	}
	if info, err := s.PutBlob(t.Context(), bytes.NewReader(data)); err != nil || info.Digest != d {
		t.Fatalf("PutBlob = %v, %v", info, err)
	}
	r, err := s.GetBlob(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("GetBlob read %q, %v", got, err)
	}
}

// putChunked stores data as blob d by hand, in chunks of blobChunkSize
// with a message of another subject between each two (as puts at once
// interleave them), and returns the stream sequences of its chunks.
func putChunked(t *testing.T, s *Store, data []byte) (storage.Digest, []uint64) {
	t.Helper()
	ctx := t.Context()
	d := storage.DigestOf(data)
	id := "handmade" + d.String()[:8]
	var seqs []uint64
	for rest := data; len(rest) > 0; {
		n := min(len(rest), blobChunkSize)
		ack, err := s.js.Publish(ctx, s.blobChunkSubj(id), rest[:n])
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ack.Sequence)
		if _, err := s.js.Publish(ctx, s.blobChunkSubj("other"), []byte("in between")); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	meta := jetstream.ObjectInfo{
		ObjectMeta: jetstream.ObjectMeta{Name: d.String(), Opts: &jetstream.ObjectMetaOptions{ChunkSize: blobChunkSize}},
		Bucket:     s.blobBucket, NUID: id, Size: uint64(len(data)), Chunks: uint32(len(seqs)), Digest: objectDigest(d),
	}
	if err := s.publishBlobMeta(ctx, d.String(), meta, 0); err != nil {
		t.Fatal(err)
	}
	return d, seqs
}

// GetBlobRange reads the chunks of its range and not those before (nor a
// prefetch past it): what the connection receives for a range of 100
// bytes is the one or two chunks that hold it and little more, wherever
// the range is, chunks of other objects between them or not.
func TestBlobRangeReadsOnlyItsChunks(t *testing.T) {
	s := openStore(t, startServer(t).URL())
	data := randomBytes(8*blobChunkSize+500, 70)
	put, err := s.PutBlob(t.Context(), bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	handmade, _ := putChunked(t, s, data[:8*blobChunkSize-1])
	for _, c := range []struct {
		d    storage.Digest
		size int64
	}{{put.Digest, int64(len(data))}, {handmade, 8*blobChunkSize - 1}} {
		for _, off := range []int64{10, blobChunkSize - 50, 3*blobChunkSize + 10, 7 * blobChunkSize, c.size - 100} {
			before := s.nc.Stats().InBytes
			r, err := s.GetBlobRange(t.Context(), c.d, off, 100)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			r.Close()
			received := s.nc.Stats().InBytes - before
			if err != nil || !bytes.Equal(got, data[off:off+100]) {
				t.Fatalf("GetBlobRange(%d, 100) = %d bytes (equal: %v), %v", off, len(got), bytes.Equal(got, data[off:off+100]), err)
			}
			touched := (off+99)/blobChunkSize - off/blobChunkSize + 1
			t.Logf("range of 100 bytes at %d, in %d chunks: received %d bytes", off, touched, received)
			if limit := uint64(touched*blobChunkSize + blobChunkSize/2); received > limit {
				t.Errorf("range of 100 bytes at %d: the connection received %d bytes, want at most %d (%d chunks and some)", off, received, limit, touched)
			}
		}
	}
	// A whole read of the handmade blob: its chunks are those counted.
	r, err := s.GetBlob(t.Context(), handmade)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, data[:8*blobChunkSize-1]) {
		t.Fatalf("GetBlob of the handmade blob: %d bytes, %v", len(got), err)
	}
}

// A chunk missing from a blob makes every range over or after it a
// *storage.CorruptError, never the bytes of the next chunk in its place.
func TestBlobRangeMissingChunk(t *testing.T) {
	s := openStore(t, startServer(t).URL())
	data := randomBytes(4*blobChunkSize, 71)
	d, seqs := putChunked(t, s, data)
	if err := s.blobStream.DeleteMsg(t.Context(), seqs[1]); err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{10, blobChunkSize + 10, 2*blobChunkSize + 10, 3*blobChunkSize + 10} {
		r, err := s.GetBlobRange(t.Context(), d, off, 100)
		if err == nil {
			var got []byte
			got, err = io.ReadAll(r)
			r.Close()
			if err == nil && !bytes.Equal(got, data[off:off+100]) {
				t.Errorf("GetBlobRange(%d, 100) with chunk 2 missing yielded other bytes", off)
				continue
			}
		}
		var ce *storage.CorruptError
		if off >= blobChunkSize && !errors.As(err, &ce) {
			t.Errorf("GetBlobRange(%d, 100) with chunk 2 missing: %v; want *CorruptError", off, err)
		}
	}
}

func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	(&genReader{rng: rand.New(rand.NewPCG(seed, seed+1)), left: int64(n)}).Read(b)
	return b
}
