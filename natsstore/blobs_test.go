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
