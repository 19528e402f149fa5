package rigtest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"looprig/rig"
	"looprig/rig/event"
	"looprig/rig/journal"
	"looprig/rig/storage"
)

// breakerWrites says what the breaker of a creation writes before the
// creation goes on, and whether the creator's lease probe fails (so that
// only the journal and the catalog can tell it of the break).
type breakerWrites struct {
	journal, catalog, noProbe bool
}

// brokenCreation makes a NewSession on an exclusive root whose session
// lease is broken while it runs (from the root lease's Acquire, between the
// journal's fence and the seed copy) by a holder that is not told of the
// break in time (its loss notification is late, as a watchdog's is); the
// seed is then refused, so the creation fails. The breaker writes what w
// says: its fence and a record, its catalog entry.
type brokenCreation struct {
	err         error
	id          uuid.UUID
	name        string
	bl          storage.Lease
	bj          *journal.SessionJournal
	breakerSeqs []uint64
}

func runBrokenCreation(t *testing.T, e *env, w breakerWrites) brokenCreation {
	t.Helper()
	root := canonical(t, t.TempDir())
	seed := t.TempDir()
	writeFile(t, filepath.Join(seed, "ok.txt"), "ok")
	if err := os.Symlink("/etc/passwd", filepath.Join(seed, "escape")); err != nil {
		t.Fatal(err)
	}
	r := e.define(rig.WithProfile(exclusiveProfile(root)))
	var out brokenCreation
	e.fs.setDeaf(true)
	if w.noProbe {
		e.fs.setProbeFault(func(name string) error {
			if strings.HasPrefix(name, "sessions/") {
				return errInjected
			}
			return nil
		})
	}
	e.fs.setAcquireFault(func(name string) error {
		if !strings.HasPrefix(name, "workspace-roots/") || out.bl != nil {
			return nil
		}
		sessions := e.fs.names("sessions/")
		if len(sessions) != 1 {
			t.Errorf("session leases %v, want one", sessions)
			return nil
		}
		out.name = sessions[0]
		out.id = uuid.MustParse(strings.TrimPrefix(out.name, "sessions/"))
		out.bl = e.breakLease(t, out.name)
		ctx := context.Background()
		if w.journal {
			bj, err := journal.Open(ctx, e.raw, out.name, out.bl)
			if err != nil {
				t.Errorf("breaker opens the journal: %v", err)
				return nil
			}
			out.bj = bj
			seq, err := bj.AppendEvent(ctx, "", event.SessionIdle{})
			if err != nil {
				t.Errorf("breaker appends: %v", err)
				return nil
			}
			out.breakerSeqs = []uint64{seq}
		}
		if w.catalog {
			entry, _ := json.Marshal(rig.CatalogEntry{V: 1, ID: out.id.String(), Title: "breaker", State: rig.CatalogRunning,
				Epoch: out.bl.Epoch(), Created: time.Now().UTC(), Updated: time.Now().UTC()})
			if _, err := e.raw.Put(ctx, storage.CatalogKey(out.id.String()), entry, storage.AnyRevision); err != nil {
				t.Errorf("breaker writes its catalog entry: %v", err)
			}
		}
		return nil
	})
	s, err := r.NewSession(t.Context(), rig.WithSeedSnapshot(seed))
	e.fs.setAcquireFault(nil)
	e.fs.setProbeFault(nil)
	e.fs.setDeaf(false)
	if err == nil {
		shutdownAtCleanup(t, s)
		t.Fatal("NewSession with a refused seed succeeded")
	}
	if out.bl == nil {
		t.Fatal("the creation took no root lease: the lease was never broken")
	}
	out.err = err
	le := as[*rig.LifecycleError](t, err, "NewSession whose lease was broken")
	if le.Stage != rig.StageSeed {
		t.Errorf("stage %s, want %s (%v)", le.Stage, rig.StageSeed, err)
	}
	as[*rig.SeedError](t, err, "the refused seed")
	var lost *journal.JournalLeaseLostError
	switch {
	case !errors.As(err, &lost):
		t.Errorf("NewSession: %v; want the creator's lease loss, an error errors.As finds as %T", err, lost)
	case lost.Epoch >= out.bl.Epoch() || lost.Name != out.name:
		t.Errorf("JournalLeaseLostError{%s epoch %d}, want the creator's lease of %s, before the breaker's epoch %d", lost.Name, lost.Epoch, out.name, out.bl.Epoch())
	}
	// The creator released its own grant, not the breaker's.
	if st, err := e.raw.Probe(t.Context(), out.name); err != nil || !st.Held || st.Epoch != out.bl.Epoch() {
		t.Errorf("lease after the failed creation: %+v (%v), want held by the breaker at epoch %d", st, err, out.bl.Epoch())
	}
	if a, rel := e.fs.stats(out.name); a != 2 || rel != 1 {
		t.Errorf("lease %s: %d grant(s), %d released; want the creator's and the breaker's, the creator's released", out.name, a, rel)
	}
	return out
}

// checkBreakersJournal checks that the journal still holds the breaker's
// fence and records, and that the breaker can append.
func checkBreakersJournal(t *testing.T, e *env, bc brokenCreation) {
	t.Helper()
	if bc.bj == nil {
		t.FailNow()
	}
	recs, err := tryReadJournal(e.raw, bc.id)
	if err != nil || uint64(len(recs)) < bc.bj.FenceSeq() {
		t.Fatalf("the breaker's journal is gone after the failed creation: %d records, %v", len(recs), err)
	}
	var after []uint64
	for _, r := range recs {
		if r.Seq > bc.bj.FenceSeq() {
			after = append(after, r.Seq)
		}
	}
	if f := recs[bc.bj.FenceSeq()-1]; f.Kind != journal.KindFence || f.Epoch != bc.bl.Epoch() || !slices.Equal(after, bc.breakerSeqs) {
		t.Errorf("journal after the failed creation, want the breaker's fence (epoch %d) and record %v:%s", bc.bl.Epoch(), bc.breakerSeqs, describe(recs))
	}
	if _, err := bc.bj.AppendEvent(t.Context(), "", event.SessionIdle{}); err != nil {
		t.Errorf("the breaker can no longer append: %v", err)
	}
}

// checkBreakersCatalog checks that the catalog entry is the breaker's.
func checkBreakersCatalog(t *testing.T, e *env, bc brokenCreation) {
	t.Helper()
	c, err := rig.ReadCatalog(t.Context(), e.raw, bc.id.String())
	if err != nil || c.Epoch != bc.bl.Epoch() || c.Title != "breaker" {
		t.Errorf("catalog entry after the failed creation: %+v (%v), want the breaker's", c, err)
	}
}

// A creation whose lease was broken while it ran leaves the breaker's
// fence, records and catalog entry alone, and says the lease was lost.
func testCreationBrokenKeepsRecords(t *testing.T, e *env) {
	bc := runBrokenCreation(t, e, breakerWrites{journal: true, catalog: true})
	checkBreakersJournal(t, e, bc)
	checkBreakersCatalog(t, e, bc)
}

// With no lease probe to tell, the breaker's fence in the journal is
// enough for the creator to leave the records.
func testCreationBreakerFence(t *testing.T, e *env) {
	bc := runBrokenCreation(t, e, breakerWrites{journal: true, noProbe: true})
	checkBreakersJournal(t, e, bc)
}

// With no lease probe and nothing in the journal yet, the breaker's
// catalog entry is enough.
func testCreationBreakerCatalog(t *testing.T, e *env) {
	bc := runBrokenCreation(t, e, breakerWrites{catalog: true, noProbe: true})
	checkBreakersCatalog(t, e, bc)
	if n, err := e.raw.Tip(t.Context(), bc.name); err != nil || n == 0 {
		t.Errorf("journal of the broken creation: tip %d (%v), want it left in place", n, err)
	}
}

// A break the creator cannot see in the journal or the catalog (the
// breaker wrote nothing yet) is found by a lease probe: the records are
// left to the breaker all the same.
func testCreationSilentBreak(t *testing.T, e *env) {
	bc := runBrokenCreation(t, e, breakerWrites{})
	if n, err := e.raw.Tip(t.Context(), bc.name); err != nil || n == 0 {
		t.Errorf("journal of the broken creation: tip %d (%v), want it left in place", n, err)
	}
	if _, err := rig.ReadCatalog(t.Context(), e.raw, bc.id.String()); err != nil {
		t.Errorf("catalog entry of the broken creation: %v, want it left in place", err)
	}
}
