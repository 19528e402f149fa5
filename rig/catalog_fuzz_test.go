package rig_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"looprig/rig"
	"looprig/rig/storage"
)

const fuzzCatalogID = "0f8fad5b-d9cb-469f-a165-70867728950e"

// FuzzDecodeCatalog feeds arbitrary bytes to DecodeCatalog, which `ls` and
// the TUI run on every catalog entry of the store. It must never panic,
// must refuse with *storage.CorruptError only, must accept only entries of
// version 1 naming the session asked for, and what it accepts must survive
// a re-encoding.
func FuzzDecodeCatalog(f *testing.F) {
	good, _ := json.Marshal(rig.CatalogEntry{V: 1, ID: fuzzCatalogID, Title: "t", Profile: "default", Engine: "shell",
		Placement: rig.PlacementSession, State: rig.CatalogRunning, Epoch: 3, LastSeq: 17, OpenTurn: "x", TurnIndex: 2, Turns: 3,
		Created: time.Date(2026, 7, 15, 10, 0, 0, 0, time.UTC), Updated: time.Date(2026, 7, 15, 10, 0, 1, 5, time.UTC)})
	f.Add(good)
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `"x"`,
		`{"v":1,"id":"` + fuzzCatalogID + `"}`,
		`{"v":2,"id":"` + fuzzCatalogID + `"}`,
		`{"v":1,"id":"` + fuzzCatalogID + `","epoch":-1}`,
		`{"v":1,"id":"` + fuzzCatalogID + `","epoch":18446744073709551616}`,
		`{"v":1,"id":"` + fuzzCatalogID + `","updated":"10000-01-01T00:00:00Z"}`,
		`{"v":1,"id":"` + fuzzCatalogID + `","title":"\u001b]52;c;ZXZpbA==\u0007\u202e"}`,
		`{"v":1,"id":"` + fuzzCatalogID + `","state":"broken","reason":"x","v":2}`,
		`{"v":1,"id":"other"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := rig.DecodeCatalog(fuzzCatalogID, b)
		if err != nil {
			var ce *storage.CorruptError
			if !errors.As(err, &ce) || ce.Name != storage.CatalogKey(fuzzCatalogID) {
				t.Fatalf("error %T %v is not a *storage.CorruptError naming the entry", err, err)
			}
			return
		}
		if c.V != 1 || c.ID != fuzzCatalogID {
			t.Fatalf("accepted version %d for session %q", c.V, c.ID)
		}
		re, err := json.Marshal(c)
		if err != nil {
			return // a time json cannot write back (a year past 9999 is refused on decode already)
		}
		c2, err := rig.DecodeCatalog(fuzzCatalogID, re)
		if err != nil {
			t.Fatalf("re-encoding %s of an accepted entry is refused: %v", re, err)
		}
		if !c2.Created.Equal(c.Created) || !c2.Updated.Equal(c.Updated) {
			t.Fatalf("times changed in a round trip: %v %v / %v %v", c.Created, c.Updated, c2.Created, c2.Updated)
		}
		c2.Created, c2.Updated = c.Created, c.Updated
		if c2 != c {
			t.Fatalf("round trip differs:\n%+v\n%+v", c, c2)
		}
	})
}
