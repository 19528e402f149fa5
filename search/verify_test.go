package search

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/rig/storage/memstore"
)

// A search over more blocks than a verifier checks at a time gives every
// hit, in the order the blocks were indexed, and stops when fn says so.
func TestSearchManyBlocksInOrder(t *testing.T) {
	ix, w := newBlockWriter(t)
	sess := uuid.New()
	const blocks = 3*verifyBatch + 5
	at := time.UnixMilli(1_700_000_000_000)
	for b := range blocks {
		lines := []Line{{Turn: b, Kind: KindOutput, At: at, Text: "filler line"}}
		if b%2 == 0 {
			lines = append(lines, Line{Turn: b, Kind: KindOutput, At: at, Text: fmt.Sprintf("block %d Needle", b)})
		}
		if _, err := w.putBlock(sess, 0, lines, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.commit(); err != nil {
		t.Fatal(err)
	}
	q, err := ParseQuery("needle")
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	err = ix.Search(t.Context(), q, Filter{}, func(h Hit) error {
		got = append(got, h.Turn)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != (blocks+1)/2 {
		t.Fatalf("%d hits, want %d: %v", len(got), (blocks+1)/2, got)
	}
	for i, turn := range got {
		if turn != 2*i {
			t.Fatalf("hit %d is of block %d, want %d: %v", i, turn, 2*i, got)
		}
	}
	stop := fmt.Errorf("enough")
	n := 0
	err = ix.Search(t.Context(), q, Filter{}, func(Hit) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if err != stop || n != 3 {
		t.Fatalf("search stopped by fn: %v after %d hits, want %v after 3", err, n, stop)
	}
}

// newBlockWriter opens an index in a temporary directory (closed when the
// test ends) and begins a writer of blocks put by hand (putBlock, then
// commit).
func newBlockWriter(t *testing.T) (*Index, *writer) {
	t.Helper()
	ix, err := Open(t.Context(), memstore.New(), Options{Dir: filepath.Join(t.TempDir(), "search")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	w := ix.newWriter()
	if err := w.begin(); err != nil {
		t.Fatal(err)
	}
	return ix, w
}
