package rig

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"testing"

	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

// countingStore counts the blobs put.
type countingStore struct {
	storage.BlobStore
	puts int
}

func (c *countingStore) PutBlob(ctx context.Context, r io.Reader) (storage.BlobInfo, error) {
	c.puts++
	return c.BlobStore.PutBlob(ctx, r)
}

func blobCount(t *testing.T, st storage.BlobStore) int {
	t.Helper()
	n := 0
	if err := st.ListBlobs(context.Background(), func(storage.BlobInfo) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// A transcript the agent appended to stores only its new chunks (the last
// one again) and a manifest, and puts only those; it comes back byte for
// byte.
func TestTranscriptChunksAreShared(t *testing.T) {
	ctx := context.Background()
	st := &countingStore{BlobStore: memstore.New()}
	first := make([]byte, 2*transcriptChunk+100)
	rand.Read(first)
	d1, n1, err := putTranscript(ctx, st, bytes.NewReader(first), nil)
	if err != nil || n1 != int64(len(first)) {
		t.Fatal(n1, err)
	}
	if got := blobCount(t, st); got != 4 { // 3 chunks, 1 manifest
		t.Fatalf("%d blobs after the first transcript, want 4", got)
	}
	second := append(append([]byte(nil), first...), []byte("one more turn\n")...)
	prev, err := loadTranscript(ctx, st, d1)
	if err != nil {
		t.Fatal(err)
	}
	st.puts = 0
	d2, _, err := putTranscript(ctx, st, bytes.NewReader(second), &prev)
	if err != nil {
		t.Fatal(err)
	}
	if st.puts != 2 { // the grown last chunk and the manifest
		t.Errorf("%d blobs put for the grown transcript, want 2: the chunks on record were put again", st.puts)
	}
	if got := blobCount(t, st); got != 6 { // + the grown last chunk, + a manifest
		t.Fatalf("%d blobs after the grown transcript, want 6: full chunks are not shared", got)
	}
	for d, want := range map[storage.Digest][]byte{d1: first, d2: second} {
		m, err := loadTranscript(ctx, st, d)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := writeTranscript(ctx, st, m, &out); err != nil || !bytes.Equal(out.Bytes(), want) {
			t.Fatalf("written back: %d bytes, want %d; %v", out.Len(), len(want), err)
		}
	}
	// A chunk that is gone fails the write; nothing pretends.
	m, _ := loadTranscript(ctx, st, d2)
	last, _ := storage.ParseDigest(m.Chunks[len(m.Chunks)-1])
	if err := st.DeleteBlob(ctx, last); err != nil {
		t.Fatal(err)
	}
	if err := writeTranscript(ctx, st, m, &bytes.Buffer{}); err == nil {
		t.Error("a transcript with a chunk missing was written")
	}
	// Not a manifest: a typed error.
	junk, _ := st.PutBlob(ctx, bytes.NewReader([]byte("not json")))
	if _, err := loadTranscript(ctx, st, junk.Digest); err == nil {
		t.Error("junk loaded as a manifest")
	}
}
