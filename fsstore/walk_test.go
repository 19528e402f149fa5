package fsstore

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// walkFiles does not enter a directory whose name begins with a dot (the
// store's own, as the leases' bells: no name's segment begins with one),
// at the top or below, in a narrow directory or a wide one (walked on
// several goroutines).
func TestWalkSkipsDotDirectories(t *testing.T) {
	for _, wide := range []int{1, 70} {
		t.Run(fmt.Sprint(wide), func(t *testing.T) {
			dir := t.TempDir()
			var want []string
			put := func(rel string) {
				p := filepath.Join(dir, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			for i := range wide {
				rel := fmt.Sprintf("sessions%d/a.lock", i)
				put(rel)
				want = append(want, rel)
				put(fmt.Sprintf("sessions%d/.bells/a/x.lock", i))
			}
			put("c.lock")
			want = append(want, "c.lock")
			put(".bells/c/y.lock")
			got, err := walkFiles(dir, func(base string) bool { return strings.HasSuffix(base, ".lock") })
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("walked %v, want %v", got, want)
			}
		})
	}
}
