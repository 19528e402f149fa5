package fsstore_test

import (
	"testing"
	"time"
)

// Without a lock table (Darwin) a stamp never settles: a holder's death
// would not move it, so no two stamps are equal and a listing looks again.
func TestChangeStampNeverSettles(t *testing.T) {
	s := openStore(t, t.TempDir())
	first, err := s.ChangeStamp(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	second, err := s.ChangeStamp(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if first == second {
		t.Fatalf("two stamps are both %q", first)
	}
}
