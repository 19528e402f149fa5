package benchmarks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/fsstore"
	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
	"looprig/rig/storage/memstore"
)

// Fixtures are built fast, through the store APIs: one real session is
// created by the runtime, and the others copy its journal and catalog entry
// (with their own ids, titles and times); a long turn's records are one
// template TurnOutput record with a counter stamped into its text, appended
// in batches.

// defineRig returns a demo-profile rig over st.
func defineRig(tb testing.TB, st *fsstore.Store) *rig.Rig {
	tb.Helper()
	r, err := rig.Define(rig.WithStore(st), rig.WithWorkspaces(st.WorkspacesDir()), rig.WithProfile(rig.DemoProfile()))
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// realSession creates a session with the runtime and shuts it down.
func realSession(tb testing.TB, r *rig.Rig, title string) (id uuid.UUID, loopID string) {
	tb.Helper()
	s, err := r.NewSession(bg, rig.WithTitle(title))
	if err != nil {
		tb.Fatal(err)
	}
	id, loopID = s.SessionID(), s.LoopID()
	if err := s.Shutdown(bg); err != nil {
		tb.Fatal(err)
	}
	return id, loopID
}

// readPayloads returns copies of every payload of a ledger.
func readPayloads(tb testing.TB, led storage.Ledger, name string) [][]byte {
	tb.Helper()
	c, err := led.Read(bg, name, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	var out [][]byte
	for c.Next() {
		out = append(out, bytes.Clone(c.Record().Payload))
	}
	if err := c.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

const counterMark = "0000000000"

// outputTemplate returns the encoded journal record of a TurnOutput of
// turnID on loopID whose text holds counterMark, and the mark's offset.
func outputTemplate(tb testing.TB, loopID, turnID string) ([]byte, int) {
	tb.Helper()
	ms := memstore.New()
	l, err := ms.Acquire(bg, "sessions/template")
	if err != nil {
		tb.Fatal(err)
	}
	j, err := journal.Open(bg, ms, "sessions/template", l)
	if err != nil {
		tb.Fatal(err)
	}
	text := "output line " + counterMark + " of a long benchmark turn, long enough to look like real output\n"
	if _, err := j.AppendEvent(bg, loopID, event.TurnOutput{TurnID: turnID, Text: text}); err != nil {
		tb.Fatal(err)
	}
	p := readPayloads(tb, ms, "sessions/template")[1]
	return p, bytes.Index(p, []byte(counterMark))
}

// appendLongTurn appends to session id (a stopped session of st whose root
// loop is loopID) a turn of n TurnOutput records: it takes the lease,
// opens the journal (a fence), appends TurnStarted, then the records in
// batches, then TurnDone unless open, and releases the lease.
func appendLongTurn(tb testing.TB, st *fsstore.Store, id uuid.UUID, loopID string, n int, open bool) {
	tb.Helper()
	name := storage.SessionName(id.String())
	l, err := st.Acquire(bg, name)
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Release(bg)
	j, err := journal.Open(bg, st, name, l)
	if err != nil {
		tb.Fatal(err)
	}
	turn := uuid.NewString()
	if _, err := j.AppendEvent(bg, loopID, event.TurnStarted{TurnID: turn, Index: 0, Input: "long turn"}); err != nil {
		tb.Fatal(err)
	}
	tmpl, at := outputTemplate(tb, loopID, turn)
	tip := j.Tip()
	const batch = 1024
	buf := make([]byte, 0, batch*len(tmpl))
	payloads := make([][]byte, 0, batch)
	for i := 0; i < n; {
		buf, payloads = buf[:0], payloads[:0]
		for ; len(payloads) < batch && i < n; i++ {
			start := len(buf)
			buf = append(buf, tmpl...)
			num := strconv.AppendUint(nil, uint64(i), 10)
			copy(buf[start+at+len(counterMark)-len(num):], num)
			payloads = append(payloads, buf[start:len(buf):len(buf)])
		}
		if err := st.Append(bg, name, tip, payloads...); err != nil {
			tb.Fatal(err)
		}
		tip += uint64(len(payloads))
	}
	if open {
		return
	}
	// The journal's tip is stale after the direct appends: a new tenure
	// (another fence) closes the turn.
	j, err = journal.Open(bg, st, name, l)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := j.AppendEvent(bg, loopID, event.TurnDone{TurnID: turn}); err != nil {
		tb.Fatal(err)
	}
}

// storeFixture is a store directory holding sessions.
type storeFixture struct {
	Dir string   `json:"dir"` // the store
	IDs []string `json:"ids"` // every session, oldest first
	Big string   `json:"big"` // the session with the long turn ("" if none)
}

var (
	fixturesMu sync.Mutex
	fixtures   = map[string]*storeFixture{}
)

// manySessions returns (building once per process) a store of n sessions,
// each with a journal, a catalog entry and lease files, plus — when
// bigRecords > 0 — one more, the newest, with a turn of bigRecords output
// records.
func manySessions(tb testing.TB, n, bigRecords int) *storeFixture {
	tb.Helper()
	key := fmt.Sprint(n, "/", bigRecords)
	fixturesMu.Lock()
	defer fixturesMu.Unlock()
	if f := fixtures[key]; f != nil {
		return f
	}
	root, err := fixtureRoot()
	if err != nil {
		tb.Fatal(err)
	}
	f := &storeFixture{Dir: filepath.Join(root, "store-"+strconv.Itoa(n)+"-"+strconv.Itoa(bigRecords))}
	marker := f.Dir + ".json"
	if b, err := os.ReadFile(marker); err == nil && json.Unmarshal(b, f) == nil && len(f.IDs) >= n {
		fixtures[key] = f // kept from an earlier run (LOOPRIG_BENCH_DIR)
		return f
	}
	os.RemoveAll(f.Dir)
	start := time.Now()
	st := openStore(tb, f.Dir)
	defer st.Close()
	tjournal, tcat := templateSession(tb, st)

	f.IDs = make([]string, n)
	epoch0 := time.Now().Add(-time.Duration(n) * time.Minute).UTC()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				id := uuid.NewString()
				f.IDs[i] = id
				if err := copySession(st, id, i, epoch0.Add(time.Duration(i)*time.Minute), tjournal, tcat); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		tb.Fatal(err)
	}
	if bigRecords > 0 {
		id, loop := realSession(tb, defineRig(tb, st), "the long one")
		appendLongTurn(tb, st, id, loop, bigRecords, false)
		f.Big = id.String()
		f.IDs = append(f.IDs, f.Big)
	}
	tb.Logf("fixture: %d sessions (+%d-record session) in %v", n, bigRecords, time.Since(start).Round(time.Millisecond))
	if b, err := json.Marshal(f); err == nil {
		os.WriteFile(marker, b, 0o600)
	}
	fixtures[key] = f
	return f
}

// templateSession makes a real (demo) session in st, shut down cleanly,
// and returns its journal's payloads and catalog entry after removing it
// from st: the template copySession copies.
func templateSession(tb testing.TB, st *fsstore.Store) ([][]byte, rig.CatalogEntry) {
	tb.Helper()
	tid, _ := realSession(tb, defineRig(tb, st), "template")
	tname := storage.SessionName(tid.String())
	tjournal := readPayloads(tb, st, tname)
	tcat, err := rig.ReadCatalog(bg, st, tid.String())
	if err != nil {
		tb.Fatal(err)
	}
	if err := st.Delete(bg, tname); err != nil {
		tb.Fatal(err)
	}
	if err := st.DeleteKey(bg, storage.CatalogKey(tid.String()), storage.AnyRevision); err != nil {
		tb.Fatal(err)
	}
	os.Remove(filepath.Join(st.LocalDir(), "kv", "sessions", tid.String())) // now empty
	return tjournal, tcat
}

// copySession writes session id as a copy of the template journal and
// catalog entry, and grants and releases its lease once (lock and epoch
// files, as every real session has).
func copySession(st *fsstore.Store, id string, i int, created time.Time, tjournal [][]byte, tcat rig.CatalogEntry) error {
	name := storage.SessionName(id)
	l, err := st.Acquire(bg, name)
	if err != nil {
		return err
	}
	if err := l.Release(bg); err != nil {
		return err
	}
	if err := st.Append(bg, name, 0, tjournal...); err != nil {
		return err
	}
	c := tcat
	c.ID, c.Title, c.Epoch = id, fmt.Sprintf("benchmark session %d", i), 1
	c.Created, c.Updated = created, created.Add(30*time.Second)
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	_, err = st.Put(bg, storage.CatalogKey(id), b, storage.MustNotExist)
	return err
}

var (
	rootOnce sync.Once
	rootDir  string
	rootErr  error
)

// fixtureRoot is the directory of fixtures shared between benchmarks: a
// temporary one per test process (removed by TestMain), or
// $LOOPRIG_BENCH_DIR, where fixtures are kept and reused by later runs.
func fixtureRoot() (string, error) {
	rootOnce.Do(func() { rootDir, rootErr = makeTempRoot() })
	return rootDir, rootErr
}
