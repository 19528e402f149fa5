package search

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
)

// A kept listing decodes to what was encoded; every truncation of it, and
// trailing bytes, are refused, never decoded into another listing.
func TestListingEncoding(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123)
	sessions := []Session{
		{ID: uuid.New(), Epoch: 1, Unheld: true},
		{ID: uuid.New(), Epoch: 1 << 40},
		{ID: uuid.New()},
	}
	b := encodeListing("fs.1.2.3", at, sessions)
	stamp, gotAt, got, err := decodeListing(b)
	if err != nil || stamp != "fs.1.2.3" || !gotAt.Equal(at) || !slices.Equal(got, sessions) {
		t.Fatalf("decodeListing(encodeListing(...)) = %q, %v, %v, %v", stamp, gotAt, got, err)
	}
	for n := range len(b) {
		if _, _, got, err := decodeListing(b[:n]); err == nil {
			t.Fatalf("decodeListing of the first %d of %d bytes = %v, want an error", n, len(b), got)
		}
	}
	if _, _, _, err := decodeListing(append(b, 0)); err == nil {
		t.Fatal("decodeListing with a byte more = nil error")
	}
	bad := slices.Clone(b)
	bad[len(bad)-1] = 2 // neither held nor unheld
	if _, _, _, err := decodeListing(bad); err == nil {
		t.Fatal("decodeListing of a session neither held nor unheld = nil error")
	}
}
