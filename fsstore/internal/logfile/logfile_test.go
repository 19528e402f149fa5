package logfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"looprig/fsstore/internal/frame"
	"looprig/rig/storage"
)

const testName = "sessions/test"

func newPath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "ledger.log")
}

func openLog(t testing.TB, path string) *Log {
	t.Helper()
	l, err := Open(path, Options{Name: testName})
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func mustAppend(t testing.TB, l *Log, expected uint64, payloads ...[]byte) {
	t.Helper()
	if err := l.Append(context.Background(), expected, 1, payloads...); err != nil {
		t.Fatalf("Append(%d, %d payloads): %v", expected, len(payloads), err)
	}
}

func mustTip(t testing.TB, l *Log) uint64 {
	t.Helper()
	tip, err := l.Tip(context.Background())
	if err != nil {
		t.Fatalf("Tip: %v", err)
	}
	return tip
}

// readAll returns copies of the records after after.
func readAll(t testing.TB, l *Log, after uint64) []storage.Record {
	t.Helper()
	c, err := l.Read(context.Background(), after)
	if err != nil {
		t.Fatalf("Read(%d): %v", after, err)
	}
	defer c.Close()
	var out []storage.Record
	for c.Next() {
		r := c.Record()
		out = append(out, storage.Record{Seq: r.Seq, Payload: bytes.Clone(r.Payload)})
	}
	if err := c.Err(); err != nil {
		t.Fatalf("cursor after %d: %v", after, err)
	}
	return out
}

// appendRetry is the CAS-retry loop a writer uses: read the tip, append
// there, retry on conflict. It returns the sequence before the first
// payload written.
func appendRetry(ctx context.Context, l *Log, payloads ...[]byte) (uint64, error) {
	for {
		tip, err := l.Tip(ctx)
		if err != nil {
			return 0, err
		}
		err = l.Append(ctx, tip, 1, payloads...)
		var ce *storage.ConflictError
		if errors.As(err, &ce) {
			continue
		}
		return tip, err
	}
}

func fileBytes(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func assertNotExist(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s exists (err=%v), want absent", path, err)
	}
}

func assertConflict(t testing.TB, err error, expected, actual uint64) {
	t.Helper()
	var ce *storage.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want *storage.ConflictError", err)
	}
	if ce.Name != testName || ce.Expected != expected || ce.Actual != actual {
		t.Fatalf("got %+v, want name %q expected %d actual %d", *ce, testName, expected, actual)
	}
}

func assertCorrupt(t testing.TB, err error, path string, offset int64) *storage.CorruptError {
	t.Helper()
	var ce *storage.CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want *storage.CorruptError", err)
	}
	if ce.Name != testName || ce.Path != path || ce.Offset != offset {
		t.Fatalf("got %+v, want path %s offset %d", *ce, path, offset)
	}
	return ce
}

// frameOffsets returns the start offset of every frame in a valid file.
func frameOffsets(t testing.TB, b []byte) []int64 {
	t.Helper()
	var offs []int64
	for pos := 0; pos < len(b); {
		_, n, err := frame.Decode(b[pos:])
		if err != nil {
			t.Fatalf("frame at %d: %v", pos, err)
		}
		offs = append(offs, int64(pos))
		pos += n
	}
	return offs
}

func payload(i int) []byte { return []byte(fmt.Sprintf("payload-%04d", i)) }

func TestAbsentLedgerIsEmptyAndNotCreated(t *testing.T) {
	ctx := context.Background()
	path := newPath(t)
	l := openLog(t, path)
	if tip := mustTip(t, l); tip != 0 {
		t.Fatalf("tip %d, want 0", tip)
	}
	if recs := readAll(t, l, 0); len(recs) != 0 {
		t.Fatalf("read %d records from an absent ledger", len(recs))
	}
	if err := l.Append(ctx, 0, 1); err != nil {
		t.Fatalf("tip check on empty ledger: %v", err)
	}
	assertConflict(t, l.Append(ctx, 1, 1), 1, 0)
	assertConflict(t, l.Append(ctx, 5, 1, payload(1)), 5, 0)
	err := l.Append(ctx, 0, 1, make([]byte, storage.MaxPayload+1))
	var tooLarge *storage.PayloadTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Size != storage.MaxPayload+1 || tooLarge.Max != storage.MaxPayload || tooLarge.Name != testName {
		t.Fatalf("oversized payload: %v", err)
	}
	assertNotExist(t, path)

	mustAppend(t, l, 0, payload(1))
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 || !st.Mode().IsRegular() {
		t.Fatalf("file mode %v, want regular 0600", st.Mode())
	}
}

func TestRoundTrip(t *testing.T) {
	path := newPath(t)
	l := openLog(t, path)
	big := make([]byte, storage.MaxPayload)
	for i := range big {
		big[i] = byte(i * 7)
	}
	want := [][]byte{payload(1), {}, big, []byte(frame.Magic), nil, bytes.Repeat([]byte{0}, 4096)}
	mustAppend(t, l, 0, want[0])
	mustAppend(t, l, 1, want[1])
	mustAppend(t, l, 2, want[2])
	mustAppend(t, l, 3, want[3:]...)
	if err := l.Append(context.Background(), 6, 9, payload(7)); err != nil {
		t.Fatal(err)
	}
	want = append(want, payload(7))

	check := func(l *Log) {
		t.Helper()
		if tip := mustTip(t, l); tip != uint64(len(want)) {
			t.Fatalf("tip %d, want %d", tip, len(want))
		}
		recs := readAll(t, l, 0)
		if len(recs) != len(want) {
			t.Fatalf("read %d records, want %d", len(recs), len(want))
		}
		for i, r := range recs {
			if r.Seq != uint64(i+1) || !bytes.Equal(r.Payload, want[i]) {
				t.Fatalf("record %d: seq %d, %d bytes; want seq %d, %d bytes", i, r.Seq, len(r.Payload), i+1, len(want[i]))
			}
		}
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, path)
	check(l2)

	// Epochs are stored per frame.
	c, err := l2.Read(context.Background(), 6)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.Next() || c.(*Cursor).Epoch() != 9 {
		t.Fatalf("epoch of record 7: %d", c.(*Cursor).Epoch())
	}
}

func TestConflictsLeaveFileUnchanged(t *testing.T) {
	ctx := context.Background()
	path := newPath(t)
	l := openLog(t, path)
	mustAppend(t, l, 0, payload(1), payload(2), payload(3))
	before := fileBytes(t, path)

	for _, exp := range []uint64{0, 1, 2, 4, 100, ^uint64(0)} {
		assertConflict(t, l.Append(ctx, exp, 1, payload(9)), exp, 3)
		assertConflict(t, l.Append(ctx, exp, 1, payload(9), payload(10)), exp, 3)
		assertConflict(t, l.Append(ctx, exp, 1), exp, 3)
	}
	// An oversized payload anywhere in a batch refuses the whole batch.
	var tooLarge *storage.PayloadTooLargeError
	if err := l.Append(ctx, 3, 1, payload(4), make([]byte, storage.MaxPayload+1)); !errors.As(err, &tooLarge) {
		t.Fatalf("oversized payload in batch: %v", err)
	}
	// A matching tip check writes nothing either.
	if err := l.Append(ctx, 3, 1); err != nil {
		t.Fatal(err)
	}
	// A second Log on the same file conflicts the same way.
	l2 := openLog(t, path)
	assertConflict(t, l2.Append(ctx, 2, 1, payload(9)), 2, 3)

	if !bytes.Equal(before, fileBytes(t, path)) {
		t.Fatal("a refused append changed the file")
	}
	if tip := mustTip(t, l); tip != 3 {
		t.Fatalf("tip %d, want 3", tip)
	}
}

func TestAppendCancelledContext(t *testing.T) {
	path := newPath(t)
	l := openLog(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Append(ctx, 0, 1, payload(1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with cancelled context: %v", err)
	}
	if _, err := l.Tip(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Tip with cancelled context: %v", err)
	}
	assertNotExist(t, path)
}

func TestReadBoundsAndSeek(t *testing.T) {
	path := newPath(t)
	l, err := Open(path, Options{Name: testName, IndexInterval: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const n = 50
	for i := 1; i <= n; i++ {
		mustAppend(t, l, uint64(i-1), payload(i))
	}
	check := func(l *Log) {
		t.Helper()
		for after := uint64(0); after <= n+3; after++ {
			recs := readAll(t, l, after)
			wantN := 0
			if after < n {
				wantN = int(n - after)
			}
			if len(recs) != wantN {
				t.Fatalf("after %d: %d records, want %d", after, len(recs), wantN)
			}
			for i, r := range recs {
				seq := after + uint64(i) + 1
				if r.Seq != seq || !bytes.Equal(r.Payload, payload(int(seq))) {
					t.Fatalf("after %d: record %d is seq %d %q", after, i, r.Seq, r.Payload)
				}
			}
		}
	}
	check(l)
	// The index rebuilt by the open scan gives the same answers.
	l2, err := Open(path, Options{Name: testName, IndexInterval: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	check(l2)
	if len(l2.index) != (n+3)/4 || !equalInt64(l.index, l2.index) {
		t.Fatalf("index after appends %v, after open %v", l.index, l2.index)
	}
}

func equalInt64(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCursorBoundedAtTip(t *testing.T) {
	ctx := context.Background()
	path := newPath(t)
	l := openLog(t, path)
	mustAppend(t, l, 0, payload(1), payload(2), payload(3))
	c, err := l.Read(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mustAppend(t, l, 3, payload(4), payload(5))
	// Another Log appending does not extend the cursor either.
	l2 := openLog(t, path)
	mustAppend(t, l2, 5, payload(6))
	var got []uint64
	for c.Next() {
		got = append(got, c.Record().Seq)
	}
	if c.Err() != nil || len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Fatalf("cursor saw %v (err %v), want [2 3]", got, c.Err())
	}
	if c.Next() {
		t.Fatal("Next after the end returned true")
	}
	// The first Log sees the other Log's append.
	if tip := mustTip(t, l); tip != 6 {
		t.Fatalf("tip %d, want 6", tip)
	}
	if recs := readAll(t, l, 5); len(recs) != 1 || !bytes.Equal(recs[0].Payload, payload(6)) {
		t.Fatalf("records after 5: %v", recs)
	}
}

func TestCursorContextAndClose(t *testing.T) {
	path := newPath(t)
	l := openLog(t, path)
	mustAppend(t, l, 0, payload(1), payload(2), payload(3))
	ctx, cancel := context.WithCancel(context.Background())
	c, err := l.Read(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Next() {
		t.Fatal(c.Err())
	}
	cancel()
	if c.Next() || !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("Next after cancel: err %v", c.Err())
	}
	c.Close()

	c, err = l.Read(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if c.Next() || c.Err() != nil {
		t.Fatalf("Next after Close: err %v", c.Err())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCursorSurvivesCloseAndDelete(t *testing.T) {
	path := newPath(t)
	l, err := Open(path, Options{Name: testName})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, 0, payload(1), payload(2), payload(3))
	c1, err := l.Read(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c2, err := l.Read(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := l.Delete(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertNotExist(t, path)
	n := 0
	for c1.Next() {
		n++
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for c2.Next() {
		n++
	}
	if n != 5 || c1.Err() != nil || c2.Err() != nil {
		t.Fatalf("read %d records (errs %v, %v), want 5", n, c1.Err(), c2.Err())
	}
}

func TestCursorDoesNotAllocatePerRecord(t *testing.T) {
	path := newPath(t)
	l := openLog(t, path)
	var batch [][]byte
	for i := range 2000 {
		batch = append(batch, bytes.Repeat([]byte{byte(i)}, 100+i%300))
	}
	mustAppend(t, l, 0, batch...)
	allocs := testing.AllocsPerRun(5, func() {
		c, err := l.Read(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for c.Next() {
			n++
		}
		if n != 2000 || c.Err() != nil {
			t.Fatalf("read %d: %v", n, c.Err())
		}
		c.Close()
	})
	if allocs > 20 {
		t.Fatalf("reading 2000 records made %v allocations", allocs)
	}
}

func TestCloseRefusesFurtherUse(t *testing.T) {
	ctx := context.Background()
	path := newPath(t)
	l, err := Open(path, Options{Name: testName})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, 0, payload(1))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := l.Append(ctx, 1, 1, payload(2)); !errors.Is(err, ErrClosed) || !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if _, err := l.Tip(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Tip after Close: %v", err)
	}
	if _, err := l.Read(ctx, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
}

func TestDeleteAndReplacement(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.log")
	a := openLog(t, path)
	b := openLog(t, path)
	mustAppend(t, a, 0, payload(1), payload(2), payload(3))
	if tip := mustTip(t, b); tip != 3 {
		t.Fatalf("b sees tip %d, want 3", tip)
	}

	// b deletes the ledger: a sees it empty, and a stale append conflicts.
	if err := b.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx); err != nil {
		t.Fatalf("deleting an absent ledger: %v", err)
	}
	assertConflict(t, a.Append(ctx, 3, 1, payload(4)), 3, 0)
	assertNotExist(t, path)
	if tip := mustTip(t, a); tip != 0 {
		t.Fatalf("a sees tip %d after delete, want 0", tip)
	}
	mustAppend(t, a, 0, payload(10))
	if recs := readAll(t, b, 0); len(recs) != 1 || !bytes.Equal(recs[0].Payload, payload(10)) {
		t.Fatalf("b reads %v after recreate", recs)
	}

	// Another ledger file is renamed over the path: both Logs follow it.
	other := filepath.Join(dir, "other.log")
	o := openLog(t, other)
	mustAppend(t, o, 0, payload(20), payload(21))
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	if tip := mustTip(t, a); tip != 2 {
		t.Fatalf("a sees tip %d after replacement, want 2", tip)
	}
	assertConflict(t, b.Append(ctx, 1, 1, payload(22)), 1, 2)
	mustAppend(t, b, 2, payload(22))
	recs := readAll(t, a, 0)
	if len(recs) != 3 || !bytes.Equal(recs[0].Payload, payload(20)) || !bytes.Equal(recs[2].Payload, payload(22)) {
		t.Fatalf("a reads %v after replacement", recs)
	}

	// Removed behind our back (not through Delete).
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if tip := mustTip(t, b); tip != 0 {
		t.Fatalf("tip %d after external remove, want 0", tip)
	}
}

func TestShrunkFileIsRescanned(t *testing.T) {
	path := newPath(t)
	l := openLog(t, path)
	mustAppend(t, l, 0, payload(1), payload(2), payload(3), payload(4))
	offs := frameOffsets(t, fileBytes(t, path))
	// Cut at a frame boundary: the tip goes back.
	if err := os.Truncate(path, offs[2]); err != nil {
		t.Fatal(err)
	}
	if tip := mustTip(t, l); tip != 2 {
		t.Fatalf("tip %d after truncation to 2 frames, want 2", tip)
	}
	mustAppend(t, l, 2, payload(30))
	// Cut inside a frame: a rescan repairs the torn tail.
	if err := os.Truncate(path, offs[1]+5); err != nil {
		t.Fatal(err)
	}
	if tip := mustTip(t, l); tip != 1 {
		t.Fatalf("tip %d after cut inside frame 2, want 1", tip)
	}
	if size := fileSize(t, path); size != offs[1] {
		t.Fatalf("size %d after repair, want %d", size, offs[1])
	}
}

func TestSymlinkRefused(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.log")
	l := openLog(t, real)
	mustAppend(t, l, 0, payload(1))
	link := filepath.Join(dir, "link.log")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(link, Options{Name: testName}); err == nil {
		t.Fatal("Open followed a symlink")
	}
	// A dangling symlink must not be created through either.
	dangling := filepath.Join(dir, "dangling.log")
	if err := os.Symlink(filepath.Join(dir, "target.log"), dangling); err != nil {
		t.Fatal(err)
	}
	ld, err := Open(dangling, Options{Name: testName})
	if err == nil {
		err = ld.Append(context.Background(), 0, 1, payload(1))
		ld.Close()
	}
	if err == nil {
		t.Fatal("Append created a file through a dangling symlink")
	}
	assertNotExist(t, filepath.Join(dir, "target.log"))
}

// buildLog writes n records of varied sizes and returns the file bytes
// and frame offsets.
func buildLog(t *testing.T, path string, n int) ([]byte, []int64) {
	t.Helper()
	l, err := Open(path, Options{Name: testName})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		mustAppend(t, l, uint64(i-1), bytes.Repeat([]byte{byte('a' + i%26)}, 10+i*7))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b := fileBytes(t, path)
	return b, frameOffsets(t, b)
}

func checkRecords(t *testing.T, l *Log, n int) {
	t.Helper()
	recs := readAll(t, l, 0)
	if len(recs) != n {
		t.Fatalf("%d records, want %d", len(recs), n)
	}
	for i, r := range recs {
		want := bytes.Repeat([]byte{byte('a' + (i+1)%26)}, 10+(i+1)*7)
		if r.Seq != uint64(i+1) || !bytes.Equal(r.Payload, want) {
			t.Fatalf("record %d damaged: seq %d len %d", i+1, r.Seq, len(r.Payload))
		}
	}
}

func TestTornTailEveryOffset(t *testing.T) {
	for _, n := range []int{1, 6} {
		t.Run(fmt.Sprintf("%d records", n), func(t *testing.T) { tornTailEveryOffset(t, n) })
	}
}

func tornTailEveryOffset(t *testing.T, n int) {
	dir := t.TempDir()
	full, offs := buildLog(t, filepath.Join(dir, "full.log"), n)
	last := offs[n-1]
	for cut := last; cut < int64(len(full)); cut++ {
		path := filepath.Join(dir, fmt.Sprintf("cut-%d.log", cut))
		if err := os.WriteFile(path, full[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := Open(path, Options{Name: testName})
		if err != nil {
			t.Fatalf("cut at %d: Open: %v", cut, err)
		}
		if size := fileSize(t, path); size != last {
			t.Fatalf("cut at %d: size %d after Open, want %d", cut, size, last)
		}
		if tip := mustTip(t, l); tip != uint64(n-1) {
			t.Fatalf("cut at %d: tip %d", cut, tip)
		}
		checkRecords(t, l, n-1)
		// The repaired log takes the next record where the torn one was.
		mustAppend(t, l, uint64(n-1), bytes.Repeat([]byte{byte('a' + n%26)}, 10+n*7))
		checkRecords(t, l, n)
		l.Close()
		if !bytes.Equal(fileBytes(t, path), full) {
			t.Fatalf("cut at %d: rewritten log differs from the original", cut)
		}
		os.Remove(path)
	}
}

func TestGarbageTailIsTruncated(t *testing.T) {
	dir := t.TempDir()
	const n = 5
	full, _ := buildLog(t, filepath.Join(dir, "full.log"), n)
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(k int) []byte {
		b := make([]byte, k)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	// A header that announces more than the file holds, a frame with a
	// bad checksum at the very end, magic bytes scattered in garbage.
	partial := frame.AppendFrame(nil, n+1, 1, make([]byte, 500))[:300]
	badCRC := frame.AppendFrame(nil, n+1, 1, []byte("last"))
	badCRC[len(badCRC)-1] ^= 0xFF
	tails := map[string][]byte{
		"one byte":       {0x42},
		"zeros":          make([]byte, 8192),
		"random 7":       random(7),
		"random 100":     random(100),
		"random 300k":    random(300 << 10),
		"magic garbage":  bytes.Repeat([]byte("LRf1\x10\x00\x00\x00xx"), 500),
		"partial frame":  partial,
		"bad last crc":   badCRC,
		"magic then end": []byte("LRf1"),
	}
	for name, tail := range tails {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, "garbage.log")
			if err := os.WriteFile(path, append(bytes.Clone(full), tail...), 0o600); err != nil {
				t.Fatal(err)
			}
			l, err := Open(path, Options{Name: testName})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer l.Close()
			if !bytes.Equal(fileBytes(t, path), full) {
				t.Fatalf("file not truncated to the last good frame (size %d, want %d)", fileSize(t, path), len(full))
			}
			checkRecords(t, l, n)
		})
	}
}

func TestCorruptMiddleFailsClosed(t *testing.T) {
	dir := t.TempDir()
	const n = 6
	full, offs := buildLog(t, filepath.Join(dir, "full.log"), n)
	for victim := 0; victim < n-1; victim++ {
		start, end := offs[victim], offs[victim+1]
		for _, at := range []int64{start, start + 1, start + 5, start + 9, start + 17, start + frame.HeaderSize, end - 1} {
			t.Run(fmt.Sprintf("frame%d/byte%d", victim+1, at-start), func(t *testing.T) {
				damaged := bytes.Clone(full)
				damaged[at] ^= 0x5A
				path := filepath.Join(dir, "damaged.log")
				if err := os.WriteFile(path, damaged, 0o600); err != nil {
					t.Fatal(err)
				}
				_, err := Open(path, Options{Name: testName})
				assertCorrupt(t, err, path, start)
				if !bytes.Equal(fileBytes(t, path), damaged) {
					t.Fatal("Open modified a corrupt file")
				}
			})
		}
	}
	// Corruption behind a torn tail is still corruption: nothing is cut.
	damaged := append(bytes.Clone(full), 0, 0, 0)
	damaged[offs[2]+frame.HeaderSize] ^= 1
	path := filepath.Join(dir, "damaged-torn.log")
	if err := os.WriteFile(path, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path, Options{Name: testName})
	assertCorrupt(t, err, path, offs[2])
	if !bytes.Equal(fileBytes(t, path), damaged) {
		t.Fatal("Open modified a corrupt file")
	}
}

func TestCursorDetectsDamage(t *testing.T) {
	// Damage that appears after Open (same size, so no rescan) is caught
	// by the cursor's own checks.
	path := newPath(t)
	l := openLog(t, path)
	mustAppend(t, l, 0, payload(1), payload(2), payload(3))
	offs := frameOffsets(t, fileBytes(t, path))
	for _, tc := range []struct {
		name string
		at   int64
	}{
		{"payload", offs[1] + frame.HeaderSize + 2},
		{"magic", offs[1]},
		{"crc", offs[2] - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var b [1]byte
			f.ReadAt(b[:], tc.at)
			flip := func() {
				b[0] ^= 0x10
				if _, err := f.WriteAt(b[:], tc.at); err != nil {
					t.Fatal(err)
				}
			}
			flip()
			defer flip()
			c, err := l.Read(context.Background(), 0)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if !c.Next() || c.Record().Seq != 1 {
				t.Fatalf("first record: %v", c.Err())
			}
			if c.Next() {
				t.Fatal("damaged record returned")
			}
			assertCorrupt(t, c.Err(), path, offs[1])
		})
	}
}

func TestSequenceDamageFailsClosed(t *testing.T) {
	dir := t.TempDir()
	build := func(seqs ...uint64) ([]byte, []int64) {
		var b []byte
		var offs []int64
		for _, s := range seqs {
			offs = append(offs, int64(len(b)))
			b = frame.AppendFrame(b, s, 1, payload(int(s)))
		}
		return b, offs
	}
	cases := []struct {
		name   string
		seqs   []uint64
		victim int
	}{
		{"gap", []uint64{1, 2, 4, 5}, 2},
		{"restart", []uint64{1, 2, 3, 1}, 3},
		{"repeat", []uint64{1, 2, 2}, 2},
		{"first is not 1", []uint64{2, 3}, 0},
		{"zero", []uint64{0}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, offs := build(tc.seqs...)
			path := filepath.Join(dir, "seq.log")
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Open(path, Options{Name: testName})
			assertCorrupt(t, err, path, offs[tc.victim])
			if !bytes.Equal(fileBytes(t, path), b) {
				t.Fatal("Open modified a corrupt file")
			}
		})
	}
}

func TestTornTailLeftByAnotherWriter(t *testing.T) {
	// A writer in another process died in the middle of its write: a Log
	// that is already open finds the partial frame under the lock (no
	// writer holds it, so it is torn, not in progress) and cuts it off.
	ctx := context.Background()
	path := newPath(t)
	l := openLog(t, path)
	mustAppend(t, l, 0, payload(1), payload(2))
	good := fileBytes(t, path)
	partial := frame.AppendFrame(nil, 3, 2, make([]byte, 5000))[:3000]
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(partial); err != nil {
		t.Fatal(err)
	}
	f.Close()
	assertConflict(t, l.Append(ctx, 3, 1, payload(3)), 3, 2)
	if !bytes.Equal(fileBytes(t, path), good) {
		t.Fatalf("torn tail not cut: size %d, want %d", fileSize(t, path), len(good))
	}
	mustAppend(t, l, 2, payload(3))
	if recs := readAll(t, openLog(t, path), 0); len(recs) != 3 || !bytes.Equal(recs[2].Payload, payload(3)) {
		t.Fatalf("records after repair: %v", recs)
	}
}

func TestCorruptionAppearingLaterFailsClosed(t *testing.T) {
	// Another process leaves damage after our cached end: Tip and Append
	// find it under the lock and fail closed without touching the file.
	ctx := context.Background()
	path := newPath(t)
	l := openLog(t, path)
	mustAppend(t, l, 0, payload(1))
	b := fileBytes(t, path)
	end := int64(len(b))
	b = frame.AppendFrame(b, 2, 1, payload(2))
	b = frame.AppendFrame(b, 3, 1, payload(3))
	b[end+frame.HeaderSize] ^= 1
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := l.Tip(ctx)
	assertCorrupt(t, err, path, end)
	assertCorrupt(t, l.Append(ctx, 1, 1, payload(9)), path, end)
	_, err = l.Read(ctx, 0)
	assertCorrupt(t, err, path, end)
	if !bytes.Equal(fileBytes(t, path), b) {
		t.Fatal("the file was modified")
	}
}

func TestConcurrentCASRetry(t *testing.T) {
	const goroutines, each = 8, 40
	path := newPath(t)
	l := openLog(t, path)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				if _, err := appendRetry(context.Background(), l, []byte(fmt.Sprintf("g%d-%d", g, i))); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkEachOnce(t, openLog(t, path), goroutines*each, func(g, i int) string { return fmt.Sprintf("g%d-%d", g, i) }, goroutines, each)
}

// checkEachOnce reads the whole ledger and checks it holds exactly the
// payloads name(g, i) for g < groups and i < each, once each, in per-group
// order.
func checkEachOnce(t *testing.T, l *Log, total int, name func(g, i int) string, groups, each int) {
	t.Helper()
	recs := readAll(t, l, 0)
	if len(recs) != total {
		t.Fatalf("%d records, want %d", len(recs), total)
	}
	seen := make(map[string]bool, total)
	next := make([]int, groups)
	for i, r := range recs {
		if r.Seq != uint64(i+1) {
			t.Fatalf("record %d has seq %d", i+1, r.Seq)
		}
		p := string(r.Payload)
		if seen[p] {
			t.Fatalf("payload %q written twice", p)
		}
		seen[p] = true
		var g, k int
		if _, err := fmt.Sscanf(p[bytes.IndexByte(r.Payload, 'g'):], "g%d-%d", &g, &k); err != nil {
			t.Fatalf("payload %q: %v", p, err)
		}
		if g >= groups || k != next[g] {
			t.Fatalf("payload %q out of order (want g%d-%d)", p, g, next[g])
		}
		next[g]++
	}
	for g := range groups {
		for i := range each {
			if !seen[name(g, i)] {
				t.Fatalf("payload %q missing", name(g, i))
			}
		}
	}
}

func TestConcurrentBatches(t *testing.T) {
	// Each call appends a batch of 1–5 payloads; batches stay whole and
	// contiguous under contention.
	const goroutines, calls = 6, 25
	path := newPath(t)
	l := openLog(t, path)
	type span struct {
		g, call, first, n int
	}
	var mu sync.Mutex
	var spans []span
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for call := range calls {
				n := 1 + rng.IntN(5)
				batch := make([][]byte, n)
				for j := range batch {
					batch[j] = []byte(fmt.Sprintf("g%d-c%d-%d/%d", g, call, j, n))
				}
				base, err := appendRetry(context.Background(), l, batch...)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				spans = append(spans, span{g, call, int(base) + 1, n})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	recs := readAll(t, openLog(t, path), 0)
	total := 0
	for _, s := range spans {
		total += s.n
		for j := range s.n {
			want := fmt.Sprintf("g%d-c%d-%d/%d", s.g, s.call, j, s.n)
			if got := string(recs[s.first-1+j].Payload); got != want {
				t.Fatalf("record %d is %q, want %q", s.first+j, got, want)
			}
		}
	}
	if len(recs) != total || len(spans) != goroutines*calls {
		t.Fatalf("%d records in %d spans, want %d records in %d spans", len(recs), len(spans), total, goroutines*calls)
	}
}

func TestPipelinedAppends(t *testing.T) {
	// Writers that know their slot append at expected = slot-1 without
	// reading the tip; a conflict that shows the slot is not reached yet
	// is retried. Every slot lands exactly once, in order.
	const writers, n = 16, 400
	path := newPath(t)
	l := openLog(t, path)
	var wg sync.WaitGroup
	var mu sync.Mutex
	slot := 0
	for range writers {
		wg.Go(func() {
			for {
				mu.Lock()
				slot++
				s := slot
				mu.Unlock()
				if s > n {
					return
				}
				for {
					err := l.Append(context.Background(), uint64(s-1), 1, payload(s))
					var ce *storage.ConflictError
					if errors.As(err, &ce) && ce.Actual < ce.Expected {
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					break
				}
			}
		})
	}
	wg.Wait()
	recs := readAll(t, l, 0)
	if len(recs) != n {
		t.Fatalf("%d records, want %d", len(recs), n)
	}
	for i, r := range recs {
		if !bytes.Equal(r.Payload, payload(i+1)) {
			t.Fatalf("record %d is %q", i+1, r.Payload)
		}
	}
	if l.Syncs() >= n {
		t.Logf("no group commit observed: %d syncs for %d records", l.Syncs(), n)
	}
}

// holdLeader makes the next leader of l wait, before it takes the queue,
// until release is called. entered is closed when that leader waits.
func holdLeader(l *Log) (entered <-chan struct{}, release func()) {
	var once sync.Once
	in, out := make(chan struct{}), make(chan struct{})
	l.hookLead = func() {
		once.Do(func() {
			close(in)
			<-out
		})
	}
	return in, func() { close(out) }
}

// waitQueued waits until n requests are queued on l.
func waitQueued(l *Log, n int) {
	for {
		l.qmu.Lock()
		k := len(l.queue)
		l.qmu.Unlock()
		if k == n {
			return
		}
		time.Sleep(50 * time.Microsecond)
	}
}

func TestGroupCommitOrdersOneBatch(t *testing.T) {
	ctx := context.Background()
	path := newPath(t)
	l := openLog(t, path)
	mustAppend(t, l, 0, []byte("a0"))
	syncs := l.Syncs()

	type call struct {
		expected uint64
		payloads []string
	}
	// The leader's own request comes first; the others queue behind it
	// in any order and are ordered by expected inside the batch.
	first := call{1, []string{"a"}}
	others := []call{
		{5, []string{"e"}},      // accepted after c,d: tip 5 -> 6
		{2, []string{"b"}},      // accepted: tip 2 -> 3
		{1, []string{"dup"}},    // refused: a took slot 2
		{3, []string{"c", "d"}}, // accepted: tip 3 -> 5
		{4, []string{"x"}},      // refused: c,d moved the tip to 5
		{9, []string{"far"}},    // refused
		{6, nil},                // tip check, accepted at 6
	}
	wantErr := map[string]uint64{"dup": 2, "x": 5, "far": 6}

	entered, release := holdLeader(l)
	results := make(map[string]error)
	var mu sync.Mutex
	var wg sync.WaitGroup
	run := func(c call) {
		ps := make([][]byte, len(c.payloads))
		for i, p := range c.payloads {
			ps[i] = []byte(p)
		}
		err := l.Append(ctx, c.expected, 1, ps...)
		key := "check"
		if len(c.payloads) > 0 {
			key = c.payloads[0]
		}
		mu.Lock()
		results[key] = err
		mu.Unlock()
	}
	wg.Go(func() { run(first) })
	<-entered
	for _, c := range others {
		wg.Go(func() { run(c) })
	}
	waitQueued(l, 1+len(others))
	release()
	wg.Wait()

	for key, err := range results {
		if actual, refused := wantErr[key]; refused {
			var ce *storage.ConflictError
			if !errors.As(err, &ce) || ce.Actual != actual {
				t.Errorf("%s: %v, want conflict with actual %d", key, err, actual)
			}
		} else if err != nil {
			t.Errorf("%s: %v", key, err)
		}
	}
	var got []string
	for _, r := range readAll(t, l, 0) {
		got = append(got, string(r.Payload))
	}
	if fmt.Sprint(got) != "[a0 a b c d e]" {
		t.Fatalf("records %v", got)
	}
	if n := l.Syncs() - syncs; n != 1 {
		t.Fatalf("%d fdatasyncs for one batch, want 1", n)
	}
}

func TestCancelWhileQueued(t *testing.T) {
	path := newPath(t)
	l := openLog(t, path)
	entered, release := holdLeader(l)
	var wg sync.WaitGroup
	var leaderErr error
	wg.Go(func() { leaderErr = l.Append(context.Background(), 0, 1, []byte("leader")) })
	<-entered
	// Queue a second request, then cancel it while the leader is held.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Append(ctx, 1, 1, []byte("cancelled")) }()
	waitQueued(l, 2)
	cancel()
	err := <-done
	// The held leader has not taken the queue, so the request is withdrawn.
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled append: %v", err)
	}
	waitQueued(l, 1)
	release()
	wg.Wait()
	if leaderErr != nil {
		t.Fatal(leaderErr)
	}
	recs := readAll(t, l, 0)
	if len(recs) != 1 || string(recs[0].Payload) != "leader" {
		t.Fatalf("records %v", recs)
	}
}

func TestTwoLogsOneFileCAS(t *testing.T) {
	// Two Logs on one file in one process behave like two processes: each
	// has its own open file description and so its own flock.
	const each = 60
	path := newPath(t)
	a := openLog(t, path)
	b := openLog(t, path)
	var wg sync.WaitGroup
	for g, l := range []*Log{a, b, a, b} {
		wg.Go(func() {
			for i := range each {
				if _, err := appendRetry(context.Background(), l, []byte(fmt.Sprintf("g%d-%d", g, i))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	checkEachOnce(t, a, 4*each, func(g, i int) string { return fmt.Sprintf("g%d-%d", g, i) }, 4, each)
	checkEachOnce(t, b, 4*each, func(g, i int) string { return fmt.Sprintf("g%d-%d", g, i) }, 4, each)
}
